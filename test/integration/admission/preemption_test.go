package admission

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// siblings creates quotas a and b, each with min childMin cpu, under a
// parent whose min and max are parentCPU, and each free to use all of it.
func siblings(t *testing.T, ns, parentCPU, childMin string) (parent, a, b string) {
	t.Helper()
	parent, a, b = ns+"-p", ns+"-a", ns+"-b"
	create(t,
		wrappers.MakeElasticQuota(parent, ns).Min(corev1.ResourceCPU, parentCPU).Max(corev1.ResourceCPU, parentCPU).IsParent().Obj(),
		wrappers.MakeElasticQuota(a, ns).Min(corev1.ResourceCPU, childMin).Max(corev1.ResourceCPU, parentCPU).Parent(parent).Obj(),
		wrappers.MakeElasticQuota(b, ns).Min(corev1.ResourceCPU, childMin).Max(corev1.ResourceCPU, parentCPU).Parent(parent).Obj(),
	)
	return parent, a, b
}

// TestReclaimAcrossSiblings: b borrowed a's idle min; when a needs it back,
// b's most recent unit is evicted, and a's unit is admitted once the
// victim's pods are gone (not before: nothing is counted twice).
func TestReclaimAcrossSiblings(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	parent, a, b := siblings(t, ns, "8", "4")
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

// TestReclaimAUnitLargerThanWhatItsQuotaBorrows is issue 12's example: b,
// with min 5, runs one 8-CPU unit, so it borrows 3 of a's min. When a needs
// 4 of its min back, that unit is reclaimed (Kueue's rule: b borrows before
// the eviction), though b then drops below its min; the unit then waits,
// not owed to b (8 is above b's min), so nothing loops.
func TestReclaimAUnitLargerThanWhatItsQuotaBorrows(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	_, a, b := siblings(t, ns, "10", "5")
	create(t, wrappers.MakeQueueUnit("big", ns).Quota(b).Request(corev1.ResourceCPU, "8").Consumer().Obj())
	waitPhase(t, ns, "big", schedulingv1alpha1.Dequeued)

	create(t, wrappers.MakeQueueUnit("owed", ns).Quota(a).Request(corev1.ResourceCPU, "4").Consumer().Obj())
	victim := waitPhase(t, ns, "big", schedulingv1alpha1.Enqueued)
	if got := conditionReason(victim, schedulingv1alpha1.QueueUnitEvicted); got != "True/Preempted" {
		t.Errorf("victim's Evicted condition %q, want True/Preempted", got)
	}
	podsGone(t, ns, "big")
	waitPhase(t, ns, "owed", schedulingv1alpha1.Dequeued)
	waitMessage(t, ns, "big", "cpu")
	staysEnqueued(t, ns, "big")
	if u, _ := getUnit(context.Background(), ns, "owed"); u.EffectivePhase() != schedulingv1alpha1.Dequeued {
		t.Errorf("the reclaiming unit's phase is %s: it must keep what was reclaimed for it", u.EffectivePhase())
	}
}

// TestWaitForPodsRunningDisplacement: on a queue with wait-for-pods-running
// and enable-queueunit-preemption, Koord-Queue's rule: a unit of higher
// priority displaces a unit admitted but not yet running, which shuts the
// gate; one of equal priority waits for the gate.
func TestWaitForPodsRunningDisplacement(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "4").
		Annotation(schedulingv1alpha1.AnnotationWaitForPodsRunning, "true").
		Annotation(schedulingv1alpha1.AnnotationEnableQueueUnitPreemption, "true").Obj())
	create(t, wrappers.MakeQueueUnit("low", ns).Quota(ns).Priority(1).Request(corev1.ResourceCPU, "2").Consumer().Obj())
	waitPhase(t, ns, "low", schedulingv1alpha1.Dequeued)

	create(t, wrappers.MakeQueueUnit("peer", ns).Quota(ns).Priority(1).Request(corev1.ResourceCPU, "1").Consumer().Obj())
	waitMessage(t, ns, "peer", "waits for "+ns+"/low to be running", "wait-for-pods-running")

	create(t, wrappers.MakeQueueUnit("high", ns).Quota(ns).Priority(10).Request(corev1.ResourceCPU, "2").Consumer().Obj())
	victim := waitPhase(t, ns, "low", schedulingv1alpha1.Enqueued)
	if got := conditionReason(victim, schedulingv1alpha1.QueueUnitEvicted); got != "True/Preempted" {
		t.Errorf("victim's Evicted condition %q, want True/Preempted", got)
	}
	waitMessage(t, ns, "high", "preempting 1 unit(s) not yet running")
	podsGone(t, ns, "low")
	waitPhase(t, ns, "high", schedulingv1alpha1.Dequeued)
	// high does not run yet: the gate is shut again, for the queue's head
	// (low, back in the queue, before peer) and everyone behind it.
	waitMessage(t, ns, "low", "waits for "+ns+"/high to be running")
	staysEnqueued(t, ns, "peer")
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
		// Running as the extensions report it: every pod on a node.
		setStatus(t, ns, "high", func(u *schedulingv1alpha1.QueueUnit) {
			u.Status.Phase = schedulingv1alpha1.Running
			for i := range u.Status.Admissions {
				u.Status.Admissions[i].Running = u.Status.Admissions[i].Replicas
			}
		})
		create(t, wrappers.MakeQueueUnit("higher", ns).Quota(ns).Priority(100).Request(corev1.ResourceCPU, "4").Consumer().Obj())
		waitMessage(t, ns, "higher", "cpu")
		if u, _ := getUnit(context.Background(), ns, "high"); u.EffectivePhase() != schedulingv1alpha1.Running {
			t.Errorf("running unit phase %s, want it left Running", u.EffectivePhase())
		}
	})
}

// TestPreemptionDelay: koord-queue/preemption-delay on the ElasticQuota
// reaches the decisions through its Queue: the high unit says it waits that
// long, and when the low unit finishes meanwhile it is admitted on its
// quota, and nobody was evicted.
func TestPreemptionDelay(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "4").
		Annotation(schedulingv1alpha1.AnnotationEnableQueueUnitPreemption, "true").
		Annotation(policy.AnnotationPreemptionDelay, "1h").Obj())
	create(t, wrappers.MakeQueueUnit("low", ns).Quota(ns).Priority(1).Request(corev1.ResourceCPU, "4").Consumer().Obj())
	waitPhase(t, ns, "low", schedulingv1alpha1.Dequeued)
	create(t, wrappers.MakeQueueUnit("high", ns).Quota(ns).Priority(10).Request(corev1.ResourceCPU, "4").Consumer().Obj())
	waitMessage(t, ns, "high", "waits up to 1h0m0s (koord-queue/preemption-delay) for quota to free before it preempts lower-priority units of quota "+ns)
	finish(t, ns, "low")
	waitPhase(t, ns, "high", schedulingv1alpha1.Dequeued)
	if u, _ := getUnit(context.Background(), ns, "low"); conditionReason(u, schedulingv1alpha1.QueueUnitEvicted) != "" {
		t.Errorf("low's Evicted condition %q: it finished, nobody evicted it", conditionReason(u, schedulingv1alpha1.QueueUnitEvicted))
	}
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
