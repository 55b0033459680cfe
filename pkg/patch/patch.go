// Package patch writes Kubernetes objects as JSON merge patches guarded by
// their resourceVersion (Patch): the one way koord-queue and
// koord-queue-controllers write QueueUnits, Queues and the jobs they stand
// for.
package patch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
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
// A QueueUnit is written as queueunit.BeforeWrite says, on every attempt:
// its status with its admissionsSummary made anew from its admissions; a
// change of its size refused with queueunit.ErrHoldsQuota when the unit it
// is applied to holds quota (a resize decided while the unit waited does
// not land on the unit admitted meanwhile), obj left as it was read.
//
// With a nil reader nothing is read again: a conflict is returned as it is,
// for a caller whose change was decided on obj and must be decided afresh.
//
// On success obj is what the server returned; changed reports whether a
// write was made (false also when a retry found the change already made).
func Patch[T client.Object](ctx context.Context, c client.Client, reader client.Reader, obj T, part Part, owner client.FieldOwner, mutate func(T) bool) (changed bool, err error) {
	for attempt := 1; ; attempt++ {
		orig := original(obj, part)
		if !mutate(obj) {
			return false, nil
		}
		if u, ok := any(obj).(*schedulingv1alpha1.QueueUnit); ok {
			if err := queueunit.BeforeWrite(orig.(*schedulingv1alpha1.QueueUnit), u, part == Status); err != nil {
				return false, err
			}
		}
		data, err := mergePatch(orig, obj, part)
		if err != nil {
			return false, fmt.Errorf("computing the patch of %s: %w", klog.KObj(obj), err)
		} else if string(data) == "{}" {
			return false, nil
		}
		var patch client.Patch
		if version := orig.GetResourceVersion(); version != "" {
			if data, err = withResourceVersion(data, version); err != nil {
				return false, fmt.Errorf("computing the patch of %s: %w", klog.KObj(obj), err)
			}
			patch = client.RawPatch(types.MergePatchType, data)
		} else {
			// No version to lock on (an object not read from the server):
			// the client refuses to send the patch, and obj is read again
			// below.
			patch = client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
		}
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

// mergePatch is the JSON merge patch from orig to obj, or for the Status
// part from orig's status to obj's: the status subresource keeps nothing
// else of a patch, and a unit's spec (its pod templates) would otherwise
// be marshalled and compared twice at every status write.
func mergePatch(orig, obj client.Object, part Part) ([]byte, error) {
	if part == Status {
		if from, ok := statusOf(orig); ok {
			to, _ := statusOf(obj)
			fromJSON, err := json.Marshal(from)
			if err != nil {
				return nil, err
			}
			toJSON, err := json.Marshal(to)
			if err != nil {
				return nil, err
			}
			return jsonpatch.CreateMergePatch(fromJSON, toJSON)
		}
	}
	return client.MergeFrom(orig).Data(obj)
}

// original is the copy of obj a patch of part is computed against: for the
// Status part of an object with a struct Status field, a copy that shares
// everything with obj but its status, which is copied deep (the patch
// compares the statuses alone, and a unit's spec holds pod templates that
// every status write would copy); otherwise a deep copy.
func original(obj client.Object, part Part) client.Object {
	if part != Status {
		return obj.DeepCopyObject().(client.Object)
	}
	status, ok := statusField(obj)
	if !ok || status.Kind() != reflect.Struct {
		return obj.DeepCopyObject().(client.Object)
	}
	deepCopyInto := status.Addr().MethodByName("DeepCopyInto")
	if !deepCopyInto.IsValid() {
		return obj.DeepCopyObject().(client.Object)
	}
	c := reflect.New(reflect.ValueOf(obj).Elem().Type())
	c.Elem().Set(reflect.ValueOf(obj).Elem())
	copied := c.Elem().FieldByName("Status")
	copied.SetZero()
	deepCopyInto.Call([]reflect.Value{copied.Addr()})
	return c.Interface().(client.Object)
}

// statusOf is obj's Status field as the one field of an object, "status";
// false for an object without one.
func statusOf(obj client.Object) (any, bool) {
	f, ok := statusField(obj)
	if !ok {
		return nil, false
	}
	return struct {
		Status any `json:"status"`
	}{f.Interface()}, true
}

// statusField is the Status field of the struct obj points to, if it has
// one.
func statusField(obj client.Object) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := v.Elem().FieldByName("Status")
	return f, f.IsValid()
}

// withResourceVersion is the merge patch data that also sets
// metadata.resourceVersion to version: the optimistic lock, so that the
// server refuses the patch with a conflict if the object changed since
// version. It is the patch client.MergeFromWithOptimisticLock sends, made
// from the patch already computed rather than by copying, marshalling and
// diffing both objects once more.
func withResourceVersion(data []byte, version string) ([]byte, error) {
	var patch map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers written back as they were, whatever their size
	if err := dec.Decode(&patch); err != nil {
		return nil, err
	}
	meta, _ := patch["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		patch["metadata"] = meta
	}
	meta["resourceVersion"] = version
	return json.Marshal(patch)
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
