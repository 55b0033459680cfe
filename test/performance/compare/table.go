package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Row is one figure of the table: each pair's value for both systems, the
// medians over the pairs, and the ratio of the medians (koord-queue over
// Kueue). A value a run did not give is NaN, and is left out of the
// median.
type Row struct {
	Name string `json:"name"`
	// Kueue and KoordQueue hold one value per pair, in pair order.
	Kueue      []float64 `json:"kueue"`
	KoordQueue []float64 `json:"koordQueue"`
	// KueueMedian, KoordQueueMedian and Ratio: NaN when there is none.
	KueueMedian      float64 `json:"kueueMedian"`
	KoordQueueMedian float64 `json:"koordQueueMedian"`
	Ratio            float64 `json:"ratio"`
	// KueueAtLeast and KoordQueueAtLeast say, per pair, that the value is a
	// lower bound: its run was cut off (Measurement.CutOff). A median over
	// a lower bound is one too.
	KueueAtLeast      []bool `json:"-"`
	KoordQueueAtLeast []bool `json:"-"`
	// Decimals to print.
	Decimals int `json:"-"`
}

// medianAtLeast says whether the median of a row's values is a lower bound:
// a median only grows with the values, so it is one when any value is.
func medianAtLeast(values []float64, atLeast []bool) bool {
	for i, a := range atLeast {
		if a && !math.IsNaN(values[i]) {
			return true
		}
	}
	return false
}

// ratioBound is how koord-queue over Kueue relates to the ratio of the
// whole runs' figures, given which is a lower bound: "≤" when Kueue's is
// (and koord-queue's is whole), "≥" when koord-queue's is, "" when both are
// whole; ok is false when both are lower bounds, which bound no ratio.
func ratioBound(kueueAtLeast, koordQueueAtLeast bool) (bound string, ok bool) {
	switch {
	case kueueAtLeast && koordQueueAtLeast:
		return "", false
	case kueueAtLeast:
		return "≤ ", true
	case koordQueueAtLeast:
		return "≥ ", true
	}
	return "", true
}

// PairRatio is koord-queue over Kueue in pair i.
func (r Row) PairRatio(i int) float64 { return Ratio(r.KoordQueue[i], r.Kueue[i]) }

// atLeast says whether pair i's value is a lower bound.
func atLeast(bounds []bool, i int) bool { return i < len(bounds) && bounds[i] }

// Table is the comparison of n pairs of runs.
type Table struct {
	Pairs int   `json:"pairs"`
	Rows  []Row `json:"rows"`
	// Orders says, per pair, which system ran first ("Kueue, koord-queue").
	Orders []string `json:"orders"`
}

// Median is the middle value of xs (the mean of the two middle ones for an
// even count), NaN values left out; NaN if none is left.
func Median(xs []float64) float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// Ratio is a over b; NaN when either is NaN or b is 0.
func Ratio(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return math.NaN()
	}
	return a / b
}

// figure is one row's definition: its name, how to read it from a
// measurement (NaN: not measured), and its precision.
type figure struct {
	name     string
	value    func(*Measurement) float64
	decimals int
}

func figures(classNames []string) []figure {
	fs := []figure{{"wall (s)", func(m *Measurement) float64 { return m.WallSeconds }, 1}}
	for _, c := range classNames {
		fs = append(fs, figure{"mean time to admission, " + c + " (s)", func(m *Measurement) float64 {
			if v, ok := m.AvgToAdmission[c]; ok {
				return v
			}
			return math.NaN()
		}, 1})
	}
	return append(fs,
		figure{"cores used (CPU s / wall)", func(m *Measurement) float64 { return m.Cores }, 3},
		figure{"CPU (s)", func(m *Measurement) float64 { return m.CPUSeconds }, 1},
		figure{"peak RSS (MiB)", func(m *Measurement) float64 { return m.PeakRSSMiB }, 0},
		figure{"API writes per admission", func(m *Measurement) float64 {
			if m.Writes < 0 {
				return math.NaN()
			}
			return m.WritesPerAdmission()
		}, 2},
		figure{"API writes", func(m *Measurement) float64 {
			if m.Writes < 0 {
				return math.NaN()
			}
			return float64(m.Writes)
		}, 0},
		figure{"admissions (units + evictions)", func(m *Measurement) float64 { return float64(m.Admissions) }, 0},
		figure{"evictions", func(m *Measurement) float64 { return float64(m.Evictions) }, 0},
		figure{"kube-apiserver + etcd CPU (s)", func(m *Measurement) float64 { return nanIfZero(m.ServerCPUSeconds) }, 1},
	)
}

