package scheduler

import (
	"iter"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/quota"
)

// Snapshot is a copy of the scheduler's inputs and of what it decided: fed
// to a new Scheduler, it stands where this one does (pkg/forecast replays
// it forward).
type Snapshot struct {
	Capacity corev1.ResourceList
	Quotas   []quota.Spec
	Queues   []QueueSpec
	// Units in key order; a unit the scheduler admitted is Admitted, with
	// its admission time, whether or not the controller reported it back
	// yet, and asks for exactly what it holds (less than its request after
	// a partial admission).
	Units []Unit
}

// Snapshot copies the scheduler's state: O(units), for a caller to take
// under its lock and use after releasing it. Requests are shared, not
// copied: the scheduler never changes a unit's maps in place.
func (s *Scheduler) Snapshot() Snapshot {
	var snap Snapshot
	snap.Capacity, snap.Quotas, snap.Queues = s.Inputs()
	snap.Units = slices.AppendSeq(make([]Unit, 0, len(s.units)), s.Units())
	return snap
}

// Inputs copies what Snapshot has but the units: the cluster's capacity,
// the quotas and the queues (in name order).
func (s *Scheduler) Inputs() (capacity corev1.ResourceList, quotas []quota.Spec, queues []QueueSpec) {
	capacity, quotas = s.engine.Inputs()
	for _, name := range slices.Sorted(maps.Keys(s.queues)) {
		queues = append(queues, s.queues[name].spec)
	}
	return capacity, quotas, queues
}

// Units yields each unit as Snapshot has it, in key order, for a caller
// that keeps them in a form of its own: a Snapshot's slice of them is
// 144 bytes a unit more to collect.
func (s *Scheduler) Units() iter.Seq[Unit] {
	return func(yield func(Unit) bool) {
		for _, key := range slices.Sorted(maps.Keys(s.units)) {
			us := s.units[key]
			u := us.u
			u.Admitted = us.admitted
			if us.admitted {
				u.Request, u.PodSets, u.Partial = s.engine.ResourceList(us.req), nil, nil
			}
			if !yield(u) {
				return
			}
		}
	}
}

// Unit is the unit under key as it was last given to UpsertUnit, with its
// admission time once the scheduler admitted it (Admitted is as given:
// IsAdmitted says whether it holds quota); false if there is none. Its pod
// sets and partial admission are the scheduler's, not to be changed.
func (s *Scheduler) Unit(key string) (Unit, bool) {
	us, ok := s.units[key]
	if !ok {
		return Unit{}, false
	}
	return us.u, true
}
