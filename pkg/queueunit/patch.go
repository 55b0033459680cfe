package queueunit

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// Part is the part of an object a patch writes.
type Part int

const (
	// Main is the object itself (metadata and spec).
	Main Part = iota
	// Status is the status subresource.
	Status
)

// patchAttempts bounds the writes of one Patch: conflicts and ambiguous
// failures are retried on fresh data this many times in all.
const patchAttempts = 5

// ErrOutcomeUnknown marks a failed write that may have landed: it timed out
// or the server failed, and the object could not be read back to tell.
// Whoever counts on the write (an admission holding quota) keeps assuming
// it may have landed, and tries again.
var ErrOutcomeUnknown = errors.New("the write's outcome is unknown")

// ErrHoldsQuota refuses a change of what a QueueUnit asks of its quota
// (Resized) while the unit holds quota: it was charged for its size when
// admitted, and a new size is charged only by a new admission, with a fit
// check. Whoever resized it (an extension following its job's size) tries
// again once the unit waits and holds nothing.
var ErrHoldsQuota = errors.New("the QueueUnit holds quota: its size cannot change until it is queued again")

// Patch applies mutate to obj and writes what changed to the given part as a
// JSON merge patch guarded by obj's resourceVersion (the optimistic lock), so
// a change decided on stale data never lands. It is the one way koord-queue
// and koord-queue-controllers write QueueUnits and the jobs they stand for.
//
//   - mutate reports false, or changes nothing: nothing is written.
//   - A conflict: obj is read afresh through reader (around any cache) and
//     mutate is applied again, so mutate decides on what the server holds.
//   - An ambiguous failure (a timeout, a server error): the write may have
//     landed. obj is read afresh and mutate applied again; the lock makes the
//     retry safe, and a mutate that finds its change made finds nothing to
//     do. If obj cannot be read, the error wraps ErrOutcomeUnknown.
//   - Any other failure (not found, invalid, forbidden) is returned as it is.
//
// A QueueUnit's status is written with its admissionsSummary made anew from
// its admissions. A change of a QueueUnit's size (Resized) is refused with
// ErrHoldsQuota when the unit it is applied to holds quota (HoldsQuota),
// on every attempt: a resize decided while the unit waited does not land
// on the unit admitted meanwhile; obj is left as it was read.
//
// With a nil reader nothing is read again: a conflict is returned as it is,
// for a caller whose change was decided on obj and must be decided afresh.
//
// On success obj is what the server returned; changed reports whether a
// write was made (false also when a retry found the change already made).
func Patch[T client.Object](ctx context.Context, c client.Client, reader client.Reader, obj T, part Part, owner client.FieldOwner, mutate func(T) bool) (changed bool, err error) {
	for attempt := 1; ; attempt++ {
		orig := obj.DeepCopyObject().(client.Object)
		if !mutate(obj) {
			return false, nil
		}
		if u, ok := any(obj).(*schedulingv1alpha1.QueueUnit); ok && part == Main {
			if was := orig.(*schedulingv1alpha1.QueueUnit); HoldsQuota(was) && Resized(was, u) {
				*u = *was
				return false, fmt.Errorf("resizing %s: %w", klog.KObj(u), ErrHoldsQuota)
			}
		}
		if u, ok := any(obj).(*schedulingv1alpha1.QueueUnit); ok && part == Status {
			// Every writer of admissions writes through here: the summary
			// goes with them in the same write.
			u.Status.AdmissionsSummary = AdmissionsSummary(u.Status.Admissions)
		}
		if data, err := client.MergeFrom(orig).Data(obj); err != nil {
			return false, fmt.Errorf("computing the patch of %s: %w", klog.KObj(obj), err)
		} else if string(data) == "{}" {
			return false, nil
		}
		patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
		if part == Status {
			err = c.Status().Patch(ctx, obj, patch, owner)
		} else {
			err = c.Patch(ctx, obj, patch, owner)
		}
		if err == nil {
			return true, nil
		}
		retry := reader != nil && (apierrors.IsConflict(err) || ambiguous(err))
		if !retry || attempt >= patchAttempts {
			if ambiguous(err) {
				err = fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
			}
			return false, fmt.Errorf("patching %s: %w", klog.KObj(obj), err)
		}
		if getErr := reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); getErr != nil {
			if ambiguous(err) && !apierrors.IsNotFound(getErr) {
				return false, fmt.Errorf("patching %s: %w: %w (reading it back: %w)", klog.KObj(obj), ErrOutcomeUnknown, err, getErr)
			}
			return false, fmt.Errorf("reading %s again: %w", klog.KObj(obj), getErr)
		}
	}
}

// ambiguous reports whether a failed write may have landed anyway: any
// failure but a refusal the server answered with (a conflict, not found, an
// invalid or forbidden request, ...).
func ambiguous(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true // no answer: a timeout, a broken connection
	}
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsInternalError(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err)
}

// Resized reports whether after asks its quota for something else than
// before: its spec.resource, spec.request or spec.podSet differ, pod sets'
// names aside (renaming a pod set, as adopting Koord-Queue's unit does along
// with its admissions, asks for nothing more). A unit that holds quota
// keeps its size (see Patch and Charged).
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
