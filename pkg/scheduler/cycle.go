package scheduler

import (
	"container/heap"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/quota"
)

// Cycle decides what can be decided now. Its steps:
//
//  1. wake queues whose Intelligent low units passed their maximum wait, or
//     whose head waited for a reclaim protection to end;
//  2. admit preemptors whose victims are all gone, before anyone else, so
//     what was reclaimed for them is theirs;
//  3. order the dirty queues: furthest below their runtime share first
//     (dominant-resource share), then by queue priority, then by their
//     heads' priority, then the earliest enqueued head, then by name;
//  4. give the first queue one turn: its policy offers a unit; admit it if
//     it fits (the queue goes back in line with its new share), otherwise
//     its head waits, may preempt, and the queue is parked until an event
//     that could change its answer;
//  5. repeat 4 until no queue can admit;
//  6. report when a time-based rule next changes an answer.
//
// The same events and the same now give the same Result.
func (s *Scheduler) Cycle(now time.Time) Result {
	return s.CycleLimited(now, -1)
}

// CycleLimited is Cycle deciding at most limit admissions (negative: no
// limit; 0: none, though wake-ups and the preemptors whose victims are gone
// still are).
// Queues whose turn did not come stay dirty and Result.More is true, so the
// next call goes on where this one stopped. A controller that can write
// only so many admissions a second decides no further ahead than that:
// an admission holds its quota from the moment it is decided, and a unit of
// higher priority that arrives meanwhile should get the quota instead.
// Preemptors whose victims are gone are admitted whatever the limit: their
// quota was reclaimed for them.
func (s *Scheduler) CycleLimited(now time.Time, limit int) Result {
	s.cycle++
	s.engine.MarkLoaded() // quota changes from now on are seen in order
	var res Result
	res.Errors, s.errs = s.errs, nil
	s.wakePromoted(now)
	s.wakeProtected(now)
	s.admitNominated(now, &res)
	s.feedPatient(now, &res)
	s.lineBuf = s.lineUp(now)
	line := &s.lineBuf
	s.line = line
	for line.Len() > 0 {
		if limit >= 0 && len(res.Admissions) >= limit {
			s.cutShort(*line) // their turn comes next call
			break
		}
		if (*line)[0].g != nil {
			if !s.evictChanged() {
				s.groupTurn(line)
			}
			continue
		}
		qs := (*line)[0].qs
		if s.turn(qs, now, &res) {
			if line.Len() > 1 {
				qs.share = s.engine.DominantShare(qs.quota)
				qs.headPrio, qs.headSince = qs.headRank(now) // it may have admitted its head
			}
			heap.Fix(line, 0)
		} else {
			heap.Pop(line)
		}
	}
	for i, e := range *line {
		if e.g != nil {
			e.g.entry = nil
		}
		(*line)[i] = nil
	}
	s.lineBuf = (*line)[:0]
	s.line = nil
	res.NextWakeup = s.nextWakeup()
	res.More = len(s.dirty) > 0 || s.parked.woken()
	return res
}

// turn gives one queue one admission attempt. It returns true if a unit was
// admitted (the queue may admit more) or its head just preempted (offer
// again), false when the queue is done and parked; that attempt counts as
// unschedulable in the queue's Attempts (an admission counts in admit).
func (s *Scheduler) turn(qs *queueState, now time.Time, res *Result) bool {
	if qs.q.Len() == 0 {
		return false
	}
	again := s.tryHead(qs, now, res)
	if !again {
		qs.unschedulable++
	}
	return again
}

