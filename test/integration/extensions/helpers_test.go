package extensions

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// newNamespace creates a namespace for one test and deletes it after.
func newNamespace(t *testing.T) string {
	t.Helper()
	return createNamespace(t, nil)
}

// newNamespaceWithoutWebhook creates a namespace the webhook leaves alone.
func newNamespaceWithoutWebhook(t *testing.T) string {
	t.Helper()
	return createNamespace(t, map[string]string{webhookOffLabel: "true"})
}

// newNamespaceWithPodGate creates a namespace where the pod webhook holds
// the pods of queued jobs their admission does not cover at koord-queue's
// gate.
func newNamespaceWithPodGate(t *testing.T) string {
	t.Helper()
	return createNamespace(t, map[string]string{podGateLabel: "on"})
}

func createNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ext-", Labels: labels}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return ns.Name
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// unitWhere waits for the unit called key to satisfy cond and returns it.
func unitWhere(t *testing.T, key client.ObjectKey, what string, cond func(*schedulingv1alpha1.QueueUnit) bool) *schedulingv1alpha1.QueueUnit {
	t.Helper()
	u := &schedulingv1alpha1.QueueUnit{}
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		if err := k8s.Get(ctx, key, u); err != nil {
			return fmt.Errorf("waiting for QueueUnit %s: %s: %w", key, what, err)
		}
		if !cond(u) {
			return fmt.Errorf("waiting for QueueUnit %s: %s; last seen: %s", key, what, describeUnit(u))
		}
		return nil
	})
	return u
}

func describeUnit(u *schedulingv1alpha1.QueueUnit) string {
	return fmt.Sprintf("phase %q, admissions %+v, podState %+v, message %q, active %v",
		u.Status.Phase, u.Status.Admissions, u.Status.PodState, u.Status.Message, u.IsActive())
}

// unitGone waits for the unit called key to be deleted.
func unitGone(t *testing.T, key client.ObjectKey) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		err := k8s.Get(ctx, key, &schedulingv1alpha1.QueueUnit{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("waiting for QueueUnit %s to be deleted: %w", key, err)
		default:
			return fmt.Errorf("waiting for QueueUnit %s to be deleted; last seen: still there", key)
		}
	})
}

// noUnit checks that the unit called key does not exist.
func noUnit(t *testing.T, key client.ObjectKey) {
	t.Helper()
	err := k8s.Get(context.Background(), key, &schedulingv1alpha1.QueueUnit{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("QueueUnit %s: got error %v, want it not to exist", key, err)
	}
}

// jobWhere reads the job called key as integ sees it until cond holds.
func jobWhere(t *testing.T, integ framework.Integration, key client.ObjectKey, what string, cond func(framework.GenericJob) bool) framework.GenericJob {
	t.Helper()
	var job framework.GenericJob
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		job = integ.NewJob()
		if err := k8s.Get(ctx, key, job.Object()); err != nil {
			return fmt.Errorf("waiting for %s %s: %s: %w", integ.GVK.Kind, key, what, err)
		}
		if !cond(job) {
			return fmt.Errorf("waiting for %s %s: %s; last seen: suspended %v", integ.GVK.Kind, key, what, job.IsSuspended())
		}
		return nil
	})
	return job
}

// setUnitStatus plays the queue controller: it changes a unit's status.
func setUnitStatus(t *testing.T, key client.ObjectKey, change func(*schedulingv1alpha1.QueueUnit)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := &schedulingv1alpha1.QueueUnit{}
		if err := k8s.Get(context.Background(), key, u); err != nil {
			return err
		}
		change(u)
		return k8s.Status().Update(context.Background(), u)
	})
	if err != nil {
		t.Fatalf("writing the status of QueueUnit %s: %v", key, err)
	}
}

