package scheduler

import (
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
	snap.Capacity, snap.Quotas = s.engine.Inputs()
	for _, name := range slices.Sorted(maps.Keys(s.queues)) {
		snap.Queues = append(snap.Queues, s.queues[name].spec)
	}
	snap.Units = make([]Unit, 0, len(s.units))
	for _, key := range slices.Sorted(maps.Keys(s.units)) {
		us := s.units[key]
		u := us.u
		u.Admitted = us.admitted
		if us.admitted {
			u.Request, u.PodSets, u.Partial = s.engine.ResourceList(us.req), nil, nil
		}
		snap.Units = append(snap.Units, u)
	}
	return snap
}
