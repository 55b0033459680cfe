// Command perfcompare runs Kueue's scheduler performance test and
// koord-queue's mirror of it on this machine, one right after the other,
// in pairs of alternating order (Kueue first in odd pairs), and writes one
// table of both: <out>/summary.md and summary.json (`make perf-compare`).
//
// Kueue's side is its own runner, minimalkueue and checker, built unchanged
// from the release hack/tools/kueue pins (hack/ensure-tools.sh kueue), run
// as Kueue's CI runs them, on the kube-apiserver and etcd koord-queue's
// harness runs on. koord-queue's side is the harness (package harness) on
// the scenario that mirrors Kueue's config. Both API servers log writes to
// an audit log, so that both controllers' writes are counted the same way.
//
//	go -C test/performance run ./cmd/perfcompare                          # baseline, 3 pairs
//	go -C test/performance run ./cmd/perfcompare -pairs 1 -only koord-queue -binary /tmp/kq
//	go -C test/performance run ./cmd/perfcompare -config large-scale
//	go -C test/performance run ./cmd/perfcompare -summarize               # the table again from <out>
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
	"github.com/koord-queue/koord-queue/test/performance/checker"
	"github.com/koord-queue/koord-queue/test/performance/compare"
	"github.com/koord-queue/koord-queue/test/performance/harness"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "perfcompare: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	compare.Pairs
	scenario                       string
	kueueGenerator, kueueRangeSpec string
	kueueTimeout                   time.Duration
	short, audit                   bool
}

func run() error {
	o := options{Pairs: compare.Pairs{Name: "perfcompare", OutName: "compare"}}
	if err := newFlags(&o).Parse(os.Args[1:]); err != nil {
		return err
	}
	if err := o.Complete(); err != nil {
		return err
	}
	cfg, ok := compare.Configs[o.Config]
	if !ok {
		return fmt.Errorf("unknown -config %q (known: %s)", o.Config, strings.Join(compare.ConfigNames(), ", "))
	}
	if o.scenario == "" {
		o.scenario = cfg.Scenario
	}
	if o.Summarize {
		ms, err := compare.ReadMeasurements(o.Out)
		if err != nil {
			return err
		}
		for i := range ms {
			recounted, err := compare.RecountWrites(&ms[i])
			if err != nil {
				return fmt.Errorf("counting the writes of %s again: %w", ms[i].Dir, err)
			}
			if recounted {
				fmt.Printf("Writes of %s counted again from its audit logs: %d\n", ms[i].Dir, ms[i].Writes)
				if err := compare.WriteMeasurement(ms[i].Dir, ms[i]); err != nil {
					return err
				}
			}
		}
		return writeSummary(o, ms, compare.Resummarized)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := o.PrepareOut(); err != nil {
		return err
	}
	kueue, err := o.kueueRun(cfg)
	if err != nil && o.Runs(compare.Kueue) {
		return err
	}
	var s scenario.Scenario
	if o.Runs(compare.KoordQueue) || o.short {
		if s, err = scenario.Get(o.scenario, o.short); err != nil {
			return fmt.Errorf("koord-queue's scenario for %s: %w (-koord-queue-scenario names another)", o.Config, err)
		}
	}
	if o.short && o.kueueGenerator == "" && kueue != nil {
		if kueue.GeneratorConfig, err = shortKueueConfig(s, o.Out); err != nil {
			return err
		}
	}
	if o.Runs(compare.KoordQueue) && o.Binary == "" {
		fmt.Println("Building koord-queue from ./cmd/queue")
		if o.Binary, err = cluster.BuildBinary(ctx, "./cmd/queue", filepath.Join(o.Out, "bin"), "koord-queue"); err != nil {
			return err
		}
	}
	command := o.CommandLine(os.Args[1:])
	return o.Run(ctx, func(ctx context.Context, system, dir string) (compare.Measurement, error) {
		if system == compare.Kueue {
			k := *kueue
			k.Dir = dir
			return k.Run(ctx)
		}
		return runKoordQueue(ctx, o, s, dir, command)
	}, compare.Line, func(ms []compare.Measurement) error { return writeSummary(o, ms, command) })
}

func newFlags(o *options) *flag.FlagSet {
	f := flag.NewFlagSet("perfcompare", flag.ExitOnError)
	f.StringVar(&o.Config, "config", "baseline", "Kueue's scenario: "+strings.Join(compare.ConfigNames(), " or "))
	f.StringVar(&o.scenario, "koord-queue-scenario", "", "koord-queue's scenario (default: the one that mirrors -config: "+compare.ScenarioNames()+")")
	o.AddFlags(f)
	f.StringVar(&o.kueueGenerator, "kueue-generator", "", "another generator.yaml for Kueue's runner (for development)")
	f.StringVar(&o.kueueRangeSpec, "kueue-rangespec", "", "another rangespec.yaml for Kueue's checker (for development)")
	f.DurationVar(&o.kueueTimeout, "kueue-timeout", 0, "Kueue's runner --timeout (default: 20m for baseline, where Kueue's CI keeps the runner's 10m, which two cores with the audit log overrun; 30m for large-scale, as its CI)")
	f.BoolVar(&o.short, "short", false, "koord-queue's short variant of its scenario, and Kueue's config in the same shape (unless -kueue-generator): for development")
	f.BoolVar(&o.audit, "audit", true, "have both API servers log writes, to count each controller's writes")
	f.BoolVar(&o.Summarize, "summarize", false, "do not run: write the summary again from the measurements in -out, counting the writes again where a run kept its audit logs (-keep-audit)")
	return f
}

// kueueRun prepares Kueue's side: its binaries, module and config.
func (o options) kueueRun(cfg compare.Config) (*compare.KueueRun, error) {
	k := &compare.KueueRun{Audit: o.audit, KeepAudit: o.KeepAudit, Timeout: cfg.Timeout, Progress: os.Stdout}
	if o.kueueTimeout > 0 {
		k.Timeout = o.kueueTimeout
	}
	var err error
	tools := map[string]*string{
		"performance-scheduler-runner": &k.Runner, "minimalkueue": &k.MinimalKueue, "kueue-perf-checker": &k.Checker,
		"kube-apiserver": &k.APIServer, "etcd": &k.Etcd,
	}
	for name, into := range tools {
		if *into, err = cluster.Tool(name); err != nil {
			return nil, fmt.Errorf("%w (Kueue's tools: bash hack/ensure-tools.sh kueue)", err)
		}
	}
	if k.ProjectDir, err = compare.KueueModuleDir(); err != nil {
		return nil, err
	}
	k.GeneratorConfig, k.RangeSpec = cfg.Paths(k.ProjectDir, cluster.RepoRoot())
	if o.kueueGenerator != "" {
		k.GeneratorConfig = o.kueueGenerator
	}
	if o.kueueRangeSpec != "" {
		k.RangeSpec = o.kueueRangeSpec
	}
	return k, nil
}

// shortKueueConfig writes, for -short, Kueue's config in the shape of
// koord-queue's short variant into out, and returns its path.
func shortKueueConfig(s scenario.Scenario, out string) (string, error) {
	shape, err := compare.ScenarioShape(&s)
	if err != nil {
		return "", err
	}
	data, err := shape.KueueConfig()
	if err != nil {
		return "", fmt.Errorf("writing a Kueue config for koord-queue's short %s: %w", s.Name, err)
	}
	path, err := filepath.Abs(filepath.Join(out, "kueue-short-generator.yaml"))
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, data, 0o644)
}

