package queueunit

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// ErrHoldsQuota refuses a change of what a QueueUnit asks of its quota
// (Resized) while the unit holds quota: it was charged for its size when
// admitted, and a new size is charged only by a new admission, with a fit
// check. Whoever resized it (an extension following its job's size) tries
// again once the unit waits and holds nothing.
var ErrHoldsQuota = errors.New("the QueueUnit holds quota: its size cannot change until it is queued again")

// BeforeWrite applies to u, about to be written over was (as read), the
// rules every write of a QueueUnit keeps (pkg/patch calls it on each
// attempt). A write of the status carries the admissionsSummary made anew
// from its admissions: every writer of admissions writes through here, so
// the summary goes with them in the same write. A write of the object that
// changes the size of a unit that holds quota is refused with
// ErrHoldsQuota, and u is left as was.
func BeforeWrite(was, u *schedulingv1alpha1.QueueUnit, status bool) error {
	if !status {
		if HoldsQuota(was) && Resized(was, u) {
			*u = *was
			return fmt.Errorf("resizing %s: %w", klog.KObj(u), ErrHoldsQuota)
		}
		return nil
	}
	u.Status.AdmissionsSummary = AdmissionsSummary(u.Status.Admissions)
	return nil
}

// Resized reports whether after asks its quota for something else than
// before: its spec.resource, spec.request or spec.podSet differ, pod sets'
// names aside (renaming a pod set, as adopting Koord-Queue's unit does along
// with its admissions, asks for nothing more). A unit that holds quota
// keeps its size (see BeforeWrite and Charged).
func Resized(before, after *schedulingv1alpha1.QueueUnit) bool {
	return !equality.Semantic.DeepEqual(before.Spec.Resource, after.Spec.Resource) ||
		!equality.Semantic.DeepEqual(before.Spec.Request, after.Spec.Request) ||
		!equality.Semantic.DeepEqual(unnamed(before.Spec.PodSets), unnamed(after.Spec.PodSets))
}

// unnamed is sets without their names, for comparing what they ask for.
func unnamed(sets []schedulingv1alpha1.PodSet) []schedulingv1alpha1.PodSet {
	out := make([]schedulingv1alpha1.PodSet, len(sets))
	for i, s := range sets {
		s.Name = ""
		out[i] = s
	}
	return out
}
