package scheduler

import (
	"maps"
	"slices"
	"time"

	"github.com/koord-queue/koord-queue/pkg/quota"
)

// preemptions is the scheduler's memory of preemption: who may evict whom
// and when, and the room held meanwhile. It owns
//
//   - the preemptions in flight (victims chosen, the preemptor not yet
//     admitted), one per quota, and the room held for them: every other
//     admission is limited to the headroom of the state where their victims
//     are gone and their preemptors hold all they ask for (holdRoom), so
//     nobody takes what a preemptor is owed while its victims leave;
//   - the preemptors nominated: their victims are all gone, and they are
//     admitted first in the next cycle (admitNominated);
//   - the patient heads, waiting out their queue's preemption delay while
//     they hold a reservation of what frees (patience.go);
//   - reclaim protection, and the queues waiting for it to end, for new
//     borrowers (reclaim waiters) or for a preemption in flight to end.
//
// Each unit's side of it is its preemptState; a queue's patient head is
// queueState.patient. Victims are searched by the quota engine
// (quota.Engine.ReclaimVictims, LowerPriorityVictims); the decisions that
// need the queues and the Result (headPreempts, preempt, displace,
// startPreemption: preempt.go; the reservation and the end of a
// preemption: below) are the preemptor's methods (preemption.go), which
// keep this state through the methods of preemptions. The rest of the
// Scheduler calls only the preemption interface.
//
// Why a reservation, a nomination and held room: a victim keeps its quota
// until the controller reports it gone, so without them another unit would
// take what frees, and the preemptor would not fit when its victims are
// gone (docs/design/decision-core.md, "No double counting").
type preemptions struct {
	// reclaimProtect: units admitted more recently are not reclaimed.
	reclaimProtect time.Duration
	// nominated: preemptors whose victims are all gone.
	nominated map[string]struct{}
	// inFlight: by quota, the units whose preemption is in flight (victims
	// chosen, the unit not yet admitted).
	inFlight map[string]map[string]struct{}
	// afterOthers: queues whose head found victims but would not fit
	// beside the preemptions in flight, or whose headroom holdRoom
	// lowered; woken when one of them ends.
	afterOthers map[string]struct{}
	// reclaimWaiters: queues whose head is owed its min but found no
	// victims; new borrowing elsewhere may give it some.
	reclaimWaiters map[string]struct{}
	// protectedUntil: queues whose owed head found only protected victims,
	// and when the first protection ends.
	protectedUntil map[string]time.Time
	// patient: queues whose head holds a reservation while it waits to
	// preempt (queueState.patient); patientBuf orders them each cycle.
	patient    map[*queueState]struct{}
	patientBuf []*queueState
	// gone, coming and after are holdRoom's and fitsBeside's buffers;
	// heldFor is the preemptor holdRoom last held room for ("" if none).
	gone    []string
	coming  []quota.Charge
	after   quota.Vector
	heldFor string
}

// preemptState is a unit's side of preemptions.
type preemptState struct {
	// evicting: chosen as a victim of evictedFor; still holds quota.
	evicting   bool
	evictedFor string
	// victims the unit preempted that still hold quota.
	victims map[string]struct{}
	// reserved: the unit holds a reservation while its victims leave.
	reserved bool
	// preemptReason is its wait reason while its victims leave.
	preemptReason Text
	// patientUntil, once set, is when the unit may evict (reclaim or
	// in-queue): it first waits until then for quota to free (patience.go).
	// Zero: it has not found victims yet in this wait.
	patientUntil time.Time
	// triedCycle is the last cycle this unit looked for victims.
	triedCycle int
}

// noPreemption is the preemptState of every unit that has taken part in
// no preemption: read, never written (preempting gives a unit its own).
var noPreemption preemptState

// preempting is us's own preemptState, to write: made on the first write.
func (us *unitState) preempting() *preemptState {
	if us.preemptState == &noPreemption {
		us.preemptState = &preemptState{}
	}
	return us.preemptState
}

// newWait: us waits afresh, its preemption delay not started.
func (us *unitState) newWait() {
	if !us.patientUntil.IsZero() {
		us.patientUntil = time.Time{}
	}
}

