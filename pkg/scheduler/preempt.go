package scheduler

import (
	"time"

	"github.com/koord-queue/koord-queue/pkg/quota"
)

// Finding victims and starting a preemption: the preemptor's side of
// preemptions (preemptions.go). A head that does not fit may look for
// victims once per cycle (headPreempts): reclaim if its quota is owed its
// min, else, if its queue allows it, lower-priority units of its own quota
// (preempt); under wait-for-pods-running, the units that hold its queue's
// gate shut (displace). It first waits out its queue's preemption delay
// (patience.go), then evicts (startPreemption).
//
// Victims are chosen for quota alone, and evicted only when their going
// would give the head room on the nodes too (Placer.PlaceWithout): for a
// head that asks for a topology level, a domain of that level big enough
// for it. Otherwise it evicts nobody and waits for room (futile); no other
// set of victims is searched for.

// displace is Koord-Queue's preemption under wait-for-pods-running (with
// enable-queueunit-preemption): a head of higher priority than every
// admitted unit of its queue that does not run yet evicts them all, so
// that the gate opens for it, unless one of them was admitted less than
// defaultReclaimProtectTime ago, or the head would not fit even once they
// are gone, or their going would free it no room on the nodes (futile).
// It returns true while the head waits for such victims, or for room.
func (s *preemptor) displace(qs *queueState, key string, now time.Time, res *Result) bool {
	us := s.units[key]
	if len(us.victims) > 0 {
		s.turns.headWaits(qs, key, us.preemptReason, res)
		return true
	}
	if us.victims != nil {
		return false // its victims are gone: it holds its reservation and waits for the gate
	}
	if us.triedCycle == s.run.cycle || s.preemptionInFlight(qs.quota, key) != "" {
		return false
	}
	us.preempting().triedCycle = s.run.cycle
	var victims []string
	freed := make(quota.Vector, len(us.req))
	for _, k := range sortedKeys(qs.notRunning) {
		v := s.units[k]
		switch {
		case v == nil || v.u.Priority >= us.u.Priority:
			return false
		case v.evicting:
			continue // leaving already: the gate opens when it is gone
		case s.preemptions.reclaimProtected(v, now):
			s.preemptions.protectUntil(qs.spec.Name, s.preemptions.protectionEnd(v)) // tried again then
			return false
		}
		victims = append(victims, k)
		for i := range freed {
			freed[i] += at(v.req, i)
		}
	}
	if len(victims) == 0 {
		return false
	}
	var err error
	if s.run.free, s.run.binding, err = s.engine.Headroom(qs.quota, s.run.free, s.run.binding); err != nil {
		return false
	}
	s.holdForPreemptors(qs) // startPreemption reserves from it
	for i := range freed {
		freed[i] += at(s.run.free, i)
	}
	if !quota.Fits(us.req, freed) {
		return false // it would wait for quota once they are gone: evicting them would gain nothing
	}
	if !s.fitsBesidePreemptions(qs.quota, us.req, victims) {
		s.waitForPreemptions(qs, key, res)
		return true
	}
	if s.futile(qs, us, victims, "unit(s) not yet running", res) {
		return true
	}
	why := say("for higher-priority unit %s (priority %d), which waits in queue %s for units admitted but not yet running (wait-for-pods-running)", unitRef(key), us.u.Priority, qs.spec.Name)
	s.startPreemption(qs, us, InQueue, victims, "unit(s) not yet running", why, now, res)
	return true
}

// headPreempts: the policy's head does not fit. Once per cycle it may look
// for victims. waiting is true while the head has victims still leaving;
// reserved is true when it just preempted (and reserved what is free).
func (s *preemptor) headPreempts(qs *queueState, key string, now time.Time, res *Result) (waiting, reserved bool) {
	us := s.units[key]
	if len(us.victims) > 0 {
		s.turns.headWaits(qs, key, us.preemptReason, res)
		return true, false
	}
	if other := s.preemptionInFlight(qs.quota, key); other != "" {
		// One preemption per quota at a time: each preemptor is judged on
		// what its quota holds, and the other's request is not all held
		// yet, so two at once could each be owed and together not fit,
		// evicting victims for a unit that then cannot be admitted.
		s.turns.headWaits(qs, key, say("waits for the preemption by %s in quota %s to end", unitRef(other), qs.quota), res)
		return true, false
	}
	if qs.patient == us { // its delay is not over (turn ends it when it is)
		s.turns.headWaits(qs, key, us.preemptReason, res)
		return true, false
	}
	if us.triedCycle == s.run.cycle {
		return false, false // a Priority queue comes back to its head often
	}
	us.preempting().triedCycle = s.run.cycle
	return s.preempt(qs, us, now, res)
}

