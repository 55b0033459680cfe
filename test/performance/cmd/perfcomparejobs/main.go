// Command perfcomparejobs runs Kueue's real manager and koord-queue (with
// koord-queue-controllers) on the same batch Jobs, one after the other,
// each on a fresh local cluster of the same binaries (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok nodes), in
// pairs of alternating order (Kueue first in odd pairs), and writes one
// table of both: <out>/summary.md and summary.json (`make
// perf-compare-jobs`).
//
// The Jobs are Kueue's generator config translated (package compare's
// Shape): its cohorts and ClusterQueues become Kueue's own objects for
// Kueue and an ElasticQuota tree for koord-queue, its workload classes
// Jobs of one pod of the same cpu, priority and runtime, created on the
// same schedule.
//
//	go -C test/performance run ./cmd/perfcomparejobs                   # baseline, 3 pairs
//	go -C test/performance run ./cmd/perfcomparejobs -config smoke -pairs 1
//	go -C test/performance run ./cmd/perfcomparejobs -summarize        # the table again from <out>
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/performance/compare"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "perfcomparejobs: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	config, only, binary, extensions, out string
	pairs                                 int
	timeout                               time.Duration
	keepAudit, summarize                  bool
}

func newFlags(o *options) *flag.FlagSet {
	f := flag.NewFlagSet("perfcomparejobs", flag.ExitOnError)
	f.StringVar(&o.config, "config", "baseline", "Kueue's generator config to translate into Jobs: "+strings.Join(compare.JobsConfigNames(), " or "))
	f.IntVar(&o.pairs, "pairs", 3, "pairs of runs (Kueue first in odd pairs, koord-queue first in even ones)")
	f.StringVar(&o.only, "only", "", "run one side only: kueue or koord-queue (for development)")
	f.StringVar(&o.binary, "binary", "", "the koord-queue binary to measure (default: built from ./cmd/queue)")
	f.StringVar(&o.extensions, "extensions-binary", "", "the koord-queue-controllers binary to measure (default: built from ./cmd/extensions)")
	f.StringVar(&o.out, "out", "", "directory for the results, whose earlier runs (pair-*) are removed first (default: the repository's _output/perf/compare-jobs for baseline, _output/perf/compare-jobs-<config> for another)")
	f.DurationVar(&o.timeout, "timeout", 0, "bound on each run, from the cluster's start to the last Job complete (default: the config's: "+configTimeouts()+")")
	f.BoolVar(&o.keepAudit, "keep-audit", false, "keep each run's audit log (large) once counted")
	f.BoolVar(&o.summarize, "summarize", false, "do not run: write the summary again from the measurements in -out")
	return f
}

func configTimeouts() string {
	var parts []string
	for _, name := range compare.JobsConfigNames() {
		parts = append(parts, name+" "+compare.JobsConfigs[name].Timeout.String())
	}
	return strings.Join(parts, ", ")
}

