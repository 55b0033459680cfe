package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

// Result is one run as measured, written as result.json.
type Result struct {
	Scenario string `json:"scenario"`
	Title    string `json:"title"`
	Short    bool   `json:"short"`
	// Command reproduces the run.
	Command   string    `json:"command"`
	StartedAt time.Time `json:"startedAt"`
	QPS       float64   `json:"qps"`
	Burst     int       `json:"burst"`
	Units     int       `json:"units"`
	Finished  int       `json:"finished"`
	// WallSeconds runs from koord-queue's start to the last unit finished
	// (as Kueue's measures its controller's process); WorkloadSeconds from
	// the first unit created to the last finished.
	WallSeconds     float64 `json:"wallSeconds"`
	WorkloadSeconds float64 `json:"workloadSeconds"`
	// Classes in the scenario's order.
	Classes []ClassResult `json:"classes"`
	// UsagePercent is the leaf quotas' average usage of their nominal
	// quota from the first unit created to the last finished (Kueue's
	// definition); BacklogUsagePercent the same while their units waited.
	UsagePercent        float64 `json:"usagePercent"`
	BacklogUsagePercent float64 `json:"backlogUsagePercent"`
	// AdmissionsPerSecond while units waited.
	AdmissionsPerSecond float64 `json:"admissionsPerSecond"`
	Admissions          int     `json:"admissions"`
	Evictions           int     `json:"evictions"`
	// AdmittedMoreThanOnce counts units admitted more than once.
	AdmittedMoreThanOnce int `json:"admittedMoreThanOnce"`
	// OverAdmissions counts moments a quota held more than its max.
	OverAdmissions        int             `json:"overAdmissions"`
	OverAdmissionExamples []OverAdmission `json:"overAdmissionExamples,omitempty"`
	Quotas                []QuotaResult   `json:"quotas"`
	Controller            ControllerStats `json:"controller"`
	// Writes break the run's API writes down, when the harness counted
	// them (harness.Options.Writes).
	Writes *Writes `json:"writes,omitempty"`
	// Extra holds scenario-specific figures (the Jobs scenario's).
	Extra     map[string]float64 `json:"extra,omitempty"`
	Bounds    []BoundResult      `json:"bounds"`
	Reference string             `json:"reference,omitempty"`
	Samples   []Sample           `json:"samples"`
}

// ClassResult is one class of units.
type ClassResult struct {
	Name     string `json:"name"`
	Count    int    `json:"count"`
	Admitted int    `json:"admitted"`
	// Times from creation to first admission, in seconds.
	AvgToAdmission float64 `json:"avgToAdmissionSeconds"`
	P50ToAdmission float64 `json:"p50ToAdmissionSeconds"`
	P90ToAdmission float64 `json:"p90ToAdmissionSeconds"`
	MaxToAdmission float64 `json:"maxToAdmissionSeconds"`
	AvgToFinish    float64 `json:"avgToFinishSeconds"`
	Evictions      int     `json:"evictions"`
}

// QuotaResult is what one quota's units held.
type QuotaResult struct {
	Name string `json:"name"`
	// Max and Peak in cores.
	Max  float64 `json:"max"`
	Peak float64 `json:"peak"`
	// UsagePercent of its nominal quota over the run.
	UsagePercent float64 `json:"usagePercent"`
}

// How koord-queue ran.
const (
	// ModeBinary: the koord-queue binary as its own process, measured.
	ModeBinary = "binary"
	// ModeInProcess: koord-queue's manager in the harness's process, for
	// profiles; its CPU and memory are not measured.
	ModeInProcess = "in-process"
)

// ControllerStats are koord-queue's resources, summed over its processes.
type ControllerStats struct {
	// Mode is ModeBinary or ModeInProcess.
	Mode       string  `json:"mode"`
	CPUSeconds float64 `json:"cpuSeconds"`
	// AverageCores is CPUSeconds over WallSeconds.
	AverageCores float64 `json:"averageCores"`
	PeakRSSMiB   float64 `json:"peakRSSMiB"`
	Restarts     int     `json:"restarts"`
	// Requests koord-queue made to the API server, by verb and resource.
	Requests map[string]float64 `json:"requests,omitempty"`
}

// BoundResult is one bound checked.
type BoundResult struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	OK   bool   `json:"ok"`
}

