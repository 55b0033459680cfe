package forecast

// SetUp is Run's replay of in before its first cycle: the most a forecast
// holds.
func SetUp(in Input) any { return newReplay(in) }
