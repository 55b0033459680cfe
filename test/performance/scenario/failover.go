package scenario

import (
	"fmt"
	"time"
)

// The failover scenarios' names. Like declared they are not in Names:
// -scenarios names them, or all.
const (
	FailoverLargeName = "failover-large"
	RestartLargeName  = "restart-large"
)

// UnitState is the state a set's units are created in.
type UnitState string

// The states a set's units can be created in. The zero one is the
// scenario's schedule: each unit arrives at its time, and koord-queue
// admits it.
const (
	// Waiting: created at once, before koord-queue starts.
	Waiting UnitState = "waiting"
	// Admitted: created at once with the status koord-queue writes on an
	// admission, before it starts; it holds its quota.
	Admitted UnitState = "admitted"
	// Finished: created at once as the runner leaves a unit that ran.
	Finished UnitState = "finished"
)

// Failover is a restart at scale: the cluster already holds units waiting,
// admitted and finished when koord-queue starts (cold); once it has admitted
// AdmitBeforeKill units its leader is killed (SIGKILL), and a new leader
// takes over: the standby, or one replica started again. The run ends once
// the new leader has admitted AdmitAfter units.
type Failover struct {
	// Standby runs two replicas with leader election: the standby takes
	// over from the leader killed. Otherwise one replica without leader
	// election is killed and started again (a cold start).
	Standby         bool
	AdmitBeforeKill int
	AdmitAfter      int
	// MaxToFirstAdmission bounds, for the first start and for the new
	// leader, the time from its start (its leading, for a standby) to its
	// first admission seen.
	MaxToFirstAdmission time.Duration
}

// The failover scenarios' classes: the units already run and finished are
// of 1 cpu; those that run hold their quota for the whole run.
var (
	FailoverFinished = Class{Name: "finished", CPU: 1, Runtime: 150 * time.Millisecond, Priority: 50}
	FailoverRunning  = Class{Name: "running", CPU: 1, Runtime: time.Hour, Priority: 50}
)

// FailoverLarge is issue 31's restart at scale on the large-scale shape (10
// parents of 100 leaf quotas of min 20 and max 120): per leaf 20 units
// finished, 10 admitted and holding 1 cpu each, and 20 waiting (13 small,
// 5 medium, 2 large, as large-scale's): 50,000 units, 20,000 waiting. They
// are created in those states before koord-queue starts, which a run that
// admitted 30,000 units at QPS 50 would take 10 minutes to reach. Every
// leaf has room for its waiting units at once: the first cycle admits.
//
// With standby, two replicas elect a leader and the standby takes over
// (the lease of the one killed must expire first: 10 s by default, not
// counted in its start); else a single replica is killed and started
// again. The short variant has 2 parents of 10 leaves: 1,000 units.
func FailoverLarge(short, standby bool) Scenario {
	parents, children := 10, 100
	s := Scenario{
		Name:    FailoverLargeName,
		Title:   "Failover at scale: 50,000 units (20,000 waiting), the leader killed, the standby takes over",
		QPS:     50,
		Burst:   100,
		Timeout: 30 * time.Minute,
		Failover: &Failover{
			Standby: standby, AdmitBeforeKill: 500, AdmitAfter: 500,
			MaxToFirstAdmission: 10 * time.Second,
		},
		// Units wait when the run ends: it ends once the new leader
		// admitted.
		Bounds: Bounds{NoReadmission: true, SomeUnitsWait: true, MaxPeakRSSMiB: 1024},
	}
	if !standby {
		s.Name = RestartLargeName
		s.Title = "Restart at scale: 50,000 units (20,000 waiting), the one replica killed and started again"
	}
	if short {
		parents, children = 2, 10
		s.Timeout = 5 * time.Minute
		s.Failover.AdmitBeforeKill, s.Failover.AdmitAfter = 100, 100
		s.Bounds.MaxPeakRSSMiB = 300
	}
	s.addKueueCohorts(parents, children)
	s.Sets = []Set{
		{Class: FailoverFinished, Count: 20, State: Finished},
		{Class: FailoverRunning, Count: 10, State: Admitted},
		{Class: LargeScaleSmall, Count: 13, State: Waiting},
		{Class: LargeScaleMedium, Count: 5, State: Waiting},
		{Class: LargeScaleLarge, Count: 2, State: Waiting},
	}
	return s
}

// CountIn is how many units the run creates in state.
func (s *Scenario) CountIn(state UnitState) int {
	n := 0
	for _, set := range s.Sets {
		if set.State == state {
			n += set.Count
		}
	}
	return n * len(s.Leaves())
}

// validateFailover reports a failover scenario that cannot run.
func (s *Scenario) validateFailover() []string {
	var errs []string
	f := s.Failover
	for _, set := range s.Sets {
		if (f == nil) != (set.State == "") {
			errs = append(errs, fmt.Sprintf("class %s: units created in a state (%q) are for a failover scenario, and only they", set.Class.Name, set.State))
		}
	}
	if f != nil && (f.AdmitBeforeKill <= 0 || f.AdmitAfter <= 0 || f.AdmitBeforeKill+f.AdmitAfter > s.CountIn(Waiting)) {
		errs = append(errs, fmt.Sprintf("failover: admissions before and after the kill (%d and %d) must be positive and at most the %d units waiting", f.AdmitBeforeKill, f.AdmitAfter, s.CountIn(Waiting)))
	}
	return errs
}
