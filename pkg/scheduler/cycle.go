package scheduler

import (
	"container/heap"
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
		s.preemption.endPatience(p) // its delay is over: from this turn on it may evict
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
		s.preemption.endPatience(p) // another unit heads the queue now
		return true                 // what it held is free: offer again
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
func (s *Scheduler) headWaitsForQuota(qs *queueState, off policy.Offer, res *Result) {
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
func (s *Scheduler) admit(qs *queueState, key string, now time.Time, res *Result) error {
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
	s.preemption.withdraw(us)
	s.preemption.endPatience(us)
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
func (s *Scheduler) admitRefused(qs *queueState, key string, err error, res *Result) {
	res.Errors = append(res.Errors, UnitError{Unit: key, Queue: qs.spec.Name, Err: err})
	s.headWaits(qs, key, words("not admitted: "+err.Error()), res)
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
	next := s.preemption.nextWakeup()
	for name := range s.timed {
		qs := s.queues[name]
		if !qs.nextPromo.IsZero() && (next.IsZero() || qs.nextPromo.Before(next)) {
			next = qs.nextPromo
		}
	}
	return next
}
