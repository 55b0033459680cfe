// Package admission tests the koord-queue controllers end to end against a
// real API server: quotas become queues, units are admitted, wait with a
// reason, are preempted and released.
package admission

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/queue"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(e *testenv.Env) {
		env = e
		ctx := context.Background()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedulingv1alpha1.QueueNamespace}}
		if err := env.Client.Create(ctx, ns); err != nil {
			panic(err)
		}
		// The cluster's capacity is what the root quota has to give.
		node := wrappers.Node("node-1", "1000", "4Ti")
		status := node.Status
		if err := env.Client.Create(ctx, node); err != nil {
			panic(err)
		}
		node.Status = status
		if err := env.Client.Status().Update(ctx, node); err != nil {
			panic(err)
		}
	}))
}

// startKoordQueue runs the koord-queue controllers until the test ends.
func startKoordQueue(t *testing.T, opts app.Options) *admission.Cache {
	t.Helper()
	var cache *admission.Cache
	stop, err := env.StartManager(context.Background(), func(mgr manager.Manager) error {
		var err error
		cache, err = app.Setup(context.Background(), mgr, opts)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return cache
}

// fastOptions refresh queue status and retry admission checks quickly.
func fastOptions() app.Options {
	return app.Options{
		Admission: admission.Options{
			Writer: admission.WriterOptions{MessageQPS: 100, RequeueBaseDelay: 2e9, RequeueMaxDelay: 4e9},
		},
		QueueStatus: queue.StatusOptions{RefreshInterval: 1e9},
	}
}

var invalidNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

var namespaces atomic.Int64

// namespace creates a namespace for one test, deleted when it ends.
func namespace(t *testing.T) string {
	t.Helper()
	// A readable prefix of the test's name, and a hash of all of it and of
	// a sequence number, so neither subtests whose names start alike nor
	// runs of -count collide.
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", t.Name(), namespaces.Add(1))
	name := strings.Trim(invalidNameChars.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	name = strings.Trim(name[:min(len(name), 40)], "-") + fmt.Sprintf("-%08x", h.Sum32())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return name
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
}

func getUnit(ctx context.Context, ns, name string) (*schedulingv1alpha1.QueueUnit, error) {
	u := &schedulingv1alpha1.QueueUnit{}
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	return u, err
}

// waitPhase waits for a unit to reach a phase.
func waitPhase(t *testing.T, ns, name string, phase schedulingv1alpha1.QueueUnitPhase) *schedulingv1alpha1.QueueUnit {
	t.Helper()
	return waitUnit(t, ns, name, func(u *schedulingv1alpha1.QueueUnit) error {
		if u.EffectivePhase() != phase {
			return fmt.Errorf("phase %s, want %s (message %q)", u.EffectivePhase(), phase, u.Status.Message)
		}
		return nil
	})
}

// waitUnit waits until a unit satisfies ready, which says what is missing.
func waitUnit(t *testing.T, ns, name string, ready func(*schedulingv1alpha1.QueueUnit) error) *schedulingv1alpha1.QueueUnit {
	t.Helper()
	var got *schedulingv1alpha1.QueueUnit
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		u, err := getUnit(ctx, ns, name)
		if err != nil {
			return err
		}
		if err := ready(u); err != nil {
			return fmt.Errorf("unit %s/%s: %w", ns, name, err)
		}
		got = u
		return nil
	})
	return got
}

// waitMessage waits for a waiting unit's message to contain every part.
func waitMessage(t *testing.T, ns, name string, parts ...string) *schedulingv1alpha1.QueueUnit {
	t.Helper()
	var got *schedulingv1alpha1.QueueUnit
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		u, err := getUnit(ctx, ns, name)
		if err != nil {
			return err
		}
		for _, p := range parts {
			if !strings.Contains(u.Status.Message, p) {
				return fmt.Errorf("unit %s/%s (phase %s) message %q, want it to contain %q", ns, name, u.EffectivePhase(), u.Status.Message, p)
			}
		}
		got = u
		return nil
	})
	return got
}

// stays checks that a unit is still waiting once everything queued before
// it was decided: a unit admitted by mistake would have been by then.
func staysEnqueued(t *testing.T, ns, name string) {
	t.Helper()
	u, err := getUnit(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if holds := u.EffectivePhase() != schedulingv1alpha1.Enqueued || len(u.Status.Admissions) > 0; holds {
		t.Fatalf("unit %s/%s phase %s with %d admissions, want it still Enqueued", ns, name, u.EffectivePhase(), len(u.Status.Admissions))
	}
}

// finish plays the job's extension: the job succeeded, its quota is released.
func finish(t *testing.T, ns, name string) {
	t.Helper()
	setStatus(t, ns, name, func(u *schedulingv1alpha1.QueueUnit) {
		u.Status.Phase = schedulingv1alpha1.Succeed
		u.Status.Admissions = nil
	})
}

// podsGone plays the job's extension after an eviction: the pods are gone.
func podsGone(t *testing.T, ns, name string) {
	t.Helper()
	setStatus(t, ns, name, func(u *schedulingv1alpha1.QueueUnit) { u.Status.Admissions = nil })
}

func setStatus(t *testing.T, ns, name string, mutate func(*schedulingv1alpha1.QueueUnit)) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		u, err := getUnit(ctx, ns, name)
		if err != nil {
			return err
		}
		mutate(u)
		return env.Client.Status().Update(ctx, u)
	})
}

func hasEvent(ctx context.Context, ns, object, reason string) (bool, error) {
	events := &corev1.EventList{}
	if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
		return false, err
	}
	return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
		return e.InvolvedObject.Name == object && e.Reason == reason
	}), nil
}

func countEvents(ctx context.Context, ns, object, reason string) (int, error) {
	events := &corev1.EventList{}
	if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range events.Items {
		if e.InvolvedObject.Name == object && e.Reason == reason {
			n += int(max(e.Count, 1))
		}
	}
	return n, nil
}

func conditionReason(u *schedulingv1alpha1.QueueUnit, condType string) string {
	if c := meta.FindStatusCondition(u.Status.Conditions, condType); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return ""
}