func newPreemptions() preemptions {
	return preemptions{
		nominated:      map[string]struct{}{},
		inFlight:       map[string]map[string]struct{}{},
		afterOthers:    map[string]struct{}{},
		reclaimWaiters: map[string]struct{}{},
		protectedUntil: map[string]time.Time{},
		patient:        map[*queueState]struct{}{},
	}
}

// nominate: the preemptor key's victims are all gone.
func (p *preemptions) nominate(key string) { p.nominated[key] = struct{}{} }

// unnominate: key is admitted or gone.
func (p *preemptions) unnominate(key string) { delete(p.nominated, key) }

// nominatedKeys lists the nominated preemptors by key.
func (p *preemptions) nominatedKeys() []string { return sortedKeys(p.nominated) }

// start records that key's preemption in quotaName is in flight.
func (p *preemptions) start(quotaName, key string) { addKey(p.inFlight, quotaName, key) }

// stop records that key's preemption is no longer in flight, calling
// stopped for the quota it was in flight in, and wake for every queue that
// waited for a preemption in flight to end.
func (p *preemptions) stop(key string, wake, stopped func(name string)) {
	for name := range p.afterOthers {
		delete(p.afterOthers, name)
		wake(name) // its head may now fit beside those left
	}
	for q := range p.inFlight {
		if _, ok := p.inFlight[q][key]; ok {
			dropKey(p.inFlight, q, key)
			stopped(q) // their heads may preempt now
		}
	}
}

// inFlightOther names a unit other than key whose preemption in quotaName
// is in flight, or "". Entries no longer true (the unit moved or left) are
// dropped on the way.
func (p *preemptions) inFlightOther(units map[string]*unitState, quotaName, key string) string {
	set := p.inFlight[quotaName]
	if len(set) == 0 {
		return "" // the common case, on every turn
	}
	// Usually one entry: no sorting (no allocation) on the hot path; the
	// smallest key when there are more, so the answer does not depend on
	// the map's order.
	found := ""
	for other := range set {
		if other == key {
			continue
		}
		if os, ok := units[other]; ok && os.victims != nil && !os.admitted && os.quota == quotaName {
			if found == "" || other < found {
				found = other
			}
			continue
		}
		delete(set, other) // deleting the current entry while ranging is safe
	}
	if len(set) == 0 {
		delete(p.inFlight, quotaName)
	}
	return found
}

// firstInFlight names the smallest key, other than key, of a unit whose
// preemption is in flight ("" if none).
func (p *preemptions) firstInFlight(units map[string]*unitState, key string) string {
	var first string
	for _, q := range slices.Sorted(maps.Keys(p.inFlight)) {
		if k := p.inFlightOther(units, q, key); k != "" && (first == "" || k < first) {
			first = k
		}
	}
	return first
}

// holdRoom lowers free, the headroom of qs's quota, to what it may admit
// and still leave every preemption in flight room once its victims are
// gone: the headroom in the state where the victims are released and each
// preemptor holds all it asks for. Victims free their quota later, and a
// unit admitted meanwhile (a queue-mate passing a head that does not fit,
// or a unit of any quota sharing a limit with the preemptor's: a child, a
// parent, a sibling, the cluster) would otherwise take the room the
// preemptor was owed, and it would not fit when its victims are gone. A
// queue whose headroom it lowers is woken when a preemption ends, and
// roomHeldFor names the first preemptor, for its head's wait reason;
// otherwise roomHeldFor is "".
func (p *preemptions) holdRoom(engine *quota.Engine, units map[string]*unitState, qs *queueState, free quota.Vector) {
	p.heldFor = ""
	if !p.collectInFlight(engine, units) {
		return
	}
	after, err := engine.HeadroomAfter(qs.quota, p.gone, p.coming, p.after)
	p.after = after
	if err != nil {
		return
	}
	lowered := false
	for i := range free {
		if h := max(at(after, i), 0); h < free[i] {
			free[i], lowered = h, true
		}
	}
	if lowered {
		p.afterOthers[qs.spec.Name] = struct{}{}
		p.heldFor = p.firstInFlight(units, "")
	}
}

// roomHeldFor is the preemptor the last holdRoom held room for, "" if none.
func (p *preemptions) roomHeldFor() string { return p.heldFor }

