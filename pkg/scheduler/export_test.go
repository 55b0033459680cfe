package scheduler

// ReservationKey is the engine key of a preemptor's reservation, for tests
// that break the engine's bookkeeping on purpose.
func ReservationKey(unit string) string { return reservationKey(unit) }
