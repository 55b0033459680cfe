package scheduler

import (
	"time"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
)

// Placer decides whether a unit that fits its quota also fits the nodes:
// the controller answers from its topology snapshot (pkg/topology), built
// once per cycle, and at once for a unit that asks for no topology level.
// (A flag on Unit would have spared the calls, at 8 bytes more per unit.)
//
// The core asks Place in a cycle just before it admits a unit, with the
// pods it would admit (partial: as Admission.Partial; nil, whole): in its
// queue's turn, and for a preemptor whose victims are gone or a patient
// head its reservation covers (admitOutOfTurn). ok takes the room, so
// that the units asked after it in the cycle see what is left; otherwise
// why says what the unit lacks, in words for its status, and it waits.
//
// The core asks PlaceWithout before it evicts victims for a unit: would
// the unit, whole, fit were the victims gone (the room their pods hold on
// the nodes, and the room assumed for those admitted and not on a node
// yet, given back)? It takes nothing. When not, why completes "evicting
// them would free" ("no `rack` with room for 8 × 1 cpu (the largest would
// have room for 6)"), and the unit evicts nobody.
type Placer interface {
	Place(key string, partial map[string]int32) (why string, ok bool)
	PlaceWithout(key string, victims []string) (why string, ok bool)
}

// SetPlacer makes p the Placer; nil: no unit waits for room on nodes.
func (s *Scheduler) SetPlacer(p Placer) { s.turns.placer = p }

// maxSetAside bounds how many units that fit their quota and not the nodes
// one queue passes over in one cycle, so that a tenant's many units that
// never fit cost the cycle at most this many Place calls per queue.
const maxSetAside = 8

// asideUnit is a unit set aside for the rest of a cycle: out of its
// queue's order until the cycle ends (restoreAside).
type asideUnit struct {
	qs   *queueState
	item policy.Item
}

// placementRefused: the unit key fits its quota, not the nodes (the
// Placer's why). It waits, saying so, and its queue is woken by
// WakeUnplaced. Where the policy admits past a head that does not fit
// (Priority, Intelligent's low band) the unit is set aside for the rest of
// the cycle, so that the units behind it are tried (true: offer again), at
// most maxSetAside per queue and cycle; otherwise (Block, Intelligent's
// high band or a promoted unit) nothing behind it is admitted and the
// queue is parked (false).
func (s *turns) placementRefused(qs *queueState, off policy.Offer, key, why string, res *Result) bool {
	s.unplacedWaits(qs, key, words(why), res)
	blocks := qs.spec.Config.Policy == schedulingv1alpha1.QueuePolicyBlock || off.Band == policy.BandHigh || off.Band == policy.BandPromoted
	if blocks || qs.asides >= maxSetAside {
		// Woken by WakeUnplaced, a change of its units or any quota's.
		return false
	}
	item, ok := qs.q.Get(key)
	if !ok {
		return false
	}
	qs.q.Remove(key)
	qs.asides++
	s.aside = append(s.aside, asideUnit{qs: qs, item: item})
	return true
}

// restoreAside puts the units set aside in the cycle back in their
// queues' order, as they were.
func (s *turns) restoreAside() {
	for i, a := range s.aside {
		a.qs.asides = 0
		if us := s.units[a.item.Key]; us != nil && us.inQueue && us.u.Queue == a.qs.spec.Name {
			a.qs.q.Upsert(a.item)
		}
		s.aside[i] = asideUnit{}
	}
	s.aside = s.aside[:0]
}

// WakeUnplaced wakes the queues some of whose units fit their quota and
// waited for room on the nodes: the controller calls it when that room
// may have grown (a node added or changed, a pod gone, a placement
// given back).
func (s *Scheduler) WakeUnplaced() { s.turns.wakeUnplaced() }

// wakeUnplaced is WakeUnplaced.
func (s *turns) wakeUnplaced() {
	for name := range s.unplaced {
		s.wake(name)
	}
	clear(s.unplaced)
}

// unplacedWaits: the unit key waits for room on the nodes, saying why;
// its queue is woken by WakeUnplaced (or a change of its units or any
// quota's).
func (s *turns) unplacedWaits(qs *queueState, key string, why Text, res *Result) {
	s.headWaits(qs, key, why, res)
	s.unplaced[qs.spec.Name] = struct{}{}
}

// place asks the Placer about the unit about to be admitted with what
// s.free, its quota's headroom, allows.
func (s *turns) place(us *unitState) (why string, ok bool) {
	if s.placer == nil {
		return "", true
	}
	_, partial := s.sizer.fit(us, s.free)
	return s.placer.Place(us.u.Key, partial)
}

// admitOutOfTurn admits us outside its queue's offer (a preemptor whose
// victims are gone, a patient head its reservation covers), s.free being
// its quota's headroom, once the Placer finds it room. Refused, it waits
// as in its turn (unplacedWaits); it is not set aside, so its queue's turn
// in the cycle may offer it again. An admission the engine refuses is
// reported (admitRefused).
func (s *turns) admitOutOfTurn(qs *queueState, us *unitState, now time.Time, res *Result) {
	why, ok := s.place(us)
	if !ok {
		s.unplacedWaits(qs, us.u.Key, words(why), res)
		return
	}
	if err := s.admit(qs, us.u.Key, now, res); err != nil {
		s.admitRefused(qs, us.u.Key, err, res)
	}
}

// wouldPlace asks the Placer whether us, whole, would fit the nodes were
// victims gone (Placer.PlaceWithout).
func (s *turns) wouldPlace(us *unitState, victims []string) (why string, ok bool) {
	if s.placer == nil {
		return "", true
	}
	return s.placer.PlaceWithout(us.u.Key, victims)
}
