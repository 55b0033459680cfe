// Package scenario describes koord-queue's performance scenarios as plain
// data: the quota tree, which units arrive in each leaf quota and when, how
// long each runs, koord-queue's API budget, and the bounds a run is held to.
// The harness runs them; the checker measures them against Bounds.
package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Scenario is one run of the harness.
type Scenario struct {
	// Name is how the command line and the result name the run.
	Name string
	// Title is one line for the summary.
	Title string
	// QPS and Burst limit koord-queue's client to the API server.
	QPS   float64
	Burst int
	// ClusterCPU is the allocatable cpu of the one fake Node, so the root
	// quota's capacity (cores).
	ClusterCPU int64
	// Quotas, parents before children. Units go to the leaves.
	Quotas []Quota
	// Sets are the units every leaf quota receives.
	Sets []Set
	// JobPodSets: each unit also carries the pod set koord-queue-controllers
	// writes for a one-pod batch Job (its pod template), not its request
	// alone, to see what the templates cost koord-queue's memory.
	JobPodSets bool
	// Failover, when set, creates the units in their sets' states before
	// koord-queue starts, then kills its leader once (harness's failover
	// run) instead of creating units on a schedule.
	Failover *Failover
	// Restarts kills (SIGKILL) and restarts koord-queue this many times,
	// spread evenly over the admissions.
	Restarts int
	// MeasureForecast has the harness read koord-queue's forecast of every
	// waiting unit (the visibility API) and report its error against the
	// admissions seen, whatever the command line says.
	MeasureForecast bool
	// Churn plays koord-scheduler while the units run; zero: it is not there.
	Churn KoordSchedulerChurn
	// Racks, when set, shapes the kwok nodes of a scenario on the local
	// cluster as a topology of blocks, racks and hosts.
	Racks *Racks
	// Timeout bounds the whole run; a run that has not finished by then fails.
	Timeout time.Duration
	// Bounds the checker holds the run to.
	Bounds Bounds
	// Reference is what others measured on the same shape, for the summary.
	Reference string
}

// Quota is one ElasticQuota (cpu only, in cores).
type Quota struct {
	Name string
	// Parent is empty for a quota under the root.
	Parent   string
	Min, Max int64
	// Preemption sets koord-queue/enable-queueunit-preemption and
	// koord-queue/preempt-running: a head may evict lower-priority admitted
	// units of its own quota, running or not, as Kueue's
	// withinClusterQueue: LowerPriority does.
	Preemption bool
	// Topology, when set, is the Topology the quota names
	// (koord-queue/topology).
	Topology string
}

// Racks are kwok nodes as a cloud provider labels them: Blocks blocks of
// RacksPerBlock racks of HostsPerRack nodes, each of HostCPU cores, labelled
// with their block and rack (a rack's label names its block too, so it is
// unique in the cluster).
type Racks struct {
	Blocks, RacksPerBlock, HostsPerRack int
	HostCPU                             int64
}

// Nodes is how many nodes there are.
func (r Racks) Nodes() int { return r.Blocks * r.RacksPerBlock * r.HostsPerRack }

// Labels are node i's block and rack label values: hosts are numbered rack
// by rack, racks block by block.
func (r Racks) Labels(i int) (block, rack string) {
	b, k := i/(r.RacksPerBlock*r.HostsPerRack), i/r.HostsPerRack%r.RacksPerBlock
	return fmt.Sprintf("b%d", b), fmt.Sprintf("b%d-r%d", b, k)
}

// Nominal is what usage is measured against: the min a quota is
// guaranteed (Kueue's nominal quota), or its max when it has no min.
func (q Quota) Nominal() int64 {
	if q.Min > 0 {
		return q.Min
	}
	return q.Max
}

// KoordSchedulerChurn is koord-scheduler rewriting ElasticQuotas' figures:
// every Interval, Quotas ElasticQuotas (the scenario's own first, then
// ChurnQuotas, extra ones without units) are merge-patched as its
// elasticquota plugin patches them: the runtime, request, ... annotations
// and status.used, with values that change every round.
type KoordSchedulerChurn struct {
	Quotas   int
	Interval time.Duration
}

// ChurnQuotas names the extra ElasticQuotas the churn needs beyond the
// scenario's own: they hold no units.
func (s *Scenario) ChurnQuotas() []string {
	var names []string
	for i := range s.Churn.Quotas - len(s.Quotas) {
		names = append(names, fmt.Sprintf("churn-%04d", i))
	}
	return names
}

// Class is a kind of unit.
type Class struct {
	Name     string
	CPU      int64 // cores
	Runtime  time.Duration
	Priority int32
	// Pods, when above one, makes each unit a Job of this many pods
	// sharing CPU evenly.
	Pods int
	// Declared, when set, is the run time each unit declares
	// (spec.maximumExecutionTimeSeconds, whole seconds): what koord-queue's
	// forecast takes its runtime to be. It must exceed Runtime, or
	// koord-queue would evict the unit before the runner finishes it.
	Declared time.Duration
}

// Set is Count units of Class, created one every Interval (all at once when
// Interval is zero), in every leaf quota.
type Set struct {
	Class    Class
	Count    int
	Interval time.Duration
	// State, for a failover scenario, is the state the units are
	// created in, all at once before koord-queue starts.
	State UnitState
}

