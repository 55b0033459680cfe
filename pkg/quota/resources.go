package quota

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Unlimited is the amount of a resource that a max does not name.
const Unlimited int64 = math.MaxInt64

// Vector holds one amount per resource, in the engine's resource order. A
// Vector shorter than the engine's resource list is zero past its end.
type Vector []int64

// Fits reports whether request fits in free. A resource the request does not
// ask for (zero) is never checked, so a unit asking no GPUs is not held back
// by a quota whose GPUs are over-used.
func Fits(request, free Vector) bool {
	for i, r := range request {
		if r > 0 && (i >= len(free) || r > free[i]) {
			return false
		}
	}
	return true
}

// scaled is q as the engine counts it: milli-cores for cpu, whole units
// (rounded up) for everything else.
func scaled(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// quantity turns a scaled amount back into a Quantity for display and APIs.
func quantity(name corev1.ResourceName, v int64) resource.Quantity {
	switch {
	case name == corev1.ResourceCPU:
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	case name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage ||
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		return *resource.NewQuantity(v, resource.BinarySI)
	default:
		return *resource.NewQuantity(v, resource.DecimalSI)
	}
}

// format renders an amount the way a user writes it ("4", "8Gi", "500m").
func format(name corev1.ResourceName, v int64) string {
	if v == Unlimited {
		return "unlimited"
	}
	q := quantity(name, v)
	return q.String()
}

// sortedNames returns the names of list in a fixed order.
func sortedNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// MaxRequest is the largest amount of one resource one unit may ask for, as
// the engine counts it (milli-cores for cpu, bytes for memory): 2^53, about
// 9e12 cores or 8Pi of memory. Usage sums many requests; the bound keeps
// every sum far from overflowing an int64.
const MaxRequest int64 = 1 << 53

// ErrRequestTooLarge is returned for a request the engine cannot count.
var ErrRequestTooLarge = errors.New("can never be admitted")

// ErrNegativeRequest is returned for a request below zero: charged, it
// would free room in its quota for others.
var ErrNegativeRequest = errors.New("a request must not be negative")

// CheckRequest reports a request the engine cannot count: an amount above
// MaxRequest, which would otherwise wrap around to a small or negative
// number and be charged as such, or one below zero (ErrNegativeRequest).
func CheckRequest(list corev1.ResourceList) error {
	tooLarge := func(name corev1.ResourceName) bool {
		q, limit := list[name], quantity(name, MaxRequest)
		return q.Cmp(limit) > 0
	}
	bad := func(name corev1.ResourceName) bool {
		q := list[name]
		return q.Sign() < 0 || tooLarge(name)
	}
	for name := range list { // on every upsert: allocate nothing unless one is bad
		if !bad(name) {
			continue
		}
		for _, name := range sortedNames(list) { // the same first one, whatever the map's order
			q := list[name]
			switch {
			case q.Sign() < 0:
				return fmt.Errorf("request %s %s is negative: %w", name, q.String(), ErrNegativeRequest)
			case tooLarge(name):
				limit := quantity(name, MaxRequest)
				return fmt.Errorf("request %s %s is larger than koord-queue can count (at most %s per unit): it %w", name, q.String(), limit.String(), ErrRequestTooLarge)
			}
		}
	}
	return nil
}
