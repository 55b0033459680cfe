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
	compare.Pairs
	extensions string
	timeout    time.Duration
	cutOff     bool
	profiles   bool
}

func newFlags(o *options) *flag.FlagSet {
	f := flag.NewFlagSet("perfcomparejobs", flag.ExitOnError)
	f.StringVar(&o.Config, "config", "baseline", "Kueue's generator config to translate into Jobs: "+strings.Join(compare.JobsConfigNames(), " or "))
	o.AddFlags(f)
	f.StringVar(&o.extensions, "extensions-binary", "", "the koord-queue-controllers binary to measure (default: built from ./cmd/extensions)")
	f.DurationVar(&o.timeout, "timeout", 0, "bound on each run, from the cluster's start to the last Job complete (default: the config's: "+configTimeouts()+")")
	f.BoolVar(&o.cutOff, "cut-off", false, "keep a run whose -timeout passes before every Job completes: stop it there and report what it reached as lower bounds (≥ in the table; ratios then bounded, ≤ or ≥), rather than fail it")
	f.BoolVar(&o.profiles, "profiles", false, "serve koord-queue's and koord-queue-controllers' /debug/pprof and write into each run's directory their CPU profiles while the Jobs run (cpu-<binary>-<n>.pprof, 10 s each; give them all to go tool pprof) and their heap profiles once every Job completed (heap-<binary>.pprof); the profiling's CPU is measured with theirs")
	f.BoolVar(&o.Summarize, "summarize", false, "do not run: write the summary again from the measurements in -out")
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
	o := options{Pairs: compare.Pairs{Name: "perfcomparejobs", OutName: "compare-jobs"}}
	if err := newFlags(&o).Parse(os.Args[1:]); err != nil {
		return err
	}
	if err := o.Complete(); err != nil {
		return err
	}
	cfg, ok := compare.JobsConfigs[o.Config]
	if !ok {
		return fmt.Errorf("unknown -config %q (known: %s)", o.Config, strings.Join(compare.JobsConfigNames(), ", "))
	}
	if o.timeout == 0 {
		o.timeout = cfg.Timeout
	}
	if o.Summarize {
		ms, err := compare.ReadMeasurements(o.Out)
		if err != nil {
			return err
		}
		return writeSummary(o, ms, compare.Resummarized)
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
		return fmt.Errorf("the %s config of Kueue: %w", o.Config, err)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := o.PrepareOut(); err != nil {
		return err
	}
	base := compare.JobsRun{Shape: shape, Timeout: o.timeout, CutOff: o.cutOff, Profiles: o.profiles, KeepAudit: o.KeepAudit, Progress: os.Stdout}
	if o.Runs(compare.Kueue) {
		if err := compare.CheckKueueFixedCerts(); err != nil {
			return err
		}
		if base.KueueManager, err = cluster.Tool("kueue-manager"); err != nil {
			return fmt.Errorf("%w (Kueue's manager: bash hack/ensure-tools.sh kueue)", err)
		}
		base.KueueCRDs = filepath.Join(moduleDir, "config", "components", "crd", "bases")
	}
	if o.Runs(compare.KoordQueue) {
		bin := filepath.Join(o.Out, "bin")
		if base.QueueBinary = o.Binary; base.QueueBinary == "" {
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

	command := o.CommandLine(os.Args[1:])
	fmt.Printf("Kueue's %s shape as %d Jobs: %d cohorts × %d ClusterQueues\n", o.Config, shape.Jobs(), shape.Parents, shape.ChildrenPerParent)
	return o.Run(ctx, func(ctx context.Context, system, dir string) (compare.Measurement, error) {
		r := base
		r.System, r.Dir = system, dir
		return r.Run(ctx)
	}, line, func(ms []compare.Measurement) error { return writeSummary(o, ms, command) })
}

// line is one run in a line, for the progress output.
func line(m compare.Measurement) string {
	if m.Error != "" {
		return fmt.Sprintf("  %s FAILED: %s\n", m.System, m.Error)
	}
	if m.CutOff {
		return fmt.Sprintf("  %s: cut off at %.1fs with %d of %d Jobs complete, %.1f CPU s, peak RSS %.0f MiB, %.2f writes per Job of the shape, %d evictions\n",
			m.System, m.WallSeconds, m.Jobs, m.JobsInShape, m.CPUSeconds, m.PeakRSSMiB, m.WritesPerJob(), m.Evictions)
	}
	return fmt.Sprintf("  %s: wall %.1fs, %d Jobs, %.1f CPU s, peak RSS %.0f MiB, %.2f writes per Job, %d evictions\n",
		m.System, m.WallSeconds, m.Jobs, m.CPUSeconds, m.PeakRSSMiB, m.WritesPerJob(), m.Evictions)
}

// writeSummary writes summary.md and summary.json.
func writeSummary(o options, ms []compare.Measurement, command string) error {
	rep := compare.Report{
		Config: o.Config, Scenario: "jobs", Command: command, Commit: compare.Commits(ms),
		Machine: compare.DescribeMachine(), WrittenAt: time.Now().UTC(), Measurements: ms,
		Table: compare.BuildJobsTable(ms),
	}
	return o.WriteSummary(rep, rep.JobsMarkdown())
}