// jobsFigures are perf-compare-jobs' rows: what a user submitting Jobs
// feels (wall, time to running), what the queueing system costs (its
// components' CPU and memory, its writes), and what it makes the cluster
// do (the cluster's components' writes and CPU).
func jobsFigures(classNames []string) []figure {
	fs := []figure{{"wall: first Job created to last complete (s)", func(m *Measurement) float64 { return m.WallSeconds }, 1}}
	for _, stat := range []struct {
		name string
		of   func(Latency) float64
	}{{"mean", func(l Latency) float64 { return l.Mean }}, {"p90", func(l Latency) float64 { return l.P90 }}} {
		for _, c := range classNames {
			fs = append(fs, figure{stat.name + " time to pods running, " + c + " (s)", func(m *Measurement) float64 {
				if v, ok := m.ToRunning[c]; ok {
					return stat.of(v)
				}
				return math.NaN()
			}, 1})
		}
	}
	fs = append(fs,
		figure{"CPU (s), the system's components together", func(m *Measurement) float64 { return m.CPUSeconds }, 1},
		// CPU over a cut-off run's wall may be more or less than over the
		// whole run's: no bound, left out.
		figure{"cores used (CPU s / wall)", func(m *Measurement) float64 {
			if m.CutOff {
				return math.NaN()
			}
			return m.Cores
		}, 3},
		figure{"peak RSS (MiB), the components' peaks summed", func(m *Measurement) float64 { return m.PeakRSSMiB }, 0},
		figure{"API writes per Job, the system's components", func(m *Measurement) float64 { return m.WritesPerJob() }, 2},
	)
	for _, a := range ClusterAgents {
		fs = append(fs, figure{"API writes per Job, " + a, func(m *Measurement) float64 { return m.AgentWritesPerJob(a) }, 2})
	}
	return append(fs,
		figure{"API writes per Job, the system's and the cluster's components", func(m *Measurement) float64 {
			return m.AgentWritesPerJob(append(slices.Clone(SystemAgents[m.System]), ClusterAgents...)...)
		}, 2},
		figure{"Jobs complete", func(m *Measurement) float64 { return float64(m.Jobs) }, 0},
		figure{"evictions (Jobs suspended again)", func(m *Measurement) float64 { return float64(m.Evictions) }, 0},
		figure{"kube-apiserver + etcd CPU (s)", func(m *Measurement) float64 { return nanIfZero(m.ServerCPUSeconds) }, 1},
		figure{"kube-controller-manager + kube-scheduler + kwok CPU (s)", func(m *Measurement) float64 { return nanIfZero(m.NodeCPUSeconds) }, 1},
	)
}

