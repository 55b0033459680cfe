package queueunit

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// Every phase is exactly one of Waiting, Admitted and Finished (the empty
// phase reads as Enqueued).

// Waiting reports whether a unit in phase p holds its job back: it waits for
// quota (Enqueued), for its admission checks (Reserved) or for its backoff
// (TimeoutBackoff).
func Waiting(p schedulingv1alpha1.QueueUnitPhase) bool {
	switch p {
	case "", schedulingv1alpha1.Enqueued, schedulingv1alpha1.Reserved, schedulingv1alpha1.TimeoutBackoff:
		return true
	}
	return false
}

// Admitted reports whether a unit in phase p lets its job run: released
// (Dequeued), running, or in one of the phases Koord-Queue's gang-scheduling
// integration writes after release (SchedReady, SchedSucceed, SchedFailed;
// the unit keeps its quota there until the queue evicts it or the job ends).
func Admitted(p schedulingv1alpha1.QueueUnitPhase) bool {
	switch p {
	case schedulingv1alpha1.Dequeued, schedulingv1alpha1.Running,
		schedulingv1alpha1.SchedReady, schedulingv1alpha1.SchedSucceed, schedulingv1alpha1.SchedFailed:
		return true
	}
	return false
}

// Finished reports whether a unit in phase p is done: its job ended and its
// quota is given back.
func Finished(p schedulingv1alpha1.QueueUnitPhase) bool {
	return p == schedulingv1alpha1.Succeed || p == schedulingv1alpha1.Failed
}

// HoldsQuota reports whether the API object says the unit holds quota: it
// is admitted, or reserved for its admission checks, or it was evicted and
// its job's pods are not gone yet (its admissions still listed).
func HoldsQuota(u *schedulingv1alpha1.QueueUnit) bool {
	switch p := u.EffectivePhase(); {
	case Finished(p):
		return false
	case Admitted(p) || p == schedulingv1alpha1.Reserved:
		return true
	}
	return len(u.Status.Admissions) > 0
}

// CoversMadeJob reports whether u's job covers the jobs it made (a
// RayJob's RayCluster), so that they run within u's admission: u is
// admitted and not being deleted. A unit that finished covers nothing, the
// jobs its job made before it ended included: they would otherwise run on
// outside any admission for as long as nobody deletes them (an Argo
// Workflow leaves the jobs its resource templates made; KubeRay keeps a
// RayJob's cluster ttlSecondsAfterFinished).
func CoversMadeJob(u *schedulingv1alpha1.QueueUnit) bool {
	return u.DeletionTimestamp == nil && Admitted(u.EffectivePhase())
}

// Evicted reports whether the unit carries a true Evicted condition.
func Evicted(u *schedulingv1alpha1.QueueUnit) bool {
	return meta.IsStatusConditionTrue(u.Status.Conditions, schedulingv1alpha1.QueueUnitEvicted)
}

// CheckAmounts reports the first amount below zero anywhere a unit asks for
// something: spec.resource, spec.request, or a pod set's template (where a
// negative amount may hide in a total that is not). The error names the
// field and wraps resources.ErrNegative. A unit that fails it is never
// queued: only a unit written by hand can, since the extensions refuse
// such a job and the CRD such a unit.
func CheckAmounts(u *schedulingv1alpha1.QueueUnit) error {
	if err := resources.CheckList("spec.resource", u.Spec.Resource); err != nil {
		return err
	}
	if err := resources.CheckList("spec.request", u.Spec.Request); err != nil {
		return err
	}
	for i := range u.Spec.PodSets {
		ps := &u.Spec.PodSets[i]
		if err := resources.CheckPodSpec(&ps.Template.Spec); err != nil {
			return fmt.Errorf("spec.podSet[%s].template.spec: %w", ps.Name, err)
		}
	}
	return nil
}

// Request is what the unit asks of its quota: spec.resource, else
// spec.request, else the sum of its pod sets (count times each template's
// effective request).
func Request(u *schedulingv1alpha1.QueueUnit) corev1.ResourceList {
	switch {
	case len(u.Spec.Resource) > 0:
		return u.Spec.Resource
	case len(u.Spec.Request) > 0:
		return u.Spec.Request
	}
	return resources.PodSetsRequests(u.Spec.PodSets)
}

// ExecutionDeadline is when a unit with spec.maximumExecutionTimeSeconds
// has been admitted for that long: the time its current admission let its
// job run (the Admitted condition turning True; lastAllocateTime for a unit
// without one) plus the limit. ok is false when there is no deadline: no
// limit, inactive, or not admitted (waiting, reserved for admission checks,
// evicted or finished). Each admission counts afresh: the time a unit ran
// before an eviction is not carried over.
func ExecutionDeadline(u *schedulingv1alpha1.QueueUnit) (deadline time.Time, ok bool) {
	limit := u.Spec.MaximumExecutionTimeSeconds
	if limit == nil || !u.IsActive() || !Admitted(u.EffectivePhase()) || Evicted(u) {
		return time.Time{}, false
	}
	var since time.Time
	if c := meta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitAdmitted); c != nil && c.Status == metav1.ConditionTrue {
		since = c.LastTransitionTime.Time
	} else if u.Status.LastAllocateTime != nil {
		since = u.Status.LastAllocateTime.Time
	} else {
		return time.Time{}, false // admitted by hand, with no time: nothing to count from
	}
	return since.Add(time.Duration(*limit) * time.Second), true
}

// MaximumExecutionTimeMessage says why a unit past its ExecutionDeadline is
// deactivated.
func MaximumExecutionTimeMessage(u *schedulingv1alpha1.QueueUnit) string {
	return fmt.Sprintf("deactivated: admitted for longer than its maximum execution time of %ds (spec.maximumExecutionTimeSeconds); set spec.active to true to queue it again",
		ptr.Deref(u.Spec.MaximumExecutionTimeSeconds, 0))
}
