package compare

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/koord-queue/koord-queue/test/cluster"
)

// Pairs is what make perf-compare and make perf-compare-jobs share: their
// common flags, the results' directory, the pairs of runs in alternating
// order and the summary's files. Each command adds its own flags and says
// how to run one system and how to summarize.
type Pairs struct {
	// Name is the command's (cmd/<Name>); OutName the results' directory
	// under _output/perf for the baseline config.
	Name, OutName string

	Config, Only, Binary, Out string
	Pairs                     int
	KeepAudit, Summarize      bool
}

// AddFlags adds the flags both commands have: -pairs, -only, -binary,
// -out and -keep-audit.
func (p *Pairs) AddFlags(f *flag.FlagSet) {
	f.IntVar(&p.Pairs, "pairs", 3, "pairs of runs (Kueue first in odd pairs, koord-queue first in even ones)")
	f.StringVar(&p.Only, "only", "", "run one side only: kueue or koord-queue (for development)")
	f.StringVar(&p.Binary, "binary", "", "the koord-queue binary to measure (default: built from ./cmd/queue)")
	f.StringVar(&p.Out, "out", "", fmt.Sprintf("directory for the results, whose earlier runs (pair-*) are removed first (default: the repository's _output/perf/%s for baseline, _output/perf/%s-<config> for another)", p.OutName, p.OutName))
	f.BoolVar(&p.KeepAudit, "keep-audit", false, "keep each run's audit logs (large) once counted")
}

// Complete checks -only and fills in -out's default.
func (p *Pairs) Complete() error {
	if p.Only != "" && p.Only != "kueue" && p.Only != "koord-queue" {
		return fmt.Errorf("-only must be kueue or koord-queue")
	}
	if p.Out == "" {
		p.Out = filepath.Join(cluster.RepoRoot(), "_output", "perf", p.OutName)
		if p.Config != "baseline" {
			p.Out += "-" + p.Config
		}
	}
	return nil
}

// Runs reports whether -only leaves the system in.
func (p *Pairs) Runs(system string) bool { return !Skipped(system, p.Only) }

// PrepareOut creates -out and removes its earlier runs (pair-*): a summary
// is of one run's pairs.
func (p *Pairs) PrepareOut() error {
	if err := os.MkdirAll(p.Out, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", p.Out, err)
	}
	earlier, _ := filepath.Glob(filepath.Join(p.Out, "pair-*"))
	for _, dir := range earlier {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing the earlier run %s: %w", dir, err)
		}
	}
	return nil
}

// CommandLine reproduces this invocation, for the summary.
func (p *Pairs) CommandLine(args []string) string {
	return strings.TrimSpace("go -C test/performance run ./cmd/" + p.Name + " " + strings.Join(args, " "))
}

// RunFunc runs one system into dir; a run that did not complete is a
// Measurement with Error set, an error stops every run.
type RunFunc func(ctx context.Context, system, dir string) (Measurement, error)

// Run runs the pairs (PairOrder, leaving out what -only does), each run
// into <out>/pair-<n>/<DirName>, saves each measurement with its pair,
// position and commit, prints line(m), and calls summarize with the runs so
// far after each one.
func (p *Pairs) Run(ctx context.Context, run RunFunc, line func(Measurement) string, summarize func([]Measurement) error) error {
	commit := GitCommit()
	var ms []Measurement
	for pair := 1; pair <= p.Pairs; pair++ {
		position := 0
		for _, system := range PairOrder(pair) {
			if !p.Runs(system) {
				continue
			}
			position++
			dir := filepath.Join(p.Out, fmt.Sprintf("pair-%d", pair), DirName(system))
			fmt.Printf("Pair %d of %d, %s (run %d of the pair) into %s, load %.2f\n", pair, p.Pairs, system, position, dir, LoadAverage())
			m, err := run(ctx, system, dir)
			if err != nil {
				return fmt.Errorf("pair %d, %s: %w", pair, system, err)
			}
			m.Pair, m.Position, m.Commit = pair, position, commit
			if err := WriteMeasurement(dir, m); err != nil {
				return err
			}
			fmt.Print(line(m))
			ms = append(ms, m)
			if err := summarize(ms); err != nil {
				return err
			}
		}
	}
	fmt.Printf("Results in %s\n", filepath.Join(p.Out, "summary.md"))
	return nil
}

// Resummarized is a summary's command when -summarize wrote it.
const Resummarized = "(re-summarized; see each run's measurement.json)"

// WriteSummary writes rep to <out>/summary.json and markdown to
// <out>/summary.md.
func (p *Pairs) WriteSummary(rep Report, markdown string) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding summary: %w", err)
	}
	if err := os.WriteFile(filepath.Join(p.Out, "summary.json"), data, 0o644); err != nil {
		return fmt.Errorf("writing summary.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(p.Out, "summary.md"), []byte(markdown), 0o644); err != nil {
		return fmt.Errorf("writing summary.md: %w", err)
	}
	return nil
}

// PairOrder is the order the systems run in within pair (1-based): Kueue
// first in odd pairs, koord-queue first in even ones, so that neither
// always runs on the machine the other has warmed.
func PairOrder(pair int) []string {
	if pair%2 == 0 {
		return []string{KoordQueue, Kueue}
	}
	return []string{Kueue, KoordQueue}
}

// Skipped reports whether -only (kueue, koord-queue or empty) leaves the
// system out.
func Skipped(system, only string) bool {
	return (system == Kueue && only == "koord-queue") || (system == KoordQueue && only == "kueue")
}