// Bounds are what a run must meet. Zero values are not checked.
type Bounds struct {
	// MaxWall bounds the wall time from koord-queue's start to the last
	// unit finished.
	MaxWall time.Duration
	// MaxAvgTimeToAdmission bounds each class's average time from creation
	// to first admission.
	MaxAvgTimeToAdmission map[string]time.Duration
	// MinUsage bounds the leaf quotas' average usage of their nominal
	// quota over the run (Kueue's "cq" usage), a fraction.
	MinUsage float64
	// MinBacklogUsage bounds usage of the leaf quotas' nominal quota while
	// units still wait, a fraction.
	MinBacklogUsage float64
	// MinAdmissionRate bounds admissions per second while units wait.
	MinAdmissionRate float64
	// MaxPeakRSSMiB bounds koord-queue's peak resident memory.
	MaxPeakRSSMiB float64
	// MaxCPUSeconds bounds koord-queue's user+system CPU time.
	MaxCPUSeconds float64
	// NoReadmission: no unit may be admitted more than once.
	NoReadmission bool
	// SomeUnitsWait: the run ends before every unit finished (a failover
	// scenario), so that is not checked.
	SomeUnitsWait bool
}

// Leaves are the quotas no other quota names as parent: units go there.
func (s *Scenario) Leaves() []Quota {
	parents := map[string]bool{}
	for _, q := range s.Quotas {
		parents[q.Parent] = true
	}
	var leaves []Quota
	for _, q := range s.Quotas {
		if !parents[q.Name] {
			leaves = append(leaves, q)
		}
	}
	return leaves
}

// IsParent reports whether another quota names q as its parent.
func (s *Scenario) IsParent(name string) bool {
	return slices.ContainsFunc(s.Quotas, func(q Quota) bool { return q.Parent == name })
}

// Units is how many units the run creates.
func (s *Scenario) Units() int {
	n := 0
	for _, set := range s.Sets {
		n += set.Count
	}
	return n * len(s.Leaves())
}

// Classes names the classes in the order the sets give them.
func (s *Scenario) Classes() []string {
	var names []string
	for _, set := range s.Sets {
		if !slices.Contains(names, set.Class.Name) {
			names = append(names, set.Class.Name)
		}
	}
	return names
}

// WriteBound is what no run can beat at the scenario's budget: every unit
// needs one admission written, and koord-queue's client allows burst writes
// at once, then QPS a second: (units - burst) / QPS.
func (s *Scenario) WriteBound() time.Duration {
	if s.QPS <= 0 {
		return 0
	}
	return time.Duration(float64(max(s.Units()-s.Burst, 0)) / s.QPS * float64(time.Second))
}

// GenerationTime is how long the slowest set takes to create its units.
func (s *Scenario) GenerationTime() time.Duration {
	var d time.Duration
	for _, set := range s.Sets {
		d = max(d, time.Duration(set.Count)*set.Interval)
	}
	return d
}

// Validate reports a scenario that cannot run: unknown or later parents,
// duplicate names, no units, a class that fits no leaf.
func (s *Scenario) Validate() error {
	var errs []string
	seen := map[string]bool{}
	for _, q := range s.Quotas {
		if seen[q.Name] {
			errs = append(errs, "quota "+q.Name+" is listed twice")
		}
		if q.Parent != "" && !seen[q.Parent] {
			errs = append(errs, fmt.Sprintf("quota %s: parent %s must be listed before it", q.Name, q.Parent))
		}
		if q.Min > q.Max {
			errs = append(errs, fmt.Sprintf("quota %s: min %d above max %d", q.Name, q.Min, q.Max))
		}
		seen[q.Name] = true
	}
	if len(s.Sets) == 0 || s.Units() == 0 {
		errs = append(errs, "no units")
	}
	for _, set := range s.Sets {
		if p := int64(set.Class.Pods); p > 1 && set.Class.CPU%p != 0 {
			errs = append(errs, fmt.Sprintf("class %s: %d cpu do not share evenly among %d pods", set.Class.Name, set.Class.CPU, p))
		}
		if d := set.Class.Declared; d != 0 && (d%time.Second != 0 || d <= set.Class.Runtime) {
			errs = append(errs, fmt.Sprintf("class %s declares %v: whole seconds, more than its runtime %v", set.Class.Name, d, set.Class.Runtime))
		}
		if r := s.Racks; r != nil && set.Class.CPU > int64(r.HostsPerRack)*r.HostCPU {
			errs = append(errs, fmt.Sprintf("class %s asks %d cpu, more than a rack's %d", set.Class.Name, set.Class.CPU, int64(r.HostsPerRack)*r.HostCPU))
		}
		for _, leaf := range s.Leaves() {
			if set.Class.CPU > leaf.Max {
				errs = append(errs, fmt.Sprintf("class %s asks %d cpu, more than quota %s's max %d", set.Class.Name, set.Class.CPU, leaf.Name, leaf.Max))
			}
		}
	}
	errs = append(errs, s.validateFailover()...)
	if s.Churn.Quotas > 0 && s.Churn.Interval <= 0 {
		errs = append(errs, "churn needs an interval")
	}
	if s.QPS <= 0 || s.Burst <= 0 {
		errs = append(errs, "QPS and burst must be positive")
	}
	if len(errs) > 0 {
		return fmt.Errorf("scenario %s: %s", s.Name, strings.Join(errs, "; "))
	}
	return nil
}
