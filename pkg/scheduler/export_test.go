package scheduler

// ReservationKey is the engine key of a preemptor's reservation, for tests
// that break the engine's bookkeeping on purpose.
func ReservationKey(unit string) string { return reservationKey(unit) }

// NoSettle makes s give every woken queue its turn (line.go), the reference
// the settled queues are checked against.
func NoSettle(s *Scheduler) { s.noSettle = true }