// preempt looks for victims for the head: reclaim first (the quota is owed
// its min), then, if the queue allows it, lower-priority units of its own
// quota. waiting and reserved are headPreempts'.
func (s *preemptor) preempt(qs *queueState, us *unitState, now time.Time, res *Result) (waiting, reserved bool) {
	canEvict := func(key string) bool {
		v, ok := s.units[key]
		return ok && v.admitted && !v.evicting && !v.u.Leaving && key != us.u.Key
	}
	kind := Reclaim
	owed := s.engine.WithinMin(qs.quota, us.req)
	var victims []string
	ok := false
	if owed {
		victims, ok = s.engine.ReclaimVictims(qs.quota, us.req, func(key string) bool {
			return canEvict(key) && !s.preemptions.reclaimProtected(s.units[key], now)
		})
	}
	cfg := qs.spec.Config
	if !ok && cfg.EnablePreemption {
		kind = InQueue
		victims, ok = s.engine.LowerPriorityVictims(qs.quota, us.req, us.u.Priority, func(key string) bool {
			return canEvict(key) && (cfg.PreemptRunning || !s.units[key].u.Running)
		})
	}
	if ok && !s.fitsBesidePreemptions(qs.quota, us.req, victims) {
		s.waitForPreemptions(qs, us.u.Key, res)
		return true, false
	}
	if ok && s.futile(qs, us, victims, "unit(s)", res) {
		return true, false
	}
	if ok && s.waitToPreempt(qs, us, kind, now, res) {
		return true, true // it waits, holding what is free: offer again
	}
	if !ok {
		if owed {
			s.preemptions.waitForBorrowers(qs.spec.Name)
			if until := s.preemptions.protectionEnds(s.units, now); !until.IsZero() {
				s.preemptions.protectUntil(qs.spec.Name, until)
			}
		}
		return false, false
	}
	why := say("to reclaim the min of quota %s", qs.quota)
	if kind == InQueue {
		why = say("for higher-priority unit %s (priority %d) of quota %s", unitRef(us.u.Key), us.u.Priority, qs.quota)
	}
	s.startPreemption(qs, us, kind, victims, "unit(s)", why, now, res)
	return true, true
}

// startPreemption records that us evicts victims, the one preemption in
// flight in its quota: it reserves what is free for us, marks the victims,
// reports the Preemption and says why us waits ("preempting 2 unit(s) why:
// victims"; what names the victims).
func (s *preemptor) startPreemption(qs *queueState, us *unitState, kind PreemptionKind, victims []string, what string, why Text, now time.Time, res *Result) {
	s.reserve(qs, us, now, res)
	us.preempting().victims = map[string]struct{}{}
	s.preemptions.start(qs.quota, us.u.Key)
	for _, v := range victims {
		vs := s.units[v].preempting()
		vs.evicting, vs.evictedFor = true, us.u.Key
		us.victims[v] = struct{}{}
	}
	res.Preemptions = append(res.Preemptions, Preemption{
		Preemptor: us.u.Key, Queue: qs.spec.Name, Kind: kind, Victims: victims,
		Reason: say("preempted by %s %s", unitRef(us.u.Key), why),
	})
	us.preempting().preemptReason = say("preempting %d %s %s: %s", len(victims), what, why, unitList(victims))
	s.turns.headWaits(qs, us.u.Key, us.preemptReason, res)
}

// futile reports whether evicting victims (what names them) would give us
// no room on the nodes (Placer.PlaceWithout); if so, us evicts nobody and
// waits for room, saying so without naming them, and its queue is woken
// by WakeUnplaced, a change of its units or any quota's.
func (s *preemptor) futile(qs *queueState, us *unitState, victims []string, what string, res *Result) bool {
	why, ok := s.turns.wouldPlace(us, victims)
	if ok {
		return false
	}
	s.turns.unplacedWaits(qs, us.u.Key, say("evicting %d %s would free %s", len(victims), what, why), res)
	return true
}

// waitForPreemptions: the head found victims, but would not fit beside the
// preemptions in flight; it waits for one of them to end.
func (s *preemptor) waitForPreemptions(qs *queueState, key string, res *Result) {
	s.preemptions.waitForOthers(qs.spec.Name)
	first := s.preemptions.firstInFlight(s.units, key)
	s.turns.headWaits(qs, key, say("waits for the preemption by %s in quota %s to end: it would not fit beside it", unitRef(first), s.units[first].quota), res)
}
