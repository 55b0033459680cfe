package queueunit

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

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

// Evicted reports whether the unit carries a true Evicted condition.
func Evicted(u *schedulingv1alpha1.QueueUnit) bool {
	return meta.IsStatusConditionTrue(u.Status.Conditions, schedulingv1alpha1.QueueUnitEvicted)
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