// Summarize computes the result so far. controllerStart is when wall time begins.
func (r *Recorder) Summarize(s *scenario.Scenario) *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := r.lastFinished
	for _, q := range r.quotas {
		q.advance(end)
	}
	res := &Result{
		Scenario:              s.Name,
		Title:                 s.Title,
		StartedAt:             r.start,
		QPS:                   s.QPS,
		Burst:                 s.Burst,
		Units:                 r.expected,
		Finished:              r.finished,
		WallSeconds:           end.Seconds(),
		WorkloadSeconds:       (end - r.firstCreated).Seconds(),
		Admissions:            r.admissions,
		Evictions:             r.evictions,
		OverAdmissions:        r.overAdmissions,
		OverAdmissionExamples: slices.Clone(r.examples),
		Reference:             s.Reference,
		Samples:               append(slices.Clone(r.samples), r.sampleAt(end)),
	}
	if r.backlogTime > 0 {
		res.AdmissionsPerSecond = float64(r.admissionsInBacklog) / r.backlogTime.Seconds()
	}

	window := (end - r.firstCreated).Seconds()
	var used, nominal, backlogUsed, backlogNominal float64
	for _, q := range s.Quotas {
		st := r.quotas[q.Name]
		qr := QuotaResult{Name: q.Name, Max: float64(q.Max), Peak: float64(st.peak) / 1000}
		if window > 0 && st.nominal > 0 {
			qr.UsagePercent = 100 * st.usedIntegral / (float64(st.nominal) * window)
		}
		res.Quotas = append(res.Quotas, qr)
		if !st.leaf {
			continue
		}
		used += st.usedIntegral
		nominal += float64(st.nominal) * window
		backlogUsed += st.backlogIntegral
		backlogNominal += float64(st.nominal) * st.backlogTime
	}
	if nominal > 0 {
		res.UsagePercent = 100 * used / nominal
	}
	if backlogNominal > 0 {
		res.BacklogUsagePercent = 100 * backlogUsed / backlogNominal
	}

	byClass := map[string]*classAcc{}
	for _, u := range r.units {
		acc := byClass[u.class]
		if acc == nil {
			acc = &classAcc{}
			byClass[u.class] = acc
		}
		acc.count++
		acc.evictions += u.evictions
		if u.admissions > 1 {
			res.AdmittedMoreThanOnce++
		}
		if u.admitted {
			acc.toAdmission = append(acc.toAdmission, u.firstAdmitted-u.created)
		}
		if u.finished && u.admitted {
			acc.toFinish = append(acc.toFinish, u.finishedAt-u.created)
		}
	}
	classes := s.Classes()
	for name := range byClass {
		if !slices.Contains(classes, name) {
			classes = append(classes, name)
		}
	}
	for _, name := range classes {
		acc := byClass[name]
		if acc == nil {
			continue
		}
		res.Classes = append(res.Classes, acc.result(name))
	}
	return res
}

type classAcc struct {
	count, evictions      int
	toAdmission, toFinish []time.Duration
}

func (a *classAcc) result(name string) ClassResult {
	c := ClassResult{Name: name, Count: a.count, Admitted: len(a.toAdmission), Evictions: a.evictions}
	sort.Slice(a.toAdmission, func(i, j int) bool { return a.toAdmission[i] < a.toAdmission[j] })
	c.AvgToAdmission = mean(a.toAdmission)
	c.P50ToAdmission = Percentile(a.toAdmission, 50).Seconds()
	c.P90ToAdmission = Percentile(a.toAdmission, 90).Seconds()
	if n := len(a.toAdmission); n > 0 {
		c.MaxToAdmission = a.toAdmission[n-1].Seconds()
	}
	c.AvgToFinish = mean(a.toFinish)
	return c
}

func mean(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return (sum / time.Duration(len(ds))).Seconds()
}

