package scheduler

import (
	"time"

	"github.com/koord-queue/koord-queue/pkg/quota"
)

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

	// unitChanged: e happened to us (unitEvent).
	unitChanged(us *unitState, e unitEvent)
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

// unitEvent is what preemption is told of a unit as it comes and goes
// (preemption.unitChanged).
type unitEvent int

const (
	// patienceOver: the unit no longer waits out its preemption delay (the
	// delay is over, another unit heads its queue, or its queue's quota
	// changed); what it held meanwhile is given back.
	patienceOver unitEvent = iota
	// leftQueue: the unit left its queue's order; what it held, waiting out
	// its delay or while its victims leave, is given back.
	leftQueue
	// preemptionOver: the unit's preemption is over and it is no longer
	// nominated (it was admitted, deleted, or left its queue).
	preemptionOver
	// victimGone: the unit, a victim, no longer holds quota.
	victimGone
)

// queueTurns is what the preemptor asks of the Scheduler's turns: to wake
// a queue, to say why its head waits, to admit a unit out of its queue's
// turn where the nodes have room, to wake the queues a released charge
// made room for, and to ask the Placer whether evicting would make room
// (placement.go).
type queueTurns interface {
	wake(queue string)
	headWaits(qs *queueState, key string, why Text, res *Result)
	admitOutOfTurn(qs *queueState, us *unitState, now time.Time, res *Result)
	released(quotaName string)
	wouldPlace(us *unitState, victims []string) (why string, ok bool)
	unplacedWaits(qs *queueState, key string, why Text, res *Result)
}

var _ queueTurns = (*turns)(nil)

// preemptor is the Scheduler's preemption. It keeps the preemptions' books
// (preemptions), reads the Scheduler's units and queues, charges the
// engine for reservations, and asks the rest of the Scheduler's turns.
type preemptor struct {
	engine *quota.Engine
	// units and queues are the Scheduler's.
	units  map[string]*unitState
	queues map[string]*queueState
	// run is the Scheduler's running cycle: its number, the headroom of the
	// quota whose turn it is, and the errors met outside a cycle.
	run         *cycleState
	turns       queueTurns // the Scheduler's turns (cycle.go)
	preemptions preemptions
}

var _ preemption = (*preemptor)(nil)

func newPreemptor(t *turns) *preemptor {
	return &preemptor{engine: t.engine, units: t.units, queues: t.queues, run: &t.cycleState, turns: t, preemptions: newPreemptions()}
}

func (s *preemptor) beginCycle(now time.Time, res *Result) {
	s.preemptions.wakeProtected(now, s.turns.wake)
	s.admitNominated(now, res)
	s.feedPatient(now, res)
}

func (s *preemptor) unitChanged(us *unitState, e unitEvent) {
	switch e {
	case patienceOver:
		s.endPatience(us)
	case leftQueue:
		s.endPatience(us)
		s.unreserve(us)
	case preemptionOver:
		s.endPreemption(us)
		s.preemptions.unnominate(us.u.Key)
	case victimGone:
		s.victimLeft(us)
	}
}

func (s *preemptor) forgetQueue(qs *queueState, name string) { s.preemptions.forgetQueue(qs, name) }

func (s *preemptor) roomHeldFor() string { return s.preemptions.roomHeldFor() }

func (s *preemptor) nextWakeup() time.Time { return s.preemptions.nextWakeup() }

func (s *preemptor) setReclaimProtection(d time.Duration) { s.preemptions.reclaimProtect = d }