// admit admits a unit as the queue controller does: Dequeued, each pod set
// holding its count, with the admission checks given.
func admit(t *testing.T, key client.ObjectKey, checks ...schedulingv1alpha1.AdmissionCheckState) {
	t.Helper()
	setUnitStatus(t, key, func(u *schedulingv1alpha1.QueueUnit) {
		now := metav1.Now()
		u.Status.Phase = schedulingv1alpha1.Dequeued
		u.Status.LastAllocateTime = &now
		u.Status.Admissions = nil
		for _, ps := range u.Spec.PodSets {
			u.Status.Admissions = append(u.Status.Admissions, schedulingv1alpha1.Admission{Name: ps.Name, Replicas: int64(ps.Count)})
		}
		u.Status.AdmissionChecks = checks
		apimeta.SetStatusCondition(&u.Status.Conditions, metav1.Condition{Type: schedulingv1alpha1.QueueUnitAdmitted, Status: metav1.ConditionTrue, Reason: "Admitted"})
		apimeta.SetStatusCondition(&u.Status.Conditions, metav1.Condition{Type: schedulingv1alpha1.QueueUnitEvicted, Status: metav1.ConditionFalse, Reason: "Readmitted"})
	})
}

// evict evicts a unit as the queue controller does: back to Enqueued with an
// Evicted condition, its admissions kept until the job's pods are gone.
func evict(t *testing.T, key client.ObjectKey) {
	t.Helper()
	setUnitStatus(t, key, func(u *schedulingv1alpha1.QueueUnit) {
		u.Status.Phase = schedulingv1alpha1.Enqueued
		u.Status.AdmissionChecks = nil
		apimeta.SetStatusCondition(&u.Status.Conditions, metav1.Condition{Type: schedulingv1alpha1.QueueUnitEvicted, Status: metav1.ConditionTrue,
			Reason: schedulingv1alpha1.EvictedByPreemption, Message: "preempted by a job of higher priority"})
		apimeta.SetStatusCondition(&u.Status.Conditions, metav1.Condition{Type: schedulingv1alpha1.QueueUnitAdmitted, Status: metav1.ConditionFalse, Reason: "Preempted"})
	})
}

// updateJob plays the user: it reads the job, changes it and writes it back.
func updateJob(t *testing.T, obj client.Object, change func()) {
	t.Helper()
	rewrite(t, obj, change, func(ctx context.Context) error { return k8s.Update(ctx, obj) })
}

// updateJobStatus plays the framework's controller: it reads the job,
// changes its status and writes it back; for a kind without a status
// subresource (Argo's Workflow) it writes the whole object.
func updateJobStatus(t *testing.T, obj client.Object, change func()) {
	t.Helper()
	rewrite(t, obj, change, func(ctx context.Context) error {
		err := k8s.Status().Update(ctx, obj)
		if apierrors.IsNotFound(err) {
			return k8s.Update(ctx, obj)
		}
		return err
	})
}

// rewrite reads obj, changes it and writes it with write, again on a
// conflict.
func rewrite(t *testing.T, obj client.Object, change func(), write func(context.Context) error) {
	t.Helper()
	ctx, key := context.Background(), client.ObjectKeyFromObject(obj)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, key, obj); err != nil {
			return err
		}
		change()
		return write(ctx)
	})
	if err != nil {
		t.Fatalf("writing %T %s: %v", obj, key, err)
	}
}

// eventRecorded waits for an event of reason on the object called name
// whose message contains text.
func eventRecorded(t *testing.T, namespace, name, eventType, reason, text string) {
	t.Helper()
	what := fmt.Sprintf("a %s event %s on %s/%s", eventType, reason, namespace, name)
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		var events corev1.EventList
		if err := k8s.List(ctx, &events, client.InNamespace(namespace)); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		var seen []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name != name {
				continue
			}
			seen = append(seen, e.Type+"/"+e.Reason+": "+e.Message)
			if e.Type == eventType && e.Reason == reason && strings.Contains(e.Message, text) {
				return nil
			}
		}
		return fmt.Errorf("waiting for %s; last seen: %s", what, strings.Join(seen, "; "))
	})
}
