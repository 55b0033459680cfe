package admission

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestStrippedUnitsAreNotWrittenBack runs koord-queue with the binary's
// cache, which keeps of a unit's pod templates only their requests: units
// are admitted (one partially), each admission recording what its pod set
// holds, wait with a reason, and have spec.queue written, and the API
// server still holds every unit's templates and annotations as they were
// created. Units that finish are cached with only what koord-queue reads
// of their status, and the API server keeps all of it while koord-queue
// goes on deciding (their quota admits the unit that waited).
func TestStrippedUnitsAreNotWrittenBack(t *testing.T) {
	ctx := context.Background()
	var mgrCache client.Reader
	cacheOpts, err := app.CacheOptions("", env.Config)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := env.StartManager(ctx, func(mgr manager.Manager) error {
		mgrCache = mgr.GetCache()
		_, err := app.Setup(ctx, mgr, fastOptions())
		return err
	}, func(o *manager.Options) { o.Cache = cacheOpts })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "4").Obj())
	template := func(cpu string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"job-name": "train"}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "main", Image: "registry.example.com/trainer:v1", Command: []string{"train", "--epochs=3"},
					Env:       []corev1.EnvVar{{Name: "DATA", Value: "/data"}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
				}},
				RestartPolicy: corev1.RestartPolicyNever,
				NodeSelector:  map[string]string{"pool": "batch"},
			},
		}
	}
	unit := func(name string, priority int32, count, minCount int32) *schedulingv1alpha1.QueueUnit {
		u := wrappers.MakeQueueUnit(name, ns).Quota(ns).Priority(priority).Obj()
		u.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: fmt.Sprintf(`{"kind":"QueueUnit","metadata":{"name":%q}}`, name)}
		u.Spec.PodSets = []schedulingv1alpha1.PodSet{{Name: "main", Count: count, Template: template("1")}}
		if minCount > 0 {
			u.Spec.PodSets[0].MinCount = ptr.To(minCount)
		}
		return u
	}
	// whole asks 1 cpu; stated 1, which it states (spec.request); partial
	// 4, of which 2 fit; waiting 2 that do not fit then.
	whole, partial, waiting := unit("whole", 10, 1, 0), unit("partial", 5, 4, 2), unit("waiting", 1, 2, 0)
	stated := unit("stated", 8, 1, 0)
	stated.Spec.Request = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	created := []*schedulingv1alpha1.QueueUnit{whole, stated, partial, waiting}
	create(t, whole, stated, partial)
	got := waitPhase(t, ns, "partial", schedulingv1alpha1.Dequeued)
	if len(got.Status.Admissions) != 1 || got.Status.Admissions[0].Replicas != 2 {
		t.Fatalf("partial admissions %+v, want 2 replicas of main", got.Status.Admissions)
	}
	waitPhase(t, ns, "whole", schedulingv1alpha1.Dequeued)
	waitPhase(t, ns, "stated", schedulingv1alpha1.Dequeued)
	create(t, waiting)
	waitMessage(t, ns, "waiting", "cpu")
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		for _, name := range []string{"whole", "stated", "partial"} {
			u, err := getUnit(ctx, ns, name)
			if err != nil {
				return err
			}
			if u.Spec.Queue != ns {
				return fmt.Errorf("unit %s spec.queue %q, want %q", name, u.Spec.Queue, ns)
			}
		}
		return nil
	})
	// Each admission records what its pod set holds (the contract's
	// status.admissions[].resources), whatever the cache dropped.
	for name, cpu := range map[string]string{"whole": "1", "stated": "1", "partial": "2"} {
		u, err := getUnit(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		if len(u.Status.Admissions) != 1 || !equality.Semantic.DeepEqual(u.Status.Admissions[0].Resources, want) {
			t.Errorf("unit %s admissions %+v, want main holding %s cpu", name, u.Status.Admissions, cpu)
		}
	}

	for _, want := range created {
		u, err := getUnit(ctx, ns, want.Name)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Spec.PodSets, u.Spec.PodSets); diff != "" {
			t.Errorf("unit %s: pod sets on the API server (-created +now):\n%s", want.Name, diff)
		}
		if diff := cmp.Diff(want.Annotations, u.Annotations); diff != "" {
			t.Errorf("unit %s: annotations on the API server (-created +now):\n%s", want.Name, diff)
		}
		// What the binary's cache holds of it: the requests alone.
		cached := &schedulingv1alpha1.QueueUnit{}
		if err := mgrCache.Get(ctx, client.ObjectKeyFromObject(want), cached); err != nil {
			t.Fatal(err)
		}
		c := cached.Spec.PodSets[0].Template
		if len(c.Spec.Containers) != 1 || c.Spec.Containers[0].Image != "" ||
			c.Labels != nil || c.Spec.NodeSelector != nil || cached.Annotations[corev1.LastAppliedConfigAnnotation] != "" {
			t.Errorf("unit %s is cached with its template or last-applied annotation: %+v, annotations %v", want.Name, c, cached.Annotations)
		}
	}

	finished := map[string]*schedulingv1alpha1.QueueUnit{}
	for _, name := range []string{"whole", "stated"} {
		u, err := getUnit(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		queueunit.FollowJob(u, queueunit.JobState{Finished: true, Succeeded: true}, metav1.Now())
		if err := env.Client.Status().Update(ctx, u); err != nil {
			t.Fatal(err)
		}
		finished[name] = u
	}
	waitPhase(t, ns, "waiting", schedulingv1alpha1.Dequeued)
	for name, written := range finished {
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			cached := &schedulingv1alpha1.QueueUnit{}
			if err := mgrCache.Get(ctx, client.ObjectKeyFromObject(written), cached); err != nil {
				return err
			}
			if diff := cmp.Diff(admission.FinishedStatus(&written.Status), cached.Status); diff != "" {
				return fmt.Errorf("unit %s: cached status (-want +got):\n%s", name, diff)
			}
			return nil
		})
		u, err := getUnit(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(written.Status, u.Status); diff != "" {
			t.Errorf("unit %s: finished status on the API server (-written +now):\n%s", name, diff)
		}
	}
}
