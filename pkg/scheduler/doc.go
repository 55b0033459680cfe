// Package scheduler is koord-queue's decision core: it composes the quota
// engine (package quota) and the queue policies (package policy) into one
// pure scheduling cycle.
//
// The controller feeds it events (UpsertQuota, SetClusterCapacity,
// UpsertQueue, UpsertUnit, DeleteUnit, ...) and calls Cycle(now) when
// something changed; Cycle returns the decisions to write back: admissions,
// preemptions (victims to suspend, and for whom) and waits (with a reason a
// user understands). Nothing here reads the API server, starts goroutines or
// looks at a clock: time comes in as an argument, so the same events give the
// same decisions.
//
// Retry is event-driven. A queue is reconsidered only when something that
// could change its answer happens: a unit of it changed; usage was released
// under the quota whose limit held it back (the engine names that quota per
// resource); a quota or the cluster's capacity changed; one of its units'
// victims left; an Intelligent low unit passed its maximum wait
// (Result.NextWakeup says when, so the controller can set a timer instead of
// polling).
//
// Admission reserves quota at once (Engine.Admit), before the controller
// writes anything; if the write fails the controller calls ForgetAdmission.
// The engine refusing a charge the scheduler's records say is valid is a
// bug, never swallowed: UpsertUnit returns it, or Result.Errors reports it,
// wrapped in ErrBookkeeping.
// A preemption does not free quota: victims keep holding it until the
// controller reports them gone (UpsertUnit with Admitted false, or
// DeleteUnit), and only then is their preemptor admitted, ahead of everyone
// else, so what was reclaimed for it is not taken by another queue.
//
// Where things are: scheduler.go takes the events and keeps the units;
// the cycle is turns (cycle.go), which runs it and admits, with line.go,
// which orders the queues' turns, and placement.go, which asks the Placer.
// Parts own their state, each a type the Scheduler holds: turns, and in it
// parkedQueues (parked.go), the queues waiting for an event and what wakes
// them, settled groups included; preemptions (preemptions.go, with
// preempt.go and patience.go), who may evict whom and when, and the room
// held meanwhile; orphans (orphans.go), units whose queue does not exist.
//
// A Scheduler is not safe for concurrent use; the controller serialises
// calls (one goroutine, or a mutex).
package scheduler