// tryHead is turn's attempt on a queue that has a head.
func (s *Scheduler) tryHead(qs *queueState, now time.Time, res *Result) bool {
	name := qs.spec.Name
	if p := qs.patient; p != nil && !now.Before(p.patientUntil) {
		s.endPatience(p) // its delay is over: from this turn on it may evict
	}
	if err := s.engine.Err(qs.quota); err != nil {
		s.headWaits(qs, qs.q.Offer(now, nil).Head.Key, words(err.Error()), res)
		return false // woken when a quota changes
	}
	if qs.gateShut() {
		off := qs.q.Offer(now, nil)
		if qs.spec.Config.EnablePreemption && s.displace(qs, off.Head.Key, now, res) {
			return false // woken when its victims are gone
		}
		running := sortedKeys(qs.notRunning)[0]
		var lacks privateNote
		if us := s.units[running]; us != nil && us.u.NotRunning != "" {
			lacks = privateNote{unit: running, note: ": " + us.u.NotRunning}
		}
		s.headWaits(qs, off.Head.Key, say("queue %s waits for %s to be running (wait-for-pods-running)%s", name, unitRef(running), lacks), res)
		return false // woken when that unit runs, leaves or says it lacks less
	}
	var err error
	s.free, s.binding, err = s.engine.Headroom(qs.quota, s.free, s.binding)
	if err != nil {
		return false
	}
	s.holdForPreemptors(qs)
	off := qs.q.Offer(now, s.free)
	if !off.HasHead {
		return false
	}
	if p := qs.patient; p != nil && p.u.Key != off.Head.Key {
		s.endPatience(p) // another unit heads the queue now
		return true      // what it held is free: offer again
	}
	headFits := off.HasAdmit && off.Admit.Key == off.Head.Key
	preempting := false
	if !headFits {
		var reserved bool
		preempting, reserved = s.headPreempts(qs, off.Head.Key, now, res)
		if reserved {
			return true // the reservation changed the headroom: offer again
		}
	}
	if off.HasAdmit {
		if err := s.admit(qs, off.Admit.Key, now, res); err != nil {
			s.admitRefused(qs, off.Admit.Key, err, res)
			return false // offering it again would meet the same refusal
		}
		return true
	}
	// Only limits that hold a unit back are worth waking for: a resource
	// whose headroom covers every waiting request is not one of them.
	maxReq := qs.q.MaxRequest()
	for i := range s.binding {
		if i >= len(maxReq) || maxReq[i] <= s.free[i] {
			s.binding[i] = ""
		}
	}
	if !preempting {
		s.headWaitsForQuota(qs, off, res)
	}
	if b, ok := s.settleable(qs, off.Head.Key, preempting); ok {
		s.settle(qs, b, now)
	} else {
		s.parked.park(qs, s.binding)
	}
	if p, ok := qs.q.NextPromotion(now); ok {
		qs.nextPromo = p
	}
	return false
}

