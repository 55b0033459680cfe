package compare

import (
	"math"
	"sort"

	"github.com/koord-queue/koord-queue/test/performance/checker"
)

// The two systems compared.
const (
	Kueue      = "Kueue"
	KoordQueue = "koord-queue"
)

// Measurement is one run of one system, in the terms the table compares.
type Measurement struct {
	System string `json:"system"`
	// Pair is the pair the run belongs to (1-based), Position its place in
	// the pair (1: run first).
	Pair     int    `json:"pair"`
	Position int    `json:"position"`
	Dir      string `json:"dir"`
	// WallSeconds: Kueue, minimalkueue's process from start to exit as the
	// runner reports it (wallMs); koord-queue, its process's start to the
	// last unit finished as the harness reports it.
	WallSeconds float64 `json:"wallSeconds"`
	// AvgToAdmission is each class's mean time from creation seen to
	// admission seen, in seconds, as each side's recorder reports it.
	AvgToAdmission map[string]float64 `json:"avgToAdmissionSeconds"`
	// CPUSeconds is the controller's user+system CPU; Cores that over
	// WallSeconds.
	CPUSeconds float64 `json:"cpuSeconds"`
	Cores      float64 `json:"cores"`
	// PeakRSSMiB is the controller's peak resident set.
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// Units the run created; Evictions counted by its recorder; each
	// evicted unit is admitted again, so Admissions = Units + Evictions.
	Units      int `json:"units"`
	Evictions  int `json:"evictions"`
	Admissions int `json:"admissions"`
	// Writes is every write the controller's client made (its user agent
	// in the API server's audit log: creates, updates, patches, deletes,
	// events and answers other than 2xx included); -1 when not counted.
	Writes int `json:"writes"`
	// WritesByKind breaks Writes down ("patch workloads/status 200").
	WritesByKind map[string]int `json:"writesByKind,omitempty"`
	// ServerCPUSeconds is what kube-apiserver and etcd used over the whole
	// run (their processes' user+system CPU, last sampled just before they
	// stopped); 0 when not measured.
	ServerCPUSeconds float64 `json:"serverCPUSeconds,omitempty"`
	// DroppedEvents counts the workload events Kueue's recorder dropped
	// (its channel full): its times to admission are then partial.
	DroppedEvents uint64 `json:"droppedEvents,omitempty"`
	// Checks are the bounds the side's own checker held the run to (Kueue's
	// checker with its rangespec.yaml; koord-queue's scenario bounds).
	Checks []Check `json:"checks,omitempty"`
	// LoadBefore and LoadAfter are /proc/loadavg's 1-minute load.
	LoadBefore float64 `json:"loadBefore"`
	LoadAfter  float64 `json:"loadAfter"`
	// Commit is the checkout's commit when the run started ("+dirty" with
	// changes).
	Commit string `json:"commit,omitempty"`
	// Error is why the run failed, if it did; its figures are then not used.
	Error string `json:"error,omitempty"`

	// What perf-compare-jobs measures besides (JobsRun); empty otherwise.

	// Jobs is how many Jobs the run created and saw complete.
	Jobs int `json:"jobs,omitempty"`
	// JobsInShape is how many Jobs the shape has: what figures per Job are
	// over (Jobs in a measurement that lacks it). A run that completed
	// created and completed them all.
	JobsInShape int `json:"jobsInShape,omitempty"`
	// CutOff says the run's time (JobsRun.Timeout) was up before every Job
	// completed and the run stopped there (JobsRun.CutOff): its figures are
	// what it had reached, each a lower bound of what the whole run would
	// have given (its wall, each Job not yet started counted as starting
	// then, CPU, peak RSS, writes and events over every Job of the shape),
	// but its cores, which are not (see jobsFigures).
	CutOff bool `json:"cutOff,omitempty"`
	// ToRunning is, per class, the time from each Job's creation (the
	// harness sending it) to its pod seen Running (or past it), in seconds.
	ToRunning map[string]Latency `json:"toRunningSeconds,omitempty"`
	// Components are the system's processes; CPUSeconds and PeakRSSMiB
	// above are their sums.
	Components []Component `json:"components,omitempty"`
	// WritesByAgent is every write in the audit log by the client's program
	// (the user agent up to its first "/": "kube-controller-manager") and
	// kind ("patch workloads/status 200"); Writes above is the system's
	// components' (SystemAgents) sum of it.
	WritesByAgent map[string]map[string]int `json:"writesByAgent,omitempty"`
	// Events counts the events of the systems' objects the cluster held
	// once every Job completed, by sender, kind and reason (EventsOf).
	Events map[string]int `json:"events,omitempty"`
	// NodeCPUSeconds is what kube-controller-manager, kube-scheduler and
	// kwok used over the run (the Job controller, the scheduler and the
	// nodes): the part of the cluster's work the queueing system causes.
	NodeCPUSeconds float64 `json:"nodeCPUSeconds,omitempty"`
}

