package scheduler

import "time"

// preemption is all the rest of the Scheduler asks of preemption: the
// cycle's steps that may evict, what it is told as units come and go, and
// the little it reads back. The preemptor answers it (preempt.go,
// preemptions.go, patience.go); a reader who wants who is evicted for whom,
// and when, starts there.
type preemption interface {
	// beginCycle, before any queue's turn: wakes the queues whose victims'
	// reclaim protection ended, admits the preemptors whose victims are
	// gone, and feeds the patient heads what freed.
	beginCycle(now time.Time, res *Result)
	// holdForPreemptors lowers s.free, the headroom of qs's quota, to leave
	// every preemption in flight its room.
	holdForPreemptors(qs *queueState)
	// headPreempts: qs's head key does not fit; it may look for victims.
	headPreempts(qs *queueState, key string, now time.Time, res *Result) (waiting, reserved bool)
	// displace: qs's gate is shut; its head key may evict what holds it.
	displace(qs *queueState, key string, now time.Time, res *Result) bool

	// endPatience: us no longer waits out its preemption delay.
	endPatience(us *unitState)
	// withdraw: us's preemption is over and us is no longer nominated (it
	// was admitted, deleted, or left its queue).
	withdraw(us *unitState)
	// victimLeft: us, a victim, no longer holds quota.
	victimLeft(us *unitState)
	// unreserve gives back what us holds while its victims leave.
	unreserve(us *unitState)
	// wakeReclaimWaiters: quota may have started borrowing.
	wakeReclaimWaiters(quotaName string)
	// forgetQueue: qs, named name, is deleted.
	forgetQueue(qs *queueState, name string)

	// preemptionInFlight names a unit other than key whose preemption in
	// quota is in flight, or "".
	preemptionInFlight(quotaName, key string) string
	// roomHeldFor is the preemptor room was last held for, or "".
	roomHeldFor() string
	// nextWakeup is the earliest time a preemption rule changes, or zero.
	nextWakeup() time.Time
	// setReclaimProtection is Scheduler.SetReclaimProtection.
	setReclaimProtection(d time.Duration)
}

// preemptor is the Scheduler's preemption. It keeps the preemptions' books
// (preemptions) and reads and charges the rest through the Scheduler.
type preemptor struct {
	*Scheduler
	preemptions preemptions
}

var _ preemption = (*preemptor)(nil)

func newPreemptor(s *Scheduler) *preemptor {
	return &preemptor{Scheduler: s, preemptions: newPreemptions()}
}

func (s *preemptor) beginCycle(now time.Time, res *Result) {
	s.preemptions.wakeProtected(now, s.wake)
	s.admitNominated(now, res)
	s.feedPatient(now, res)
}

func (s *preemptor) withdraw(us *unitState) {
	s.endPreemption(us)
	s.preemptions.unnominate(us.u.Key)
}

func (s *preemptor) forgetQueue(qs *queueState, name string) { s.preemptions.forgetQueue(qs, name) }

func (s *preemptor) roomHeldFor() string { return s.preemptions.roomHeldFor() }

func (s *preemptor) nextWakeup() time.Time { return s.preemptions.nextWakeup() }

func (s *preemptor) setReclaimProtection(d time.Duration) { s.preemptions.reclaimProtect = d }