// displace is Koord-Queue's preemption under wait-for-pods-running (with
// enable-queueunit-preemption): a head of higher priority than every
// admitted unit of its queue that does not run yet evicts them all, so
// that the gate opens for it, unless one of them was admitted less than
// defaultReclaimProtectTime ago, or the head would not fit even once they
// are gone. It returns true while the head waits for such victims.
func (s *Scheduler) displace(qs *queueState, key string, now time.Time, res *Result) bool {
	us := s.units[key]
	if len(us.victims) > 0 {
		s.headWaits(qs, key, us.preemptReason, res)
		return true
	}
	if us.victims != nil {
		return false // its victims are gone: it holds its reservation and waits for the gate
	}
	if us.triedCycle == s.cycle || s.preemptionInFlight(qs.quota, key) != "" {
		return false
	}
	us.triedCycle = s.cycle
	var victims []string
	freed := make(quota.Vector, len(us.req))
	for _, k := range sortedKeys(qs.notRunning) {
		v := s.units[k]
		switch {
		case v == nil || v.u.Priority >= us.u.Priority:
			return false
		case v.evicting:
			continue // leaving already: the gate opens when it is gone
		case s.reclaimProtected(v, now):
			s.protectedUntil[qs.spec.Name] = s.protectionEnd(v) // tried again then
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
	if s.free, s.binding, err = s.engine.Headroom(qs.quota, s.free, s.binding); err != nil {
		return false
	}
	s.holdForPreemptors(qs) // startPreemption reserves from it
	for i := range freed {
		freed[i] += at(s.free, i)
	}
	if !quota.Fits(us.req, freed) {
		return false // it would wait for quota once they are gone: evicting them would gain nothing
	}
	if !s.fitsBesidePreemptions(qs.quota, us.req, victims) {
		s.waitForPreemptions(qs, key, res)
		return true
	}
	why := say("for higher-priority unit %s (priority %d), which waits in queue %s for units admitted but not yet running (wait-for-pods-running)", unitRef(key), us.u.Priority, qs.spec.Name)
	s.startPreemption(qs, us, InQueue, victims, "unit(s) not yet running", why, now, res)
	return true
}

// holdForPreemptors lowers s.free, the headroom of qs's quota, to what it
// may admit and still leave every preemption in flight room once its
// victims are gone: the headroom in the state where the victims are
// released and each preemptor holds all it asks for. Victims free their
// quota later, and a unit admitted meanwhile (a queue-mate passing a head
// that does not fit, or a unit of any quota sharing a limit with the
// preemptor's: a child, a parent, a sibling, the cluster) would otherwise
// take the room the preemptor was owed, and it would not fit when its
// victims are gone. A queue whose headroom it lowers is woken when a
// preemption ends, and s.heldFor names the first preemptor, for its head's
// wait reason; otherwise s.heldFor is "".
func (s *Scheduler) holdForPreemptors(qs *queueState) {
	s.heldFor = ""
	if !s.collectInFlight() {
		return
	}
	after, err := s.engine.HeadroomAfter(qs.quota, s.gone, s.coming, s.after)
	s.after = after
	if err != nil {
		return
	}
	lowered := false
	for i := range s.free {
		if h := max(at(after, i), 0); h < s.free[i] {
			s.free[i], lowered = h, true
		}
	}
	if lowered {
		s.afterPreemptions[qs.spec.Name] = struct{}{}
		s.heldFor = s.firstInFlight("")
	}
}

// fitsBesidePreemptions: a unit of quotaName asking req fits once victims
// and the victims of every preemption in flight are gone, beside what
// those preemptors ask for. A second preemption that does not is not
// started: both would evict, and one of them would not be admitted.
func (s *Scheduler) fitsBesidePreemptions(quotaName string, req quota.Vector, victims []string) bool {
	if !s.collectInFlight() {
		return true // the victims were chosen so that it fits
	}
	s.gone = append(s.gone, victims...)
	after, err := s.engine.HeadroomAfter(quotaName, s.gone, s.coming, s.after)
	s.after = after
	return err == nil && quota.Fits(req, after)
}

// collectInFlight fills s.gone with the victims of the preemptions in
// flight and s.coming with what their preemptors ask for beyond what they
// hold already. It returns false when none is in flight.
func (s *Scheduler) collectInFlight() bool {
	s.gone, s.coming = s.gone[:0], s.coming[:0]
	if len(s.preempting) == 0 {
		return false // the common case, on every turn
	}
	for _, q := range slices.Sorted(maps.Keys(s.preempting)) {
		for _, key := range sortedKeys(s.preempting[q]) {
			p := s.units[key]
			if p == nil || p.victims == nil || p.admitted {
				continue
			}
			s.gone = append(s.gone, sortedKeys(p.victims)...)
			held, _ := s.engine.Charged(reservationKey(key))
			rest := make(quota.Vector, len(p.req))
			for i, r := range p.req {
				rest[i] = max(r-at(held.Request, i), 0)
			}
			s.coming = append(s.coming, quota.Charge{Quota: p.quota, Request: rest})
		}
	}
	return len(s.coming) > 0
}

// waitForPreemptions: the head found victims, but would not fit beside the
// preemptions in flight; it waits for one of them to end.
func (s *Scheduler) waitForPreemptions(qs *queueState, key string, res *Result) {
	s.afterPreemptions[qs.spec.Name] = struct{}{}
	first := s.firstInFlight(key)
	s.headWaits(qs, key, say("waits for the preemption by %s in quota %s to end: it would not fit beside it", unitRef(first), s.units[first].quota), res)
}

// firstInFlight names the smallest key, other than key, of a unit whose
// preemption is in flight ("" if none).
func (s *Scheduler) firstInFlight(key string) string {
	var first string
	for _, q := range slices.Sorted(maps.Keys(s.preempting)) {
		if k := s.preemptionInFlight(q, key); k != "" && (first == "" || k < first) {
			first = k
		}
	}
	return first
}

// headPreempts: the policy's head does not fit. Once per cycle it may look
// for victims. waiting is true while the head has victims still leaving;
// reserved is true when it just preempted (and reserved what is free).
func (s *Scheduler) headPreempts(qs *queueState, key string, now time.Time, res *Result) (waiting, reserved bool) {
	us := s.units[key]
	if len(us.victims) > 0 {
		s.headWaits(qs, key, us.preemptReason, res)
		return true, false
	}
	if other := s.preemptionInFlight(qs.quota, key); other != "" {
		// One preemption per quota at a time: each preemptor is judged on
		// what its quota holds, and the other's request is not all held
		// yet, so two at once could each be owed and together not fit,
		// evicting victims for a unit that then cannot be admitted.
		s.headWaits(qs, key, say("waits for the preemption by %s in quota %s to end", unitRef(other), qs.quota), res)
		return true, false
	}
	if qs.patient == us { // its delay is not over (turn ends it when it is)
		s.headWaits(qs, key, us.preemptReason, res)
		return true, false
	}
	if us.triedCycle == s.cycle {
		return false, false // a Priority queue comes back to its head often
	}
	us.triedCycle = s.cycle
	return s.preempt(qs, us, now, res)
}

// headWaitsForQuota records why the head does not fit. Explaining is the
// costly part of a parked turn, so it is redone only when the cause changed:
// another head, or other quotas holding it back. Numbers that merely drift
// (usage) are refreshed by WaitReason, which explains afresh.
func (s *Scheduler) headWaitsForQuota(qs *queueState, off policy.Offer, res *Result) {
	us := s.units[off.Head.Key]
	if us.reason != "" && us.quotaWait && us.band == off.Band && equalStrings(us.cause, s.binding) && us.heldFor == s.heldFor {
		return
	}
	why := words(s.explain(qs, off))
	if s.heldFor != "" && s.engine.Explain(qs.quota, us.need) == "" {
		// It fits but for what a preemption in flight is owed.
		why = say("waits for the preemption by %s in quota %s to end: the quota it needs is held for it", unitRef(s.heldFor), s.units[s.heldFor].quota)
	}
	s.headWaits(qs, us.u.Key, why, res)
	us.quotaWait, us.band, us.heldFor = true, off.Band, s.heldFor
	us.cause = append(us.cause[:0], s.binding...)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (s *Scheduler) explain(qs *queueState, off policy.Offer) string {
	us := s.units[off.Head.Key]
	return s.engine.Explain(qs.quota, us.need) + partialNote(us) + bandNote(off.Band)
}

func bandNote(b policy.Band) string {
	switch b {
	case policy.BandHigh:
		return " (Intelligent: high-priority head; lower units wait behind it)"
	case policy.BandPromoted:
		return " (Intelligent: waited past its maximum wait; served first)"
	}
	return ""
}

// preempt looks for victims for the head: reclaim first (the quota is owed
// its min), then, if the queue allows it, lower-priority units of its own
// quota. waiting and reserved are headPreempts'.
func (s *Scheduler) preempt(qs *queueState, us *unitState, now time.Time, res *Result) (waiting, reserved bool) {
	canEvict := func(key string) bool {
		v, ok := s.units[key]
		return ok && v.admitted && !v.evicting && key != us.u.Key
	}
	kind := Reclaim
	owed := s.engine.WithinMin(qs.quota, us.req)
	var victims []string
	ok := false
	if owed {
		victims, ok = s.engine.ReclaimVictims(qs.quota, us.req, func(key string) bool {
			return canEvict(key) && !s.reclaimProtected(s.units[key], now)
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
	if ok && s.waitToPreempt(qs, us, kind, now, res) {
		return true, true // it waits, holding what is free: offer again
	}
	if !ok {
		if owed {
			s.reclaimWaiters[qs.spec.Name] = struct{}{}
			if until := s.protectionEnds(now); !until.IsZero() {
				s.protectedUntil[qs.spec.Name] = until
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
func (s *Scheduler) startPreemption(qs *queueState, us *unitState, kind PreemptionKind, victims []string, what string, why Text, now time.Time, res *Result) {
	s.reserve(qs, us, now, res)
	us.victims = map[string]struct{}{}
	addKey(s.preempting, qs.quota, us.u.Key)
	for _, v := range victims {
		vs := s.units[v]
		vs.evicting, vs.evictedFor = true, us.u.Key
		us.victims[v] = struct{}{}
	}
	res.Preemptions = append(res.Preemptions, Preemption{
		Preemptor: us.u.Key, Queue: qs.spec.Name, Kind: kind, Victims: victims,
		Reason: say("preempted by %s %s", unitRef(us.u.Key), why),
	})
	us.preemptReason = say("preempting %d %s %s: %s", len(victims), what, why, unitList(victims))
	s.headWaits(qs, us.u.Key, us.preemptReason, res)
}

// reclaimProtected: a unit admitted less than the reclaim protection ago
// cannot be reclaimed (defaultReclaimProtectTime), so a borrower gets some
// work done before its borrowed capacity is taken back.
func (s *Scheduler) reclaimProtected(us *unitState, now time.Time) bool {
	return s.reclaimProtect > 0 && now.Before(s.protectionEnd(us))
}

// protectionEnd is when an admitted unit's reclaim protection ends.
func (s *Scheduler) protectionEnd(us *unitState) time.Time {
	admitted := us.u.AdmitTime
	if admitted.IsZero() {
		admitted = us.u.EnqueueTime
	}
	return admitted.Add(s.reclaimProtect)
}

// reserve holds, for a preemptor, the part of its request that is free now
// (s.free is its quota's headroom), so that no other unit takes it while the
// victims leave: when they are gone, the preemptor fits. A refused charge
// (a bug) is reported; the preemption goes ahead without the reservation.
func (s *Scheduler) reserve(qs *queueState, us *unitState, now time.Time, res *Result) {
	hold := make(quota.Vector, len(us.req))
	for i, r := range us.req {
		if r > 0 && i < len(s.free) {
			hold[i] = min(r, max(s.free[i], 0))
		}
	}
	if err := s.engine.Charge(quota.Charge{Key: reservationKey(us.u.Key), Quota: qs.quota, Request: hold,
		Priority: us.u.Priority, AdmitTime: now, Namespace: namespaceOf(us.u.Key), Hold: true}); err != nil {
		res.Errors = append(res.Errors, UnitError{Unit: us.u.Key, Queue: qs.spec.Name, Err: bookkeeping(err)})
		return
	}
	us.reserved = true
}

// unreserve gives back a preemptor's reservation.
func (s *Scheduler) unreserve(us *unitState) {
	if !us.reserved {
		return
	}
	us.reserved = false
	if c, ok := s.engine.Charged(reservationKey(us.u.Key)); ok {
		s.engine.Release(c.Key)
		s.released(c.Quota)
	}
}

// reservationPrefix starts the engine key of every reservation. No
// namespace/name has a colon, and UpsertUnit refuses keys that start with
// it, so a reservation never collides with a unit.
const reservationPrefix = "reservation:"

func reservationKey(unit string) string { return reservationPrefix + unit }

// namespaceOf is the namespace of a unit's key (namespace/name): the engine
// counts what the unit holds, or what is reserved for it, there too
// (Engine.NamespaceUsed).
func namespaceOf(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}

// headWaits records why the unit key waits, rendered for its namespace
// (text.go): its status, which that namespace reads, names no unit of
// another.
func (s *Scheduler) headWaits(qs *queueState, key string, why Text, res *Result) {
	us, ok := s.units[key]
	if !ok {
		return
	}
	reason := why.For(namespaceOf(key))
	if reason != us.reason {
		us.quotaWait = false
	}
	us.reason = reason
	if us.reported != reason {
		us.reported = reason
		res.Waits = append(res.Waits, Wait{Unit: key, Queue: qs.spec.Name, Reason: reason})
	}
}

// admit charges a waiting unit and records its admission: whole if it fits
// the headroom s.free, otherwise partially (fit). The charge comes first: if
// the engine refuses it, nothing has changed and the error (a bug, wrapping
// ErrBookkeeping) is returned.
func (s *Scheduler) admit(qs *queueState, key string, now time.Time, res *Result) error {
	us := s.units[key]
	held, partial := s.fit(us, s.free)
	c := quota.Charge{Key: key, Quota: qs.quota, Request: held, Priority: us.u.Priority, AdmitTime: now, Namespace: namespaceOf(key)}
	if partial == nil {
		if err := s.engine.Admit(c); err != nil {
			return bookkeeping(err)
		}
	} else {
		// Admit moves the whole request from pending to used; only part
		// of it is used, and none of it waits any more.
		if err := s.engine.Charge(c); err != nil {
			return bookkeeping(err)
		}
		s.engine.RemovePending(qs.quota, us.req)
	}
	us.req, us.need = held, held
	s.endPreemption(us)
	s.endPatience(us)
	us.patientUntil = time.Time{}
	qs.q.Take(key)
	us.inQueue = false
	us.admitted = true
	us.u.AdmitTime = now
	us.reason, us.reported, us.quotaWait = "", "", false
	delete(s.nominated, key)
	qs.admitted++
	qs.scheduled++
	if !us.u.Running {
		qs.notRunning[key] = struct{}{}
	}
	res.Admissions = append(res.Admissions, Admission{Unit: key, Queue: qs.spec.Name, Quota: qs.quota, Partial: partial})
	s.wakeReclaimWaiters(qs.quota)
	return nil
}

// admitRefused: the engine would not charge a unit being admitted. The unit
// keeps its place and waits, saying why, and the error goes to the
// controller. The queue is tried again at its next event.
func (s *Scheduler) admitRefused(qs *queueState, key string, err error, res *Result) {
	res.Errors = append(res.Errors, UnitError{Unit: key, Queue: qs.spec.Name, Err: err})
	s.headWaits(qs, key, words("not admitted: "+err.Error()), res)
}

// admitNominated admits preemptors whose victims have all left, if they fit.
func (s *Scheduler) admitNominated(now time.Time, res *Result) {
	for _, key := range sortedKeys(s.nominated) {
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
		delete(s.nominated, key)
		if !ok || us.admitted || !us.inQueue || qs == nil {
			continue
		}
		// Admitted or not, its preemption is over: if it no longer fits,
		// its head may look for victims afresh.
		s.endPreemption(us)
		var err error
		s.free, s.binding, err = s.engine.Headroom(qs.quota, s.free, s.binding)
		if err != nil || !quota.Fits(us.req, s.free) {
			continue
		}
		if err := s.admit(qs, key, now, res); err != nil {
			s.admitRefused(qs, key, err, res)
		}
	}
}

// protectionEnds is when the next admitted unit's reclaim protection ends,
// zero when none is protected: a head that could not reclaim is tried again then.
func (s *Scheduler) protectionEnds(now time.Time) time.Time {
	var next time.Time
	if s.reclaimProtect <= 0 {
		return next
	}
	for _, us := range s.units {
		if !us.admitted || us.evicting || !s.reclaimProtected(us, now) {
			continue
		}
		if end := s.protectionEnd(us); next.IsZero() || end.Before(next) {
			next = end
		}
	}
	return next
}

// wakeProtected wakes queues whose head waited for a reclaim protection to end.
func (s *Scheduler) wakeProtected(now time.Time) {
	for name, until := range s.protectedUntil {
		if !now.Before(until) {
			delete(s.protectedUntil, name)
			s.wake(name)
		}
	}
}

func (s *Scheduler) wakePromoted(now time.Time) {
	for name := range s.timed {
		qs := s.queues[name]
		if !qs.nextPromo.IsZero() && !now.Before(qs.nextPromo) {
			qs.nextPromo = time.Time{}
			s.wake(name)
		}
	}
}

func (s *Scheduler) nextWakeup() time.Time {
	next := s.patienceEnds()
	for _, until := range s.protectedUntil {
		if next.IsZero() || until.Before(next) {
			next = until
		}
	}
	for name := range s.timed {
		qs := s.queues[name]
		if !qs.nextPromo.IsZero() && (next.IsZero() || qs.nextPromo.Before(next)) {
			next = qs.nextPromo
		}
	}
	return next
}
