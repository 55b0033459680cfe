package scheduler

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"time"
)

// ReservationKey is the engine key of a preemptor's reservation, for tests
// that break the engine's bookkeeping on purpose.
func ReservationKey(unit string) string { return reservationKey(unit) }

// SharedPreemptStateWritten reports whether the preemptState every unit
// outside preemptions shares was written: a write that skipped preempting.
func SharedPreemptStateWritten() bool { return !reflect.ValueOf(noPreemption).IsZero() }

// NoSettle makes s give every woken queue its turn (parked.go), the reference
// the settled queues are checked against.
func NoSettle(s *Scheduler) { s.turns.parked.noSettle = true }

// StaleSettledHeads lists the settled queues whose key holds another head
// than their policy serves first now (line.go: a head change must
// unsettle a queue first), as "queue: key (prio, since), head (prio,
// since)".
func StaleSettledHeads(s *Scheduler, now time.Time) []string {
	var stale []string
	for _, groups := range s.turns.parked.groups {
		for _, g := range groups {
			g.members.each(func(m *queueState) {
				p, t, ok := m.q.HeadRank(now)
				if !ok || p != m.key.headPrio || t != m.key.headSince {
					stale = append(stale, fmt.Sprintf("%s: key (%d, %d), head (%d, %d, %t)",
						m.spec.Name, m.key.headPrio, m.key.headSince, p, t, ok))
				}
			})
		}
	}
	sort.Strings(stale)
	return stale
}

// PatientHead is a head waiting out its preemption delay (patience.go):
// its queue and when the delay ends.
type PatientHead struct {
	Unit, Queue string
	Until       time.Time
}

// PatientHeads lists the heads waiting out their preemption delay, in the
// order feedPatient gives them what frees.
func PatientHeads(s *Scheduler) []PatientHead {
	var order []*queueState
	for qs := range s.preemption.(*preemptor).preemptions.patient {
		order = append(order, qs)
	}
	slices.SortFunc(order, fedFirst)
	out := make([]PatientHead, 0, len(order))
	for _, qs := range order {
		out = append(out, PatientHead{Unit: qs.patient.u.Key, Queue: qs.spec.Name, Until: qs.patient.patientUntil})
	}
	return out
}
