package scheduler

import (
	"container/heap"
	"slices"
	"strings"
	"time"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/quota"
)

// turns are the Scheduler's cycle: which queues take a turn and in what
// order (the dirty queues, the parked ones and the line: line.go,
// parked.go), each turn's steps, and the Placer's part in them
// (placement.go). They own that state; they read the Scheduler's engine,
// units and queues, and ask its preemption, which asks them back through
// queueTurns (preemption.go). The Scheduler's events wake queues through
// them (wake, released).
type turns struct {
	engine *quota.Engine
	// queues, units, sizer and preemption are the Scheduler's.
	queues     map[string]*queueState
	units      map[string]*unitState
	sizer      sizer
	preemption preemption
	// dirty queues are reconsidered by the next cycle.
	dirty map[string]struct{}
	// timed: queues with starvation protection, the only ones with a
	// time-based rule.
	timed map[string]struct{}
	// cycleState is the running cycle's, shared with preemption.
	cycleState
	// placer decides whether a unit fits the nodes (placement.go); aside
	// are the units it refused in the running cycle, set aside from their
	// queues' order until it ends; unplaced are the queues of units it
	// refused, for WakeUnplaced.
	placer   Placer
	aside    []asideUnit
	unplaced map[string]struct{}

	// parked: the queues that wait for an event, and what wakes them
	// (parked.go).
	parked parkedQueues
	// line is the running cycle's line, nil between cycles.
	line    *queueLine
	lineBuf queueLine
}

// cycleState is what the cycles share with preemption (preemption.go). It
// has no methods.
type cycleState struct {
	// cycle counts the cycles run.
	cycle int
	// free and binding are the headroom of the quota whose turn it is, and
	// the quotas that bind it (quota.Engine.Headroom), kept from turn to
	// turn for their room.
	free    quota.Vector
	binding []string
	// errs are bookkeeping errors met outside a cycle, for the next Result.
	errs []UnitError
}

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
	return s.turns.run(now, limit)
}

