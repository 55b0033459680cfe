package scheduler

import (
	"fmt"
	"sort"
	"time"
)

// ReservationKey is the engine key of a preemptor's reservation, for tests
// that break the engine's bookkeeping on purpose.
func ReservationKey(unit string) string { return reservationKey(unit) }

// NoSettle makes s give every woken queue its turn (line.go), the reference
// the settled queues are checked against.
func NoSettle(s *Scheduler) { s.noSettle = true }

// StaleSettledHeads lists the settled queues whose key holds another head
// than their policy serves first now (line.go: a head change must
// unsettle a queue first), as "queue: key (prio, since), head (prio,
// since)".
func StaleSettledHeads(s *Scheduler, now time.Time) []string {
	var stale []string
	for _, groups := range s.settledAt {
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
	Priority    int32
	Until       time.Time
}

// PatientHeads lists the heads waiting out their preemption delay, in the
// order feedPatient gives them what frees: higher priority first, then the
// one whose delay ends first, then by key.
func PatientHeads(s *Scheduler) []PatientHead {
	var out []PatientHead
	for qs := range s.patient {
		us := qs.patient
		out = append(out, PatientHead{Unit: us.u.Key, Queue: qs.spec.Name, Priority: us.u.Priority, Until: us.patientUntil})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		if !a.Until.Equal(b.Until) {
			return a.Until.Before(b.Until)
		}
		return a.Unit < b.Unit
	})
	return out
}