func run() error {
	var o options
	if err := newFlags(&o).Parse(os.Args[1:]); err != nil {
		return err
	}
	if o.only != "" && o.only != "kueue" && o.only != "koord-queue" {
		return fmt.Errorf("-only must be kueue or koord-queue")
	}
	cfg, ok := compare.JobsConfigs[o.config]
	if !ok {
		return fmt.Errorf("unknown -config %q (known: %s)", o.config, strings.Join(compare.JobsConfigNames(), ", "))
	}
	if o.timeout == 0 {
		o.timeout = cfg.Timeout
	}
	if o.out == "" {
		o.out = filepath.Join(cluster.RepoRoot(), "_output", "perf", "compare-jobs")
		if o.config != "baseline" {
			o.out += "-" + o.config
		}
	}
	if o.summarize {
		ms, err := compare.ReadMeasurements(o.out)
		if err != nil {
			return err
		}
		return writeSummary(o, ms, "(re-summarized; see each run's measurement.json)")
	}

	moduleDir, err := compare.KueueModuleDir()
	if err != nil {
		return err
	}
	gen, err := compare.ReadKueueGeneratorConfig(cfg.Generator(moduleDir, cluster.RepoRoot()))
	if err != nil {
		return err
	}
	shape, err := gen.Shape()
	if err != nil {
		return fmt.Errorf("Kueue's %s config: %w", o.config, err)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", o.out, err)
	}
	if err := compare.RemoveEarlierRuns(o.out); err != nil {
		return err
	}
	base := compare.JobsRun{Shape: shape, Timeout: o.timeout, KeepAudit: o.keepAudit, Progress: os.Stdout}
	if o.only != "koord-queue" {
		if base.KueueManager, err = cluster.Tool("kueue-manager"); err != nil {
			return fmt.Errorf("%w (Kueue's manager: bash hack/ensure-tools.sh kueue)", err)
		}
		base.KueueCRDs = filepath.Join(moduleDir, "config", "components", "crd", "bases")
	}
	if o.only != "kueue" {
		bin := filepath.Join(o.out, "bin")
		if base.QueueBinary = o.binary; base.QueueBinary == "" {
			fmt.Println("Building koord-queue from ./cmd/queue")
			if base.QueueBinary, err = cluster.BuildBinary(ctx, "./cmd/queue", bin, "koord-queue"); err != nil {
				return err
			}
		}
		if base.ExtensionsBinary = o.extensions; base.ExtensionsBinary == "" {
			fmt.Println("Building koord-queue-controllers from ./cmd/extensions")
			if base.ExtensionsBinary, err = cluster.BuildBinary(ctx, "./cmd/extensions", bin, "koord-queue-controllers"); err != nil {
				return err
			}
		}
	}

	command := "go -C test/performance run ./cmd/perfcomparejobs " + strings.Join(os.Args[1:], " ")
	commit := compare.GitCommit()
	fmt.Printf("Kueue's %s shape as %d Jobs: %d cohorts × %d ClusterQueues\n", o.config, shape.Jobs(), shape.Parents, shape.ChildrenPerParent)
	var ms []compare.Measurement
	for pair := 1; pair <= o.pairs; pair++ {
		position := 0
		for _, system := range compare.PairOrder(pair) {
			if compare.Skipped(system, o.only) {
				continue
			}
			position++
			r := base
			r.System = system
			r.Dir = filepath.Join(o.out, fmt.Sprintf("pair-%d", pair), compare.DirName(system))
			fmt.Printf("Pair %d of %d, %s (run %d of the pair) into %s, load %.2f\n", pair, o.pairs, system, position, r.Dir, compare.LoadAverage())
			m, err := r.Run(ctx)
			if err != nil {
				return fmt.Errorf("pair %d, %s: %w", pair, system, err)
			}
			m.Pair, m.Position, m.Commit = pair, position, commit
			if err := compare.WriteMeasurement(r.Dir, m); err != nil {
				return err
			}
			fmt.Print(line(m))
			ms = append(ms, m)
			if err := writeSummary(o, ms, command); err != nil {
				return err
			}
		}
	}
	fmt.Printf("Results in %s\n", filepath.Join(o.out, "summary.md"))
	return nil
}

// line is one run in a line, for the progress output.
func line(m compare.Measurement) string {
	if m.Error != "" {
		return fmt.Sprintf("  %s FAILED: %s\n", m.System, m.Error)
	}
	return fmt.Sprintf("  %s: wall %.1fs, %d Jobs, %.1f CPU s, peak RSS %.0f MiB, %.2f writes per Job, %d evictions\n",
		m.System, m.WallSeconds, m.Jobs, m.CPUSeconds, m.PeakRSSMiB, m.WritesPerJob(), m.Evictions)
}

// writeSummary writes summary.md and summary.json.
func writeSummary(o options, ms []compare.Measurement, command string) error {
	rep := compare.Report{
		Config: o.config, Scenario: "jobs", Command: command, Commit: compare.Commits(ms),
		Machine: compare.DescribeMachine(), WrittenAt: time.Now().UTC(), Measurements: ms,
		Table: compare.BuildJobsTable(ms),
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding summary: %w", err)
	}
	if err := os.WriteFile(filepath.Join(o.out, "summary.json"), data, 0o644); err != nil {
		return fmt.Errorf("writing summary.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(o.out, "summary.md"), []byte(rep.JobsMarkdown()), 0o644); err != nil {
		return fmt.Errorf("writing summary.md: %w", err)
	}
	return nil
}
