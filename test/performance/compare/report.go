package compare

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// Report is what summary.json holds, and summary.md shows.
type Report struct {
	// Config is Kueue's scenario, Scenario koord-queue's.
	Config   string `json:"config"`
	Scenario string `json:"scenario"`
	// Command reproduces the runs; Commit is the checkout's.
	Command      string        `json:"command"`
	Commit       string        `json:"commit"`
	Machine      string        `json:"machine"`
	WrittenAt    time.Time     `json:"writtenAt"`
	Measurements []Measurement `json:"measurements"`
	Table        Table         `json:"table"`
}

// DirName is the directory of a system's run within its pair's.
func DirName(system string) string {
	if system == Kueue {
		return "kueue"
	}
	return "koord-queue"
}

const measurementFile = "measurement.json"

// WriteMeasurement saves a run's measurement into its directory.
func WriteMeasurement(dir string, m Measurement) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding measurement: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	return os.WriteFile(filepath.Join(dir, measurementFile), data, 0o644)
}

// ReadMeasurements reads every pair-*/*/measurement.json under out, in
// pair and position order.
func ReadMeasurements(out string) ([]Measurement, error) {
	paths, err := filepath.Glob(filepath.Join(out, "pair-*", "*", measurementFile))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no %s under %s", measurementFile, out)
	}
	var ms []Measurement
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		var m Measurement
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", p, err)
		}
		ms = append(ms, m)
	}
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].Pair != ms[j].Pair {
			return ms[i].Pair < ms[j].Pair
		}
		return ms[i].Position < ms[j].Position
	})
	return ms, nil
}

// Commits lists the commits the runs were made at, in order, each once.
func Commits(ms []Measurement) string {
	var out []string
	for _, m := range ms {
		if m.Commit != "" && !slices.Contains(out, m.Commit) {
			out = append(out, m.Commit)
		}
	}
	return strings.Join(out, ", ")
}

// Line is one run in a line, for the progress output.
func Line(m Measurement) string {
	if m.Error != "" {
		return fmt.Sprintf("  %s FAILED: %s\n", m.System, m.Error)
	}
	var cls []string
	for _, c := range classes([]Measurement{m}) {
		cls = append(cls, fmt.Sprintf("%s %.1fs", c, m.AvgToAdmission[c]))
	}
	writes := "writes not counted"
	if m.Writes >= 0 {
		writes = fmt.Sprintf("%.2f writes per admission", m.WritesPerAdmission())
	}
	return fmt.Sprintf("  %s: wall %.1fs; mean time to admission %s; %.1f CPU s (%.3f cores), peak RSS %.0f MiB; %s; checks %s\n",
		m.System, m.WallSeconds, strings.Join(cls, ", "), m.CPUSeconds, m.Cores, m.PeakRSSMiB, writes, verdict(m))
}

func verdict(m Measurement) string {
	if m.Error != "" {
		return "FAILED"
	}
	var missed []string
	for _, c := range m.Checks {
		if !c.OK {
			missed = append(missed, c.Name)
		}
	}
	v := "all met"
	if len(missed) > 0 {
		v = "missed: " + strings.Join(missed, ", ")
	}
	if m.DroppedEvents > 0 {
		v += fmt.Sprintf(" (the recorder dropped %d workload events)", m.DroppedEvents)
	}
	return v
}

// DescribeMachine names the machine's CPUs and memory.
func DescribeMachine() string {
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				var kib float64
				fmt.Sscan(f[1], &kib)
				mem = fmt.Sprintf(", %.1f GiB", kib/1024/1024)
			}
		}
	}
	return fmt.Sprintf("%d CPUs%s, %s/%s", runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH)
}

// Markdown is summary.md.
func (r Report) Markdown() string {
	var b strings.Builder
	r.writeHead(&b, fmt.Sprintf("Kueue and koord-queue side by side: Kueue's `%s`, koord-queue's `%s`", r.Config, r.Scenario))
	b.WriteString("\n## Runs\n\n| pair | run | system | wall | 1-minute load before → after | checks | directory |\n|---|---|---|---|---|---|---|\n")
	for _, m := range r.Measurements {
		wall := fmt.Sprintf("%.1f s", m.WallSeconds)
		if m.Error != "" {
			wall = "failed: " + m.Error
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %.2f → %.2f | %s | `%s` |\n", m.Pair, m.Position, m.System, wall, m.LoadBefore, m.LoadAfter, verdict(m), m.Dir)
	}
	b.WriteString("\n" + derivation)
	return b.String()
}

// writeHead writes the title, how the runs were made, and the table.
func (r Report) writeHead(b *strings.Builder, title string) {
	fmt.Fprintf(b, "# %s\n\n", title)
	fmt.Fprintf(b, "- command: `%s`\n- commit: `%s`\n- machine: %s\n- written: %s\n\n", r.Command, r.Commit, r.Machine, r.WrittenAt.Format(time.RFC3339))
	n := r.Table.Pairs
	what := "Medians over the pairs"
	if n == 1 {
		what = "One pair"
	}
	fmt.Fprintf(b, "## %s (%d %s)\n\n", what, n, plural(n, "pair", "pairs"))
	b.WriteString(r.Table.Markdown())
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// derivation says how each row is obtained, for each side.
const derivation = `## How each figure is obtained

Kueue's side is its own runner and minimalkueue, run as its CI runs them;
its figures are read from the runner's ` + "`summary.yaml`" + ` and
` + "`minimalkueue.stats.yaml`" + ` unchanged, and its checker's verdict
(` + "`checker.txt`" + `) against its rangespec. koord-queue's side is the
harness's ` + "`result.json`" + `. Ratios are koord-queue over Kueue, of the
medians (in the per-pair table, of the pair).

| row | Kueue | koord-queue |
|---|---|---|
| wall | ` + "`wallMs`" + `: minimalkueue's process from its start to its exit (the runner stops it once no ClusterQueue has pending or reserving workloads, checked on every ClusterQueue event and every 5 s) | from koord-queue's process start to the last unit seen finished |
| mean time to admission | ` + "`averageTimeToAdmissionMs`" + ` of the class: from the runner's controller first seeing the workload to seeing it admitted | the class's average from the checker seeing the unit created to seeing it first admitted |
| cores used, CPU | ` + "`userMs + sysMs`" + ` (the process's rusage), over the wall | user + system time from ` + "`/proc/<pid>/stat`" + ` just before it is stopped, over the wall |
| peak RSS | ` + "`maxrss`" + ` (rusage ru_maxrss, KiB) | ` + "`VmHWM`" + ` from ` + "`/proc/<pid>/status`" + ` just before it is stopped |
| API writes | every request with a write verb (create, update, patch, delete; events and non-2xx answers included) that the API server's audit log attributes to minimalkueue's user agent | the same, for koord-queue's user agent |
| admissions | workloads + evictions from summary.yaml (each evicted workload is admitted again) | units + evictions from result.json |
| kube-apiserver + etcd CPU | both processes' user + system time, sampled every second from ` + "`/proc`" + ` while they run (the last sample) | the same |

Both API servers are the same binaries (the pinned kube-apiserver and etcd
of ` + "`make tools`" + `) with the same limits (envtest, max-requests-inflight
800, max-mutating-requests-inflight 400) and the same audit policy (writes
only, at Metadata level).
`