func nanIfZero(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

// BuildTable lays the measurements out by pair. A failed run's figures are
// left out (NaN).
func BuildTable(ms []Measurement) Table {
	return buildTable(ms, figures(classes(ms)))
}

// BuildJobsTable is BuildTable with perf-compare-jobs' rows.
func BuildJobsTable(ms []Measurement) Table {
	return buildTable(ms, jobsFigures(classes(ms)))
}

func buildTable(ms []Measurement, fs []figure) Table {
	pairs := 0
	for _, m := range ms {
		pairs = max(pairs, m.Pair)
	}
	t := Table{Pairs: pairs, Orders: make([]string, pairs)}
	first := make([][]string, pairs)
	for _, m := range ms {
		if m.Pair < 1 {
			continue
		}
		first[m.Pair-1] = append(first[m.Pair-1], fmt.Sprintf("%d\x00%s", m.Position, m.System))
	}
	for i, f := range first {
		sort.Strings(f)
		for j := range f {
			_, f[j], _ = strings.Cut(f[j], "\x00")
		}
		t.Orders[i] = strings.Join(f, ", ")
	}
	for _, f := range fs {
		r := Row{
			Name: f.name, Decimals: f.decimals, Kueue: nanSlice(pairs), KoordQueue: nanSlice(pairs),
			KueueAtLeast: make([]bool, pairs), KoordQueueAtLeast: make([]bool, pairs),
		}
		for i := range ms {
			m := &ms[i]
			if m.Pair < 1 || m.Error != "" {
				continue
			}
			switch m.System {
			case Kueue:
				r.Kueue[m.Pair-1], r.KueueAtLeast[m.Pair-1] = f.value(m), m.CutOff
			case KoordQueue:
				r.KoordQueue[m.Pair-1], r.KoordQueueAtLeast[m.Pair-1] = f.value(m), m.CutOff
			}
		}
		r.KueueMedian, r.KoordQueueMedian = Median(r.Kueue), Median(r.KoordQueue)
		r.Ratio = Ratio(r.KoordQueueMedian, r.KueueMedian)
		if _, ok := ratioBound(medianAtLeast(r.Kueue, r.KueueAtLeast), medianAtLeast(r.KoordQueue, r.KoordQueueAtLeast)); !ok {
			r.Ratio = math.NaN()
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// format prints v, "≥ v" when it is a lower bound.
func format(v float64, decimals int, atLeast bool) string {
	if math.IsNaN(v) {
		return "—"
	}
	if atLeast {
		return fmt.Sprintf("≥ %.*f", decimals, v)
	}
	return fmt.Sprintf("%.*f", decimals, v)
}

// formatRatio prints koord-queue's value over Kueue's, with the bound
// their lower bounds make of it (ratioBound).
func formatRatio(v float64, kueueAtLeast, koordQueueAtLeast bool) string {
	bound, ok := ratioBound(kueueAtLeast, koordQueueAtLeast)
	if math.IsNaN(v) || !ok {
		return "—"
	}
	return fmt.Sprintf("%s%.2f", bound, v)
}

// Markdown renders the medians, then every pair.
func (t Table) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| | Kueue | koord-queue | koord-queue ÷ Kueue |\n|---|---|---|---|\n")
	for _, r := range t.Rows {
		kueueAtLeast, koordQueueAtLeast := medianAtLeast(r.Kueue, r.KueueAtLeast), medianAtLeast(r.KoordQueue, r.KoordQueueAtLeast)
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Name, format(r.KueueMedian, r.Decimals, kueueAtLeast),
			format(r.KoordQueueMedian, r.Decimals, koordQueueAtLeast), formatRatio(r.Ratio, kueueAtLeast, koordQueueAtLeast))
	}
	if t.Pairs < 2 {
		return b.String()
	}
	fmt.Fprintf(&b, "\nEach pair (in the order run):\n\n|")
	for i := range t.Pairs {
		fmt.Fprintf(&b, " | pair %d (%s): Kueue | koord-queue | ÷", i+1, t.Orders[i])
	}
	fmt.Fprintf(&b, " |\n|---%s|\n", strings.Repeat("|---|---|---", t.Pairs))
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "| %s", r.Name)
		for i := range t.Pairs {
			kueueAtLeast, koordQueueAtLeast := atLeast(r.KueueAtLeast, i), atLeast(r.KoordQueueAtLeast, i)
			fmt.Fprintf(&b, " | %s | %s | %s", format(r.Kueue[i], r.Decimals, kueueAtLeast), format(r.KoordQueue[i], r.Decimals, koordQueueAtLeast),
				formatRatio(r.PairRatio(i), kueueAtLeast, koordQueueAtLeast))
		}
		fmt.Fprintf(&b, " |\n")
	}
	return b.String()
}

// jsonFloat writes NaN as null, which encoding/json cannot.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

func jsonFloats(xs []float64) []jsonFloat {
	out := make([]jsonFloat, len(xs))
	for i, x := range xs {
		out[i] = jsonFloat(x)
	}
	return out
}

// MarshalJSON writes a row with null for what was not measured.
func (r Row) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name             string      `json:"name"`
		Kueue            []jsonFloat `json:"kueue"`
		KoordQueue       []jsonFloat `json:"koordQueue"`
		KueueMedian      jsonFloat   `json:"kueueMedian"`
		KoordQueueMedian jsonFloat   `json:"koordQueueMedian"`
		Ratio            jsonFloat   `json:"ratio"`
		// Which values are lower bounds (a run cut off), when any is.
		KueueAtLeast      []bool `json:"kueueAtLeast,omitempty"`
		KoordQueueAtLeast []bool `json:"koordQueueAtLeast,omitempty"`
	}{
		r.Name, jsonFloats(r.Kueue), jsonFloats(r.KoordQueue), jsonFloat(r.KueueMedian), jsonFloat(r.KoordQueueMedian), jsonFloat(r.Ratio),
		anyTrue(r.KueueAtLeast), anyTrue(r.KoordQueueAtLeast),
	})
}

// anyTrue is bs if any of them is true, else nil.
func anyTrue(bs []bool) []bool {
	if slices.Contains(bs, true) {
		return bs
	}
	return nil
}
