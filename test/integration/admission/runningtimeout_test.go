package admission

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestRunningTimeout runs koord-queue and the batch Job extension with a
// running timeout, in a quota with room for one Job. No pod of any Job
// ever gets a node (no Job controller runs): the first Job, released, is
// suspended once the timeout passes, its unit backs off (TimeoutBackoff,
// Evicted BackoffTimeout) and gives its quota back, so the Job waiting
// behind it is admitted meanwhile; after the backoff the first is queued
// again and admitted anew.
func TestRunningTimeout(t *testing.T) {
	const timeout, backoff = 3 * time.Second, 4 * time.Second
	ctx := context.Background()
	startKoordQueue(t, fastOptions())
	stop, err := env.StartManager(ctx, func(mgr manager.Manager) error {
		if err := framework.SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		recorder := mgr.GetEventRecorderFor("koord-queue-controllers")
		return framework.NewJobReconciler(mgr.GetClient(), mgr.GetAPIReader(), recorder, job.Integration(),
			framework.WithRunningTimeout(timeout, backoff)).SetupWithManager(mgr)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "1").Obj())
	first := extensionstest.MakeJob("first", ns).Quota(ns).Request("cpu", "1").Obj()
	create(t, first)
	waitUnit(t, ns, "first", func(u *schedulingv1alpha1.QueueUnit) error {
		if u.Status.Attempts != 1 || !queueunit.HoldsQuota(u) {
			return fmt.Errorf("waiting for its admission: phase %s, attempts %d", u.EffectivePhase(), u.Status.Attempts)
		}
		return nil
	})
	jobIs(t, first, "released", func(j *batchv1.Job) bool { return !ptr.Deref(j.Spec.Suspend, true) })
	second := extensionstest.MakeJob("second", ns).Quota(ns).Request("cpu", "1").Obj()
	create(t, second)

	backingOff := waitUnit(t, ns, "first", func(u *schedulingv1alpha1.QueueUnit) error {
		if u.EffectivePhase() != schedulingv1alpha1.TimeoutBackoff || conditionReason(u, schedulingv1alpha1.QueueUnitEvicted) != "True/"+schedulingv1alpha1.EvictedByBackoffTimeout || queueunit.HoldsQuota(u) {
			return fmt.Errorf("waiting for it to back off, its quota given back: phase %s, evicted %q, admissions %+v (message %q)",
				u.EffectivePhase(), conditionReason(u, schedulingv1alpha1.QueueUnitEvicted), u.Status.Admissions, u.Status.Message)
		}
		return nil
	})
	t.Logf("backing off: %s", backingOff.Status.Message)
	jobIs(t, first, "suspended again", func(j *batchv1.Job) bool { return ptr.Deref(j.Spec.Suspend, false) })
	waitUnit(t, ns, "second", func(u *schedulingv1alpha1.QueueUnit) error {
		if u.Status.Attempts < 1 {
			return fmt.Errorf("waiting for it to be admitted while the first backs off: phase %s (message %q)", u.EffectivePhase(), u.Status.Message)
		}
		return nil
	})
	if u, err := getUnit(ctx, ns, "first"); err != nil {
		t.Fatal(err)
	} else if u.Status.Attempts != 1 {
		t.Errorf("the first unit was admitted again (attempts %d) while the second held the quota it backed off from", u.Status.Attempts)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		if ok, err := hasEvent(ctx, ns, "first", schedulingv1alpha1.EvictedByBackoffTimeout); err != nil || !ok {
			return fmt.Errorf("waiting for the unit's %s event (err %v)", schedulingv1alpha1.EvictedByBackoffTimeout, err)
		}
		return nil
	})

	// The second Job's pods get no node either: it backs off in turn, and
	// the first, its backoff over, is queued again and admitted.
	waitUnit(t, ns, "first", func(u *schedulingv1alpha1.QueueUnit) error {
		if u.Status.Attempts < 2 {
			return fmt.Errorf("waiting for it to be queued again and admitted: phase %s, attempts %d (message %q)", u.EffectivePhase(), u.Status.Attempts, u.Status.Message)
		}
		return nil
	})
}

// jobIs waits until the Job satisfies ok.
func jobIs(t *testing.T, j *batchv1.Job, what string, ok func(*batchv1.Job) bool) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		var got batchv1.Job
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(j), &got); err != nil {
			return err
		}
		if !ok(&got) {
			return fmt.Errorf("waiting for Job %s to be %s: suspend %v", j.Name, what, ptr.Deref(got.Spec.Suspend, false))
		}
		return nil
	})
}