// runKoordQueue runs koord-queue's scenario with the harness, its API
// server logging writes as Kueue's does.
func runKoordQueue(ctx context.Context, o options, s scenario.Scenario, dir, command string) (compare.Measurement, error) {
	opts := harness.Options{
		Dir: dir, Mode: checker.ModeBinary, Binary: o.Binary, Short: o.short, Progress: os.Stdout,
		Command: command + " # koord-queue's scenario " + s.Name,
	}
	if o.audit {
		opts.AuditLog = filepath.Join(dir, "audit.log")
	}
	loadBefore := compare.LoadAverage()
	servers := compare.FollowServers(ctx, os.Getpid(), time.Second)
	res, err := harness.Run(ctx, s, opts)
	serverCPU := servers.Stop()
	if ctx.Err() != nil {
		return compare.Measurement{}, ctx.Err()
	}
	if err != nil {
		return compare.Measurement{System: compare.KoordQueue, Dir: dir, Writes: -1, Error: err.Error(), LoadBefore: loadBefore, LoadAfter: compare.LoadAverage()}, nil
	}
	m := compare.FromKoordQueue(res)
	m.Dir, m.LoadBefore, m.LoadAfter, m.ServerCPUSeconds = dir, loadBefore, compare.LoadAverage(), serverCPU
	if o.audit {
		if err := compare.CountWrites(&m, opts.AuditLog, compare.Writers[compare.KoordQueue], o.KeepAudit); err != nil {
			return compare.Measurement{}, err
		}
	}
	return m, nil
}

// writeSummary writes summary.md and summary.json.
func writeSummary(o options, ms []compare.Measurement, command string) error {
	rep := compare.Report{
		Config: o.Config, Scenario: o.scenario, Command: command, Commit: compare.Commits(ms),
		Machine: compare.DescribeMachine(), WrittenAt: time.Now().UTC(), Measurements: ms,
		Table: compare.BuildTable(ms),
	}
	return o.WriteSummary(rep, rep.Markdown())
}