// Latency is a distribution's mean and 90th percentile.
type Latency struct {
	Mean float64 `json:"mean"`
	P90  float64 `json:"p90"`
}

// Component is one process of a system, and what it used.
type Component struct {
	Name       string  `json:"name"`
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// AnonMiB and FileMiB are its resident memory just before it was
	// stopped: anonymous, and the file-backed pages of its binary.
	AnonMiB float64 `json:"anonMiB"`
	FileMiB float64 `json:"fileMiB"`
}

// WritesPerJob is what the system's components (SystemAgents) wrote, over
// Jobs; NaN when the writes were not counted.
func (m *Measurement) WritesPerJob() float64 {
	return m.AgentWritesPerJob(SystemAgents[m.System]...)
}

// AgentWritesPerJob is what the programs wrote, over Jobs; NaN when the
// writes were not counted.
func (m *Measurement) AgentWritesPerJob(agents ...string) float64 {
	if m.WritesByAgent == nil || m.perJob() == 0 {
		return math.NaN()
	}
	return float64(m.AgentWrites(agents...)) / float64(m.perJob())
}

// perJob is what figures per Job are over: the shape's Jobs (JobsInShape),
// or, in a measurement that lacks it, the Jobs complete.
func (m *Measurement) perJob() int {
	if m.JobsInShape > 0 {
		return m.JobsInShape
	}
	return m.Jobs
}

// AgentWrites is how many writes WritesByAgent holds of the programs.
func (m *Measurement) AgentWrites(agents ...string) int {
	n := 0
	for _, a := range agents {
		for _, c := range m.WritesByAgent[a] {
			n += c
		}
	}
	return n
}

// Check is one bound a side's checker checked.
type Check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Detail is what the checker said (its failure message, or got/want).
	Detail string `json:"detail,omitempty"`
}

// WritesPerAdmission is Writes over Admissions; 0 when not counted.
func (m *Measurement) WritesPerAdmission() float64 {
	if m.Writes < 0 || m.Admissions == 0 {
		return 0
	}
	return float64(m.Writes) / float64(m.Admissions)
}

// Passed reports whether the run completed and every check held.
func (m *Measurement) Passed() bool {
	if m.Error != "" {
		return false
	}
	for _, c := range m.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// FromKueue is a Kueue run's figures, exactly as its runner reported them
// in summary.yaml and minimalkueue.stats.yaml: the wall and CPU of
// minimalkueue's process, ru_maxrss (KiB) as peak RSS, each workload
// class's averageTimeToAdmissionMs, counts and evictions.
func FromKueue(s *KueueSummary, st *KueueCmdStats) Measurement {
	m := Measurement{
		System:         Kueue,
		WallSeconds:    float64(st.WallMs) / 1000,
		CPUSeconds:     float64(st.UserMs+st.SysMs) / 1000,
		PeakRSSMiB:     float64(st.Maxrss) / 1024,
		AvgToAdmission: map[string]float64{},
		Writes:         -1,
		DroppedEvents:  s.DroppedWLEvents,
	}
	if m.WallSeconds > 0 {
		m.Cores = m.CPUSeconds / m.WallSeconds
	}
	for name, c := range s.WorkloadClasses {
		m.AvgToAdmission[name] = float64(c.AverageTimeToAdmissionMs) / 1000
		m.Units += int(c.Count)
		m.Evictions += int(c.TotalEvictions)
	}
	m.Admissions = m.Units + m.Evictions
	return m
}

// FromKoordQueue is a koord-queue run's figures as the harness reported
// them (result.json), and its bounds as checks.
func FromKoordQueue(res *checker.Result) Measurement {
	m := Measurement{
		System:         KoordQueue,
		WallSeconds:    res.WallSeconds,
		CPUSeconds:     res.Controller.CPUSeconds,
		Cores:          res.Controller.AverageCores,
		PeakRSSMiB:     res.Controller.PeakRSSMiB,
		AvgToAdmission: map[string]float64{},
		Units:          res.Units,
		Evictions:      res.Evictions,
		Admissions:     res.Units + res.Evictions,
		Writes:         -1,
	}
	for _, c := range res.Classes {
		m.AvgToAdmission[c.Name] = c.AvgToAdmission
	}
	for _, b := range res.Bounds {
		m.Checks = append(m.Checks, Check{Name: b.Name, OK: b.OK, Detail: b.Got + " (want " + b.Want + ")"})
	}
	return m
}

// classes lists the classes any measurement has, largest first as both
// harnesses' shapes name them (large, medium, small), then any other in
// name order.
func classes(ms []Measurement) []string {
	seen := map[string]bool{}
	for _, m := range ms {
		for c := range m.AvgToAdmission {
			seen[c] = true
		}
		for c := range m.ToRunning {
			seen[c] = true
		}
	}
	var out []string
	for _, c := range []string{"large", "medium", "small"} {
		if seen[c] {
			out = append(out, c)
			delete(seen, c)
		}
	}
	var rest []string
	for c := range seen {
		rest = append(rest, c)
	}
	sort.Strings(rest)
	return append(out, rest...)
}