// fitsBeside: a unit of quotaName asking req fits once victims and the
// victims of every preemption in flight are gone, beside what those
// preemptors ask for. A second preemption that does not is not started:
// both would evict, and one of them would not be admitted.
func (p *preemptions) fitsBeside(engine *quota.Engine, units map[string]*unitState, quotaName string, req quota.Vector, victims []string) bool {
	if !p.collectInFlight(engine, units) {
		return true // the victims were chosen so that it fits
	}
	p.gone = append(p.gone, victims...)
	after, err := engine.HeadroomAfter(quotaName, p.gone, p.coming, p.after)
	p.after = after
	return err == nil && quota.Fits(req, after)
}

// collectInFlight fills p.gone with the victims of the preemptions in
// flight and p.coming with what their preemptors ask for beyond what they
// hold already. It returns false when none is in flight. It runs at every
// queue's turn while a preemption is in flight, so it does not sort (the
// state HeadroomAfter builds from it is a sum, the same in any order) and
// reuses its buffers: it allocates only a reserved preemptor's key.
func (p *preemptions) collectInFlight(engine *quota.Engine, units map[string]*unitState) bool {
	p.gone, p.coming = p.gone[:0], p.coming[:0]
	if len(p.inFlight) == 0 {
		return false // the common case, on every turn
	}
	for _, set := range p.inFlight {
		for key := range set {
			pu := units[key]
			if pu == nil || pu.victims == nil || pu.admitted {
				continue
			}
			for v := range pu.victims {
				p.gone = append(p.gone, v)
			}
			var held quota.Vector
			if pu.reserved { // only then is a reservation charged (Scheduler.engine)
				c, _ := engine.Charged(reservationKey(key))
				held = c.Request
			}
			rest := p.nextComing(pu.quota)
			for _, r := range pu.req {
				rest.Request = append(rest.Request, max(r-at(held, len(rest.Request)), 0))
			}
		}
	}
	return len(p.coming) > 0
}

// nextComing appends to p.coming a charge to quotaName with an empty
// request, reusing the request's memory from an earlier collection.
func (p *preemptions) nextComing(quotaName string) *quota.Charge {
	if len(p.coming) < cap(p.coming) {
		p.coming = p.coming[:len(p.coming)+1]
	} else {
		p.coming = append(p.coming, quota.Charge{})
	}
	c := &p.coming[len(p.coming)-1]
	*c = quota.Charge{Quota: quotaName, Request: c.Request[:0]}
	return c
}

// waitForOthers: queue's head waits for a preemption in flight to end.
func (p *preemptions) waitForOthers(queue string) { p.afterOthers[queue] = struct{}{} }

// waitForBorrowers: queue's head is owed its min but found no victims.
func (p *preemptions) waitForBorrowers(queue string) { p.reclaimWaiters[queue] = struct{}{} }

// borrowerAppeared: quotaName may have started borrowing, so quotas owed
// their min may now find victims; their queues are handed to wake.
func (p *preemptions) borrowerAppeared(engine *quota.Engine, quotaName string, wake func(queue string)) {
	if len(p.reclaimWaiters) == 0 || !engine.Borrowing(quotaName) {
		return
	}
	for q := range p.reclaimWaiters {
		wake(q)
	}
	clear(p.reclaimWaiters)
}

// reclaimProtected: a unit admitted less than the reclaim protection ago
// cannot be reclaimed (defaultReclaimProtectTime), so a borrower gets some
// work done before its borrowed capacity is taken back.
func (p *preemptions) reclaimProtected(us *unitState, now time.Time) bool {
	return p.reclaimProtect > 0 && now.Before(p.protectionEnd(us))
}

// protectionEnd is when an admitted unit's reclaim protection ends.
func (p *preemptions) protectionEnd(us *unitState) time.Time {
	admitted := us.u.AdmitTime
	if admitted.IsZero() {
		admitted = us.u.EnqueueTime
	}
	return admitted.Add(p.reclaimProtect)
}

// protectionEnds is when the next admitted unit's reclaim protection ends,
// zero when none is protected: a head that could not reclaim is tried again then.
func (p *preemptions) protectionEnds(units map[string]*unitState, now time.Time) time.Time {
	var next time.Time
	if p.reclaimProtect <= 0 {
		return next
	}
	for _, us := range units {
		if !us.admitted || us.evicting || !p.reclaimProtected(us, now) {
			continue
		}
		if end := p.protectionEnd(us); next.IsZero() || end.Before(next) {
			next = end
		}
	}
	return next
}