// run is CycleLimited.
func (s *turns) run(now time.Time, limit int) Result {
	s.cycle++
	s.engine.MarkLoaded() // quota changes from now on are seen in order
	var res Result
	res.Errors, s.errs = s.errs, nil
	s.wakePromoted(now)
	s.preemption.beginCycle(now, &res)
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
	s.restoreAside()
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
func (s *turns) turn(qs *queueState, now time.Time, res *Result) bool {
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
func (s *turns) tryHead(qs *queueState, now time.Time, res *Result) bool {
	name := qs.spec.Name
	if p := qs.patient; p != nil && !now.Before(p.patientUntil) {
		s.preemption.unitChanged(p, patienceOver) // its delay is over: from this turn on it may evict
	}
	if err := s.engine.Err(qs.quota); err != nil {
		s.headWaits(qs, qs.q.Offer(now, nil).Head.Key, words(err.Error()), res)
		return false // woken when a quota changes
	}
	if qs.gateShut() {
		off := qs.q.Offer(now, nil)
		if qs.spec.Config.EnablePreemption && s.preemption.displace(qs, off.Head.Key, now, res) {
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
	s.preemption.holdForPreemptors(qs)
	off := qs.q.Offer(now, s.free)
	if !off.HasHead {
		return false
	}
	if p := qs.patient; p != nil && p.u.Key != off.Head.Key {
		s.preemption.unitChanged(p, patienceOver) // another unit heads the queue now
		return true                               // what it held is free: offer again
	}
	headFits := off.HasAdmit && off.Admit.Key == off.Head.Key
	preempting := false
	if !headFits {
		var reserved bool
		preempting, reserved = s.preemption.headPreempts(qs, off.Head.Key, now, res)
		if reserved {
			return true // the reservation changed the headroom: offer again
		}
	}
	if off.HasAdmit {
		if why, ok := s.place(s.units[off.Admit.Key]); !ok {
			return s.placementRefused(qs, off, off.Admit.Key, why, res)
		}
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

// headWaitsForQuota records why the head does not fit. Explaining is the
// costly part of a parked turn, so it is redone only when the cause changed:
// another head, or other quotas holding it back. Numbers that merely drift
// (usage) are refreshed by WaitReason, which explains afresh.
func (s *turns) headWaitsForQuota(qs *queueState, off policy.Offer, res *Result) {
	us := s.units[off.Head.Key]
	if w := us.quotaWait; us.reason != "" && w != nil && w.band == off.Band && equalStrings(w.cause, s.binding) && w.heldFor == s.preemption.roomHeldFor() {
		return
	}
	why := words(s.explain(qs, off))
	heldFor := s.preemption.roomHeldFor()
	if heldFor != "" && s.engine.Explain(qs.quota, us.need) == "" {
		// It fits but for what a preemption in flight is owed.
		why = say("waits for the preemption by %s in quota %s to end: the quota it needs is held for it", unitRef(heldFor), s.units[heldFor].quota)
	}
	s.headWaits(qs, us.u.Key, why, res)
	us.quotaWait = &quotaWait{band: off.Band, cause: slices.Clone(s.binding), heldFor: heldFor}
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

func (s *turns) explain(qs *queueState, off policy.Offer) string {
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
func (s *turns) headWaits(qs *queueState, key string, why Text, res *Result) {
	us, ok := s.units[key]
	if !ok {
		return
	}
	reason := why.For(namespaceOf(key))
	if reason == us.reason {
		return
	}
	us.reason, us.quotaWait = reason, nil
	res.Waits = append(res.Waits, Wait{Unit: key, Queue: qs.spec.Name, Reason: reason})
}

// admit charges a waiting unit and records its admission: whole if it fits
// the headroom s.free, otherwise partially (fit). The charge comes first: if
// the engine refuses it, nothing has changed and the error (a bug, wrapping
// ErrBookkeeping) is returned.
func (s *turns) admit(qs *queueState, key string, now time.Time, res *Result) error {
	us := s.units[key]
	held, partial := s.sizer.fit(us, s.free)
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
	s.preemption.unitChanged(us, preemptionOver)
	s.preemption.unitChanged(us, patienceOver)
	us.newWait()
	qs.q.Take(key)
	us.inQueue = false
	us.admitted = true
	us.u.AdmitTime = now
	us.reason, us.quotaWait = "", nil
	qs.admitted++
	qs.scheduled++
	if !us.u.Running {
		qs.notRunning[key] = struct{}{}
	}
	res.Admissions = append(res.Admissions, Admission{Unit: key, Queue: qs.spec.Name, Quota: qs.quota, Partial: partial})
	s.preemption.wakeReclaimWaiters(qs.quota)
	return nil
}

// admitRefused: the engine would not charge a unit being admitted. The unit
// keeps its place and waits, saying why, and the error goes to the
// controller. The queue is tried again at its next event.
func (s *turns) admitRefused(qs *queueState, key string, err error, res *Result) {
	res.Errors = append(res.Errors, UnitError{Unit: key, Queue: qs.spec.Name, Err: err})
	s.headWaits(qs, key, words("not admitted: "+err.Error()), res)
}

func (s *turns) wakePromoted(now time.Time) {
	for name := range s.timed {
		qs := s.queues[name]
		if !qs.nextPromo.IsZero() && !now.Before(qs.nextPromo) {
			qs.nextPromo = time.Time{}
			s.wake(name)
		}
	}
}

func (s *turns) nextWakeup() time.Time {
	next := s.preemption.nextWakeup()
	for name := range s.timed {
		qs := s.queues[name]
		if !qs.nextPromo.IsZero() && (next.IsZero() || qs.nextPromo.Before(next)) {
			next = qs.nextPromo
		}
	}
	return next
}

// configured: the queue spec.Name was added or changed; starvation
// protection gives it a time-based rule (wakePromoted).
func (s *turns) configured(spec QueueSpec) {
	if spec.Config.Policy == schedulingv1alpha1.QueuePolicyIntelligent && spec.Config.LowPriorityMaxWait > 0 {
		s.timed[spec.Name] = struct{}{}
	} else {
		delete(s.timed, spec.Name)
	}
}

// forgetQueue: qs, named name, is deleted. It is parked no more and takes
// no turn.
func (s *turns) forgetQueue(qs *queueState, name string) {
	s.parked.unpark(qs, s.line)
	delete(s.timed, name)
	delete(s.dirty, name)
}

// released wakes queues held back by a limit of the quota or an ancestor.
func (s *turns) released(quotaName string) {
	s.engine.Ancestors(quotaName, func(name string) {
		s.parked.released(name, s.line, s.wake)
	})
}

// wake has queue take a turn in the next cycle: it is parked no more.
func (s *turns) wake(queue string) {
	qs, ok := s.queues[queue]
	if !ok {
		return
	}
	s.parked.unpark(qs, s.line)
	s.dirty[queue] = struct{}{}
}

// wakeAll wakes every queue.
func (s *turns) wakeAll() {
	for name := range s.queues {
		s.wake(name)
	}
}
