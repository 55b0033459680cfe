package admission

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/test/testenv"
	"github.com/koord-queue/koord-queue/test/wrappers"
)

// TestReclaimAcrossSiblings: b borrowed a's idle min; when a needs it back,
// b's most recent unit is evicted, and a's unit is admitted once the
// victim's pods are gone (not before: nothing is counted twice).
func TestReclaimAcrossSiblings(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	parent, a, b := ns+"-p", ns+"-a", ns+"-b"
	create(t,
		wrappers.MakeElasticQuota(parent, ns).Min(corev1.ResourceCPU, "8").Max(corev1.ResourceCPU, "8").IsParent().Obj(),
		wrappers.MakeElasticQuota(a, ns).Min(corev1.ResourceCPU, "4").Max(corev1.ResourceCPU, "8").Parent(parent).Obj(),
		wrappers.MakeElasticQuota(b, ns).Min(corev1.ResourceCPU, "4").Max(corev1.ResourceCPU, "8").Parent(parent).Obj(),
	)
	create(t, wrappers.MakeQueueUnit("b1", ns).Quota(b).Request(corev1.ResourceCPU, "4").Consumer().Obj())
	waitPhase(t, ns, "b1", schedulingv1alpha1.Dequeued)
	create(t, wrappers.MakeQueueUnit("b2", ns).Quota(b).Request(corev1.ResourceCPU, "4").Consumer().Obj())
	waitPhase(t, ns, "b2", schedulingv1alpha1.Dequeued)

	create(t, wrappers.MakeQueueUnit("a1", ns).Quota(a).Request(corev1.ResourceCPU, "4").Consumer().Obj())
	victim := waitPhase(t, ns, "b2", schedulingv1alpha1.Enqueued)
	if got := conditionReason(victim, schedulingv1alpha1.QueueUnitEvicted); got != "True/Preempted" {
		t.Errorf("victim's Evicted condition %q, want True/Preempted", got)
	}
	if len(victim.Status.Admissions) == 0 {
		t.Errorf("victim's admissions cleared by the queue controller; they stay until its pods are gone")
	}
	waitMessage(t, ns, "a1", "preempting")
	staysEnqueued(t, ns, "a1")
	if u, _ := getUnit(context.Background(), ns, "b1"); u.EffectivePhase() != schedulingv1alpha1.Dequeued {
		t.Errorf("b1 phase %s: only as many units as needed are evicted", u.EffectivePhase())
	}

	podsGone(t, ns, "b2")
	waitPhase(t, ns, "a1", schedulingv1alpha1.Dequeued)
	waitMessage(t, ns, "b2", parent, "cpu 8 used of max 8")
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		if ok, err := hasEvent(ctx, ns, "b2", "Preempted"); err != nil || !ok {
			return fmt.Errorf("no Preempted event on the victim (err %v)", err)
		}
		return nil
	})
}

// TestQueuePreemption: with enable-queueunit-preemption, a higher-priority
// unit evicts an admitted, not yet running, lower-priority unit of its quota.
func TestQueuePreemption(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "4").
		Annotation(schedulingv1alpha1.AnnotationEnableQueueUnitPreemption, "true").Obj())
	create(t, wrappers.MakeQueueUnit("low", ns).Quota(ns).Priority(1).Request(corev1.ResourceCPU, "4").Consumer().Obj())
	waitPhase(t, ns, "low", schedulingv1alpha1.Dequeued)
	create(t, wrappers.MakeQueueUnit("high", ns).Quota(ns).Priority(10).Request(corev1.ResourceCPU, "4").Consumer().Obj())
	victim := waitPhase(t, ns, "low", schedulingv1alpha1.Enqueued)
	if got := conditionReason(victim, schedulingv1alpha1.QueueUnitEvicted); got != "True/Preempted" {
		t.Errorf("Evicted condition %q, want True/Preempted", got)
	}
	podsGone(t, ns, "low")
	waitPhase(t, ns, "high", schedulingv1alpha1.Dequeued)
	staysEnqueued(t, ns, "low")

	t.Run("running units are not preempted by default", func(t *testing.T) {
		setStatus(t, ns, "high", func(u *schedulingv1alpha1.QueueUnit) { u.Status.Phase = schedulingv1alpha1.Running })
		create(t, wrappers.MakeQueueUnit("higher", ns).Quota(ns).Priority(100).Request(corev1.ResourceCPU, "4").Consumer().Obj())
		waitMessage(t, ns, "higher", "cpu")
		if u, _ := getUnit(context.Background(), ns, "high"); u.EffectivePhase() != schedulingv1alpha1.Running {
			t.Errorf("running unit phase %s, want it left Running", u.EffectivePhase())
		}
	})
}

// TestDeactivation: spec.active=false evicts an admitted unit.
func TestDeactivation(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "4").Obj())
	unit := wrappers.MakeQueueUnit("u", ns).Quota(ns).Request(corev1.ResourceCPU, "4").Obj()
	create(t, unit)
	waitPhase(t, ns, "u", schedulingv1alpha1.Dequeued)
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		u, err := getUnit(ctx, ns, "u")
		if err != nil {
			return err
		}
		f := false
		u.Spec.Active = &f
		return env.Client.Update(ctx, u)
	})
	u := waitPhase(t, ns, "u", schedulingv1alpha1.Enqueued)
	if got := conditionReason(u, schedulingv1alpha1.QueueUnitEvicted); got != "True/Deactivated" {
		t.Errorf("Evicted condition %q, want True/Deactivated", got)
	}
	waitMessage(t, ns, "u", "inactive")
}