// protectUntil: queue's head found only protected victims; it is tried
// again at until.
func (p *preemptions) protectUntil(queue string, until time.Time) { p.protectedUntil[queue] = until }

// wakeProtected hands to wake the queues whose head waited for a reclaim
// protection that has ended by now.
func (p *preemptions) wakeProtected(now time.Time, wake func(queue string)) {
	for name, until := range p.protectedUntil {
		if !now.Before(until) {
			delete(p.protectedUntil, name)
			wake(name)
		}
	}
}

// addPatient: qs's head (qs.patient) waits out its preemption delay.
func (p *preemptions) addPatient(qs *queueState) { p.patient[qs] = struct{}{} }

// dropPatient: qs no longer has a patient head.
func (p *preemptions) dropPatient(qs *queueState) { delete(p.patient, qs) }

// nextWakeup is when a delay or a protection of preemption next ends, zero
// if none runs.
func (p *preemptions) nextWakeup() time.Time {
	next := p.patienceEnds()
	for _, until := range p.protectedUntil {
		if next.IsZero() || until.Before(next) {
			next = until
		}
	}
	return next
}

// forgetQueue: qs, named name, is deleted.
func (p *preemptions) forgetQueue(qs *queueState, name string) {
	delete(p.patient, qs)
	delete(p.reclaimWaiters, name)
	delete(p.afterOthers, name)
}

// The preemptor's side of preemptions: what needs the Scheduler's units,
// queues, engine charges or wake-ups. The rest of the Scheduler reaches
// preemption only through the preemption interface (preemption.go).

// holdForPreemptors lowers s.run.free, the headroom of qs's quota, to leave
// every preemption in flight its room (preemptions.holdRoom).
func (s *preemptor) holdForPreemptors(qs *queueState) {
	s.preemptions.holdRoom(s.engine, s.units, qs, s.run.free)
}

// fitsBesidePreemptions is preemptions.fitsBeside.
func (s *preemptor) fitsBesidePreemptions(quotaName string, req quota.Vector, victims []string) bool {
	return s.preemptions.fitsBeside(s.engine, s.units, quotaName, req, victims)
}

// preemptionInFlight names a unit other than key whose preemption in quota
// is in flight, or "" (preemptions.inFlightOther).
func (s *preemptor) preemptionInFlight(quotaName, key string) string {
	return s.preemptions.inFlightOther(s.units, quotaName, key)
}

// wakeReclaimWaiters: a quota may have started borrowing, so quotas owed
// their min may now find victims.
func (s *preemptor) wakeReclaimWaiters(quotaName string) {
	s.preemptions.borrowerAppeared(s.engine, quotaName, s.turns.wake)
}

// endPreemption: the unit no longer waits for its victims (it was admitted
// or deleted). The victims still leave, but their departure no longer
// concerns it.
func (s *preemptor) endPreemption(us *unitState) {
	if us.victims == nil {
		return
	}
	for v := range us.victims {
		if vs, ok := s.units[v]; ok && vs.evictedFor == us.u.Key {
			vs.evictedFor = ""
		}
	}
	us.victims = nil
	s.unreserve(us)
	s.preemptions.stop(us.u.Key, s.turns.wake, s.wakeQueuesOf)
}

// victimLeft: us, a victim, no longer holds quota. What it held grows its
// preemptor's reservation; once the last victim is gone, the preemptor is
// nominated, to be admitted first in the next cycle.
func (s *preemptor) victimLeft(us *unitState) {
	if p, ok := s.units[us.evictedFor]; ok && p.victims != nil {
		delete(p.victims, us.u.Key)
		if len(p.victims) > 0 && p.reserved {
			s.growReservation(p, us.req)
		}
		if len(p.victims) == 0 && !p.admitted {
			s.preemptions.nominate(p.u.Key)
			s.turns.wake(p.u.Queue)
		}
	}
	if us.evicting || us.evictedFor != "" {
		us.evicting, us.evictedFor = false, ""
	}
}