// Percentile is the nearest-rank p-th percentile of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Check holds the result to the scenario's bounds, and always to the
// invariants: every unit finished and no quota was ever over its max.
func (res *Result) Check(b scenario.Bounds) {
	add := func(name, want, got string, ok bool) {
		res.Bounds = append(res.Bounds, BoundResult{Name: name, Want: want, Got: got, OK: ok})
	}
	if !b.SomeUnitsWait {
		add("every unit finished", fmt.Sprint(res.Units), fmt.Sprint(res.Finished), res.Finished == res.Units)
	}
	add("moments a quota was over its max", "0", fmt.Sprint(res.OverAdmissions), res.OverAdmissions == 0)
	if b.MaxWall > 0 {
		add("wall time", "≤ "+seconds(b.MaxWall.Seconds()), seconds(res.WallSeconds), res.WallSeconds <= b.MaxWall.Seconds())
	}
	for _, c := range res.Classes {
		if limit, ok := b.MaxAvgTimeToAdmission[c.Name]; ok {
			add("average time to admission, "+c.Name, "≤ "+seconds(limit.Seconds()), seconds(c.AvgToAdmission), c.AvgToAdmission <= limit.Seconds())
		}
	}
	if b.MinUsage > 0 {
		add("usage", fmt.Sprintf("≥ %.0f%%", b.MinUsage*100), fmt.Sprintf("%.1f%%", res.UsagePercent), res.UsagePercent >= b.MinUsage*100)
	}
	if b.MinBacklogUsage > 0 {
		add("usage while units wait", fmt.Sprintf("≥ %.0f%%", b.MinBacklogUsage*100), fmt.Sprintf("%.1f%%", res.BacklogUsagePercent), res.BacklogUsagePercent >= b.MinBacklogUsage*100)
	}
	if b.MinAdmissionRate > 0 {
		add("admissions per second while units wait", fmt.Sprintf("≥ %.1f", b.MinAdmissionRate), fmt.Sprintf("%.1f", res.AdmissionsPerSecond), res.AdmissionsPerSecond >= b.MinAdmissionRate)
	}
	if b.NoReadmission {
		add("units admitted more than once", "0", fmt.Sprint(res.AdmittedMoreThanOnce), res.AdmittedMoreThanOnce == 0)
	}
	if b.MaxPeakRSSMiB > 0 && res.Controller.Mode == ModeBinary {
		add("koord-queue peak RSS", fmt.Sprintf("≤ %.0f MiB", b.MaxPeakRSSMiB), fmt.Sprintf("%.0f MiB", res.Controller.PeakRSSMiB), res.Controller.PeakRSSMiB <= b.MaxPeakRSSMiB)
	}
	if b.MaxCPUSeconds > 0 && res.Controller.Mode == ModeBinary {
		add("koord-queue CPU", fmt.Sprintf("≤ %.0f s", b.MaxCPUSeconds), fmt.Sprintf("%.1f s", res.Controller.CPUSeconds), res.Controller.CPUSeconds <= b.MaxCPUSeconds)
	}
}

// OK reports whether every bound held.
func (res *Result) OK() bool {
	return !slices.ContainsFunc(res.Bounds, func(b BoundResult) bool { return !b.OK })
}

func seconds(s float64) string { return fmt.Sprintf("%.1fs", s) }

// Text is the short summary a person reads.
func (res *Result) Text() string {
	var b strings.Builder
	verdict := "PASS"
	if !res.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "%s — %s [%s]\n", res.Scenario, res.Title, verdict)
	fmt.Fprintf(&b, "  command: %s\n", res.Command)
	fmt.Fprintf(&b, "  koord-queue QPS %g burst %d; %d units, %d finished\n", res.QPS, res.Burst, res.Units, res.Finished)
	fmt.Fprintf(&b, "  wall %.1fs (units created to last finished %.1fs)\n", res.WallSeconds, res.WorkloadSeconds)
	fmt.Fprintf(&b, "  %-8s %6s %9s %9s %9s %9s %9s\n", "class", "units", "avg", "p50", "p90", "max", "evicted")
	for _, c := range res.Classes {
		fmt.Fprintf(&b, "  %-8s %6d %8.1fs %8.1fs %8.1fs %8.1fs %9d\n", c.Name, c.Count, c.AvgToAdmission, c.P50ToAdmission, c.P90ToAdmission, c.MaxToAdmission, c.Evictions)
	}
	fmt.Fprintf(&b, "  usage %.1f%% of nominal quota (%.1f%% while units waited); %.1f admissions/s while units waited\n", res.UsagePercent, res.BacklogUsagePercent, res.AdmissionsPerSecond)
	fmt.Fprintf(&b, "  %d admissions, %d evictions, %d units admitted more than once, %d moments over a max\n", res.Admissions, res.Evictions, res.AdmittedMoreThanOnce, res.OverAdmissions)
	c := res.Controller
	if c.Mode == ModeBinary {
		fmt.Fprintf(&b, "  koord-queue: %.1f CPU seconds (%.2f cores on average), peak RSS %.0f MiB, %d restarts\n", c.CPUSeconds, c.AverageCores, c.PeakRSSMiB, c.Restarts)
	} else {
		fmt.Fprintf(&b, "  koord-queue ran in-process: CPU and RSS not measured\n")
	}
	if len(c.Requests) > 0 {
		keys := make([]string, 0, len(c.Requests))
		for k := range c.Requests {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, c.Requests[k]))
		}
		fmt.Fprintf(&b, "  koord-queue's API requests: %s\n", strings.Join(parts, ", "))
	}
	if res.Writes != nil {
		b.WriteString(res.Writes.Text())
	}
	if len(res.Extra) > 0 {
		keys := make([]string, 0, len(res.Extra))
		for k := range res.Extra {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s: %.2f\n", k, res.Extra[k])
		}
	}
	for _, bound := range res.Bounds {
		mark := "ok  "
		if !bound.OK {
			mark = "MISS"
		}
		fmt.Fprintf(&b, "  %s %s: %s (want %s)\n", mark, bound.Name, bound.Got, bound.Want)
	}
	if res.Reference != "" {
		fmt.Fprintf(&b, "  reference: %s\n", res.Reference)
	}
	return b.String()
}
