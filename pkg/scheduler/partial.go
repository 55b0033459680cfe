package scheduler

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/quota"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// Partial admission, as Kueue does it: a unit whose pod sets have a
// MinCount may be admitted with fewer pods when it does not fit whole. Its
// queue's policy sees it as asking for its minimum (every shrinkable pod
// set at MinCount), so a unit that fits only partially is served like one
// that fits; admit then takes the largest counts that fit the headroom.
// A head that does not fit even at its minimum may preempt, for its whole
// request, as before: a partial admission that needs no preemption is
// preferred to a whole one that does.
//
// Pod sets shrink together: a single amount, searched by bisection, is
// shared among them in proportion to what each can give up (Count -
// MinCount), as Kueue's PodSetReducer does.

// sizer reads what units ask for and hold as vectors of the engine's
// resources, pod set by pod set.
type sizer struct{ engine *quota.Engine }

// podSets is what the scheduler keeps of a unit's pod sets.
type podSets struct {
	names       []string
	podRequests []corev1.ResourceList
	counts      []int32
	// gives is how many pods each set can leave out; total their sum.
	gives []int32
	total int64
}

// podSetsOf reads u's pod sets; nil when none can shrink (and u holds no
// partial admission), or when they do not add up to req (its request as a
// vector), since then what fewer pods ask for is not known.
func (s sizer) podSetsOf(u Unit, req quota.Vector) *podSets {
	if len(u.PodSets) == 0 {
		return nil
	}
	ps := &podSets{
		names:       make([]string, len(u.PodSets)),
		podRequests: make([]corev1.ResourceList, len(u.PodSets)),
		counts:      make([]int32, len(u.PodSets)),
		gives:       make([]int32, len(u.PodSets)),
	}
	for i, set := range u.PodSets {
		count := max(set.Count, 0)
		ps.names[i], ps.podRequests[i], ps.counts[i] = set.Name, set.PodRequest.DeepCopy(), count
		if set.MinCount >= 1 && set.MinCount < count {
			ps.gives[i] = count - set.MinCount
			ps.total += int64(ps.gives[i])
		}
	}
	if ps.total == 0 && len(u.Partial) == 0 {
		return nil // whole or not at all: nothing to keep
	}
	if !equalVec(s.request(ps, ps.counts), req) {
		return nil
	}
	return ps
}

// request is what counts[i] pods of each pod set ask for, as a vector.
func (s sizer) request(ps *podSets, counts []int32) quota.Vector {
	return s.engine.Vector(resources.PodsRequests(ps.podRequests, counts))
}

// countsAt writes into out the counts that leave out left pods in all (0
// to ps.total): each set gives up floor(left × its share / total), so every
// count shrinks as left grows and all sets reach MinCount together.
func (ps *podSets) countsAt(left int64, out []int32) {
	for i, c := range ps.counts {
		out[i] = c
		if ps.gives[i] > 0 {
			out[i] -= int32(mulDiv(uint64(left), uint64(ps.gives[i]), uint64(ps.total)))
		}
	}
}

// mulDiv is a×b/c rounded down, for a <= c, without overflowing.
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, _ := bits.Div64(hi, lo, c)
	return q
}

// minimum is the vector of ps at every MinCount.
func (s sizer) minimum(ps *podSets) quota.Vector {
	counts := make([]int32, len(ps.counts))
	ps.countsAt(ps.total, counts)
	return s.request(ps, counts)
}

// held is what an admitted unit with pod sets ps holds: partial names the
// sets admitted with fewer pods.
func (s sizer) held(ps *podSets, partial map[string]int32) quota.Vector {
	counts := make([]int32, len(ps.counts))
	for i, c := range ps.counts {
		counts[i] = c
		if n, ok := partial[ps.names[i]]; ok && n < c {
			counts[i] = max(n, 0)
		}
	}
	return s.request(ps, counts)
}

// vectors are what u is counted with. Waiting: req is its request, need the
// least it can be admitted with (req unless it can shrink). Admitted: both
// are what it holds.
func (s sizer) vectors(u Unit) (req, need quota.Vector, ps *podSets) {
	req = s.engine.Vector(u.Request)
	ps = s.podSetsOf(u, req)
	switch {
	case ps == nil:
		return req, req, nil
	case u.Admitted:
		if len(u.Partial) > 0 {
			req = s.held(ps, u.Partial)
		}
		return req, req, ps
	case ps.total > 0:
		return req, s.minimum(ps), ps
	}
	return req, req, ps
}

// fit is what a waiting unit is admitted with in free: its whole request
// if that fits (partial nil), otherwise the largest counts that fit. The
// policy offers a unit only when its minimum fits free, so some count does.
func (s sizer) fit(us *unitState, free quota.Vector) (held quota.Vector, partial map[string]int32) {
	ps := us.sets
	if ps == nil || ps.total == 0 || quota.Fits(us.req, free) {
		return us.req, nil
	}
	counts := make([]int32, len(ps.counts))
	// The fewest pods left out that fit: leaving out more always fits.
	i := sort.Search(int(ps.total), func(i int) bool {
		ps.countsAt(int64(i)+1, counts)
		return quota.Fits(s.request(ps, counts), free)
	})
	ps.countsAt(min(int64(i)+1, ps.total), counts)
	for k, n := range counts {
		if n < ps.counts[k] {
			if partial == nil {
				partial = map[string]int32{}
			}
			partial[ps.names[k]] = n
		}
	}
	return s.request(ps, counts), partial
}

// partialNote tells a waiting unit that could start with fewer pods what
// its wait is about: " (partial admission: it can start with 2 of 4 pods of
// pod set main)"; "" for a unit admitted whole or not at all.
func partialNote(us *unitState) string {
	ps := us.sets
	if ps == nil || ps.total == 0 {
		return ""
	}
	counts := make([]int32, len(ps.counts))
	ps.countsAt(ps.total, counts)
	var parts []string
	for i, n := range counts {
		if n < ps.counts[i] {
			parts = append(parts, fmt.Sprintf("%d of %d pods of pod set %s", n, ps.counts[i], ps.names[i]))
		}
	}
	return " (partial admission: it can start with " + strings.Join(parts, ", ") + ")"
}