// growReservation adds what a departed victim held to its preemptor's
// reservation (up to the preemptor's request, and up to what the
// preemptor's quota may still take: a victim elsewhere frees capacity its
// quota's max, or an ancestor's, may not allow), so other queues cannot take
// it while the preemptor's other victims are still leaving.
//
// p is reserved, so the engine holds its reservation. If it does not, that
// is reported with the next Result (the caller, a victim leaving, has no
// error to return) and p holds none from then on.
func (s *preemptor) growReservation(p *unitState, freed quota.Vector) {
	key := reservationKey(p.u.Key)
	c, _ := s.engine.Charged(key) // held, or Resize says it is not
	free, _, err := s.engine.Headroom(p.quota, nil, nil)
	if err != nil {
		return // the quota turned invalid: the reservation stays as it is
	}
	hold := make(quota.Vector, len(p.req))
	for i, r := range p.req {
		hold[i] = min(r, at(c.Request, i)+max(min(at(freed, i), at(free, i)), 0))
	}
	if err := s.engine.Resize(key, hold); err != nil {
		p.reserved = false
		s.run.errs = append(s.run.errs, UnitError{Unit: p.u.Key, Queue: p.u.Queue, Err: bookkeeping(err)})
	}
}

// reserve holds, for a preemptor, the part of its request that is free now
// (s.run.free is its quota's headroom), so that no other unit takes it while the
// victims leave: when they are gone, the preemptor fits. A refused charge
// (a bug) is reported; the preemption goes ahead without the reservation.
func (s *preemptor) reserve(qs *queueState, us *unitState, now time.Time, res *Result) {
	hold := make(quota.Vector, len(us.req))
	for i, r := range us.req {
		if r > 0 && i < len(s.run.free) {
			hold[i] = min(r, max(s.run.free[i], 0))
		}
	}
	if err := s.engine.Charge(quota.Charge{Key: reservationKey(us.u.Key), Quota: qs.quota, Request: hold,
		Priority: us.u.Priority, AdmitTime: now, Namespace: namespaceOf(us.u.Key), Hold: true}); err != nil {
		res.Errors = append(res.Errors, UnitError{Unit: us.u.Key, Queue: qs.spec.Name, Err: bookkeeping(err)})
		return
	}
	us.preempting().reserved = true
}

// unreserve gives back a preemptor's reservation.
func (s *preemptor) unreserve(us *unitState) {
	if !us.reserved {
		return
	}
	us.reserved = false
	if c, ok := s.engine.Charged(reservationKey(us.u.Key)); ok {
		s.engine.Release(c.Key)
		s.turns.released(c.Quota)
	}
}

// reservationPrefix starts the engine key of every reservation. No
// namespace/name has a colon, and UpsertUnit refuses keys that start with
// it, so a reservation never collides with a unit.
const reservationPrefix = "reservation:"

func reservationKey(unit string) string { return reservationPrefix + unit }

// admitNominated admits preemptors whose victims have all left, if they
// fit their quota and the nodes (admitOutOfTurn).
func (s *preemptor) admitNominated(now time.Time, res *Result) {
	for _, key := range s.preemptions.nominatedKeys() {
		us, ok := s.units[key]
		var qs *queueState
		if ok {
			qs = s.queues[us.u.Queue]
		}
		if ok && !us.admitted && us.inQueue && qs != nil && qs.gateShut() {
			// Its queue's gate is shut: it keeps its reservation and its
			// turn, and is admitted first once the gate opens, whoever
			// heads the queue then.
			continue
		}
		s.preemptions.unnominate(key)
		if !ok || us.admitted {
			continue
		}
		// Admitted or not, its preemption is over: if it no longer fits,
		// its head may look for victims afresh. Out of its queue (the
		// queue deleted), it is over too, or what it asks would stay held
		// against every queue of its tree.
		s.endPreemption(us)
		if !us.inQueue || qs == nil {
			continue
		}
		var err error
		s.run.free, s.run.binding, err = s.engine.Headroom(qs.quota, s.run.free, s.run.binding)
		if err != nil || !quota.Fits(us.req, s.run.free) {
			continue
		}
		s.turns.admitOutOfTurn(qs, us, now, res)
	}
}

// wakeQueuesOf wakes every queue charged to quota.
func (s *preemptor) wakeQueuesOf(quotaName string) {
	for name, qs := range s.queues {
		if qs.quota == quotaName {
			s.turns.wake(name)
		}
	}
}
