package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/koord-queue/koord-queue/pkg/quota"
)

// Patience: a head that could evict units (reclaim, or in-queue preemption)
// first waits up to its queue's PreemptionDelay for
// the quota to free by itself. Meanwhile it holds a reservation of what is
// free in its quota and takes, at the start of every cycle, what has freed
// since, before any queue's turn; it is admitted the moment that covers it,
// with no eviction. When the delay is over and it still does not fit, it
// evicts as it would have at once.
//
// Why: an eviction costs the victim's work and two writes (the eviction,
// and the victim's admission again), and the victims a head finds are often
// units that borrowed its quota in the moment between two of its units,
// about to end anyway. The delay between a unit's end and koord-queue
// hearing of it (its Succeed written, then seen) makes those moments, and
// the evictions, common on a busy API server
// (docs/design/performance-notes.md, "Why baseline takes longer than 300
// s").
//
// Bounded: a unit waits at most the delay from the first time it could
// have evicted (patientUntil, kept until it is admitted or enqueued anew),
// however often it stops and starts heading its queue.

// waitToPreempt is called when us, its queue's head, found victims of kind. It returns true when us waits instead, holding what
// s.run.free (its quota's headroom) has, false when it is to evict now.
func (s *preemptor) waitToPreempt(qs *queueState, us *unitState, kind PreemptionKind, now time.Time, res *Result) bool {
	d := qs.spec.Config.PreemptionDelay
	if d <= 0 {
		return false
	}
	if us.patientUntil.IsZero() {
		us.preempting().patientUntil = now.Add(d)
	}
	if !now.Before(us.patientUntil) {
		return false
	}
	if s.reserve(qs, us, now, res); !us.reserved {
		return false // the engine refused (a bug, reported): evict rather than wait without a hold
	}
	qs.patient = us
	s.preemptions.addPatient(qs)
	what := "preempts lower-priority units of quota " + qs.quota
	if kind == Reclaim {
		what = "reclaims the min of quota " + qs.quota + " from borrowers"
	}
	us.preempting().preemptReason = words(fmt.Sprintf("waits up to %s (koord-queue/preemption-delay) for quota to free before it %s; it holds what frees meanwhile", d, what))
	s.turns.headWaits(qs, us.u.Key, us.preemptReason, res)
	return true
}

// endPatience gives back a patient unit's reservation. Its patientUntil
// stays: its delay runs from the first time it could evict.
func (s *preemptor) endPatience(us *unitState) {
	qs := s.queues[us.u.Queue]
	if qs == nil || qs.patient != us {
		return
	}
	qs.patient = nil
	s.preemptions.dropPatient(qs)
	s.unreserve(us)
}

// feedPatient gives each patient head, before any queue's turn, what has
// freed in its quota since the last cycle: higher priority first, then the
// one whose delay ends first. A head it covers is admitted; a head whose
// delay is over has its queue woken, to preempt in its turn (it keeps its
// reservation until then, so no other queue takes it first, and gives it
// back at the start of that turn, whatever the turn then does).
func (s *preemptor) feedPatient(now time.Time, res *Result) {
	p := &s.preemptions
	if len(p.patient) == 0 {
		return
	}
	order := p.patientBuf[:0]
	for qs := range p.patient {
		order = append(order, qs)
	}
	slices.SortFunc(order, fedFirst)
	for i, qs := range order {
		order[i] = nil
		us := qs.patient
		if us == nil {
			continue
		}
		if !now.Before(us.patientUntil) {
			s.turns.wake(qs.spec.Name)
			continue
		}
		s.feed(qs, us, now, res)
	}
	p.patientBuf = order[:0]
}

// fedFirst orders queues with a patient head as feedPatient feeds them:
// higher priority first, then the one whose delay ends first, then by key.
func fedFirst(a, b *queueState) int {
	if c := cmp.Compare(b.patient.u.Priority, a.patient.u.Priority); c != 0 {
		return c
	}
	if c := a.patient.patientUntil.Compare(b.patient.patientUntil); c != 0 {
		return c
	}
	return cmp.Compare(a.patient.u.Key, b.patient.u.Key)
}

// feed grows us's reservation by what its quota has free, and admits us if
// that covers it and the nodes have room for it (admitOutOfTurn); if they
// have not, its patience ends and it waits for them.
func (s *preemptor) feed(qs *queueState, us *unitState, now time.Time, res *Result) {
	var err error
	if s.run.free, s.run.binding, err = s.engine.Headroom(qs.quota, s.run.free, s.run.binding); err != nil {
		return
	}
	s.holdForPreemptors(qs) // not what a preemption in flight is owed
	key := reservationKey(us.u.Key)
	held, _ := s.engine.Charged(key)
	grows, covered := false, true
	for i, r := range us.req {
		h := at(held.Request, i)
		if h < r && at(s.run.free, i) > 0 {
			grows = true
		}
		// Only what it asks for (quota.Fits): a resource it does not ask
		// for may be over somewhere on the chain (negative headroom).
		if n := at(us.need, i); n > 0 && min(h, n)+at(s.run.free, i) < n {
			covered = false
		}
	}
	// Covered even if nothing grows: it may hold all it asks for while a
	// resource it asks for was over, and is no longer.
	if covered && !qs.gateShut() {
		s.endPatience(us)
		if s.run.free, s.run.binding, err = s.engine.Headroom(qs.quota, s.run.free, s.run.binding); err != nil {
			return
		}
		s.holdForPreemptors(qs)
		if quota.Fits(us.need, s.run.free) {
			s.turns.admitOutOfTurn(qs, us, now, res) // or it waits for the nodes, its patience over
			return
		}
		// Not covered after all (a limit that does not add up): hold again.
		s.reserve(qs, us, now, res)
		qs.patient = us
		s.preemptions.addPatient(qs)
		return
	}
	if !grows {
		return
	}
	hold := make(quota.Vector, len(us.req))
	for i, r := range us.req {
		hold[i] = min(r, at(held.Request, i)+max(at(s.run.free, i), 0))
	}
	if err := s.engine.Resize(key, hold); err != nil {
		us.reserved = false
		s.endPatience(us)
		res.Errors = append(res.Errors, UnitError{Unit: us.u.Key, Queue: qs.spec.Name, Err: bookkeeping(err)})
	}
}

// patienceEnds is when the first patient head's delay ends, zero if none.
func (p *preemptions) patienceEnds() time.Time {
	var next time.Time
	for qs := range p.patient {
		if end := qs.patient.patientUntil; next.IsZero() || end.Before(next) {
			next = end
		}
	}
	return next
}
