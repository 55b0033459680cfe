// Command perf runs koord-queue's performance scenarios and checks them
// against their bounds. Each scenario gets a fresh API server; results go to
// <out>/<scenario>/ (result.json, summary.txt, units.png, koord-queue.log)
// and every summary to <out>/summary.txt. It exits 1 if a run fails or a
// bound is missed.
//
//	go -C test/performance run ./cmd/perf -short                  # make perf
//	go -C test/performance run ./cmd/perf -scenarios all          # make perf-full
//	go -C test/performance run ./cmd/perf -scenarios baseline -controller in-process -cpuprofile cpu.pprof
//	go -C test/performance run ./cmd/perf -scenarios baseline -heapprofile heap.pprof   # live heap per unit, and its profile
//	go -C test/performance run ./cmd/perf -scenarios baseline -writes     # koord-queue's API writes, kind by kind
//	go -C test/performance run ./cmd/perf -scenarios baseline -dashboard-pollers 10   # ten open dashboard tabs polling meanwhile
//	go -C test/performance run ./cmd/perf -scenarios baseline -simulate   # the replay alone, in seconds, no API server
//	go -C test/performance run ./cmd/perf -scenarios topology   # multi-pod Jobs within one rack, without and with a rack asked
//
// Every scenario's summary (but restart's: restarts are not modelled) ends
// with its replay: the same scenario run
// through koord-queue's decision core with perfect plumbing (package
// simulate), and the bound the write budget puts on any run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/performance/checker"
	"github.com/koord-queue/koord-queue/test/performance/harness"
	"github.com/koord-queue/koord-queue/test/performance/jobs"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
	"github.com/koord-queue/koord-queue/test/performance/simulate"
)

func main() {
	ok, err := run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "perf: %v\n", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

func run() (bool, error) {
	var (
		names        = flag.String("scenarios", strings.Join(scenario.Names, ","), "comma-separated scenarios to run, of "+strings.Join(scenario.Names, ", ")+", "+scenario.DeclaredName+", "+jobs.Name+", "+jobs.TopologyName+"; or all; or "+scenario.FailoverLargeName+", "+scenario.RestartLargeName+" (not in all)")
		short        = flag.Bool("short", false, "run the short variants (about two minutes in all, loose bounds)")
		out          = flag.String("out", filepath.Join(cluster.RepoRoot(), "_output", "perf"), "directory for the results (a relative one is relative to the working directory: test/performance under go -C test/performance run)")
		mode         = flag.String("controller", checker.ModeBinary, "run koord-queue as a separate process (binary: CPU and RSS measured) or in this process (in-process: for -cpuprofile)")
		cpuProfile   = flag.String("cpuprofile", "", "with -controller in-process: write a CPU profile of each scenario to <out>/<scenario>/<this name>")
		heapProfile  = flag.String("heapprofile", "", "with -controller binary: serve koord-queue's /debug/pprof, report its live heap per unit, and write a heap profile, taken once every unit finished, to <out>/<scenario>/<this name>")
		jobPodSets   = flag.Bool("job-pod-sets", false, "units carry the pod set (pod template) koord-queue-controllers writes for a one-pod batch Job, not their request alone: what templates cost memory")
		prebuilt     = flag.String("binary", "", "a koord-queue binary to measure instead of building ./cmd/queue (to compare a change)")
		extBinary    = flag.String("extensions-binary", "", "scenario jobs: a koord-queue-controllers binary to measure instead of building ./cmd/extensions")
		jobsProfiles = flag.Bool("jobs-profiles", false, "scenario jobs: serve both binaries' /debug/pprof and write their CPU profiles while the Jobs run (<out>/jobs/cpu-<binary>-<n>.pprof, 10 s each; give them all to go tool pprof) and their heap profiles at the end (heap-<binary>.pprof)")
		measureCast  = flag.Bool("forecast", false, "read koord-queue's forecast of every waiting unit through the visibility API and report its error against the admissions (the declared scenario always does)")
		writes       = flag.Bool("writes", false, "have the API server log every write (with the bodies of those to Events and QueueUnits) and break koord-queue's down by kind in the summary: what each admission costs")
		keepAudit    = flag.Bool("keep-audit", false, "with -writes: keep <out>/<scenario>/audit.log (large) once counted")
		pollers      = flag.Int("dashboard-pollers", 0, "this many open dashboard tabs read the visibility API every 3 s, as the dashboard does, while each scenario runs (not failover ones); the summary says what their refreshes took")
		scrape       = flag.Duration("scrape-interval", 0, "read koord-queue's /metrics this often while each scenario runs (not failover ones), as Prometheus does; each scrape has the forecast computed (at most once every 5 s); 0: once, at the end")
		extraFlags   = flag.String("koord-queue-flags", "", "space-separated flags added to koord-queue's command line (to compare settings)")
		simulateOnly = flag.Bool("simulate", false, "only replay the scenarios through the decision core in virtual time (no API server): what the decisions cost with no delays")
		decideAhead  = flag.Bool("simulate-decide-ahead", false, "with -simulate: decide every admission that fits at once, as koord-queue did before it paced its decisions")
		latency      = flag.Duration("simulate-latency", 0, "with -simulate: delay between a write and whoever it concerns (runner, koord-queue), to see what a real run's delays cost")
		delay        = flag.String("simulate-preemption-delay", "", "with -simulate: every queue's koord-queue/preemption-delay (0: preempt at once, as before it existed); empty: the queues' own")
	)
	flag.Parse()
	list := strings.Split(*names, ",")
	if *names == "all" {
		list = append(slices.Clone(scenario.Names), scenario.DeclaredName, jobs.Name, jobs.TopologyName)
	}
	if *mode != checker.ModeBinary && *mode != checker.ModeInProcess {
		return false, fmt.Errorf("-controller must be %s or %s", checker.ModeBinary, checker.ModeInProcess)
	}
	if *heapProfile != "" && *mode != checker.ModeBinary {
		return false, fmt.Errorf("-heapprofile needs -controller %s: in-process, the harness's own caches share the heap", checker.ModeBinary)
	}
	var scenarios []scenario.Scenario
	for _, name := range list {
		if name == jobs.Name || name == jobs.TopologyName {
			continue
		}
		s, err := scenario.Get(name, *short)
		if err != nil {
			return false, err
		}
		s.JobPodSets = *jobPodSets
		scenarios = append(scenarios, s)
	}
	opts := simulate.Options{Latency: *latency, DecideAhead: *decideAhead}
	if *delay != "" {
		d, err := time.ParseDuration(*delay)
		if err != nil {
			return false, fmt.Errorf("-simulate-preemption-delay: %w", err)
		}
		opts.PreemptionDelay = &d
	}
	replays := map[string]*simulate.Result{}
	for _, s := range scenarios {
		if s.Restarts > 0 || s.Failover != nil {
			continue // the replay has no restarts to model
		}
		replay, err := simulate.Run(&s, opts)
		if err != nil {
			return false, fmt.Errorf("replaying %s: %w", s.Name, err)
		}
		replays[s.Name] = replay
		if *simulateOnly {
			fmt.Print(replay.Text())
		}
	}
	if *simulateOnly {
		return true, nil
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return false, fmt.Errorf("creating %s: %w", *out, err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	binDir := filepath.Join(*out, "bin")
	binary := *prebuilt
	onKwok := slices.Contains(list, jobs.Name) || slices.Contains(list, jobs.TopologyName)
	if binary == "" && (*mode == checker.ModeBinary || onKwok) {
		fmt.Println("Building koord-queue from ./cmd/queue")
		var err error
		if binary, err = cluster.BuildBinary(ctx, "./cmd/queue", binDir, "koord-queue"); err != nil {
			return false, err
		}
	}

	command := "go -C test/performance run ./cmd/perf " + strings.Join(os.Args[1:], " ")
	var results []*checker.Result
	var failures []error
	for _, s := range scenarios {
		fmt.Printf("Running %s: %s (%d units)\n", s.Name, s.Title, s.Units())
		opts := harness.Options{
			Dir: filepath.Join(*out, s.Name), Mode: *mode, Binary: binary, ExtraArgs: strings.Fields(*extraFlags),
			Command: command + " # scenario " + s.Name, Short: *short, Progress: os.Stdout, Forecast: *measureCast,
			Writes: *writes, KeepAudit: *keepAudit, DashboardPollers: *pollers, ScrapeInterval: *scrape,
		}
		if *cpuProfile != "" {
			opts.CPUProfile = filepath.Join(opts.Dir, *cpuProfile)
		}
		if *heapProfile != "" {
			opts.HeapProfile = filepath.Join(opts.Dir, *heapProfile)
		}
		res, err := harness.Run(ctx, s, opts)
		if err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", s.Name, err))
			fmt.Printf("%s failed: %v\n", s.Name, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		fmt.Print(res.Text())
		if replay, ok := replays[s.Name]; ok {
			fmt.Print(replay.Text())
		}
		results = append(results, res)
	}
	if slices.Contains(list, jobs.Name) && ctx.Err() == nil {
		fmt.Printf("Running %s\n", jobs.Name)
		res, err := jobs.Run(ctx, jobs.Options{
			Dir: filepath.Join(*out, jobs.Name), QueueBinary: binary, BinDir: binDir, ExtensionsBinary: *extBinary, Profiles: *jobsProfiles,
			Command: command + " # scenario " + jobs.Name, Short: *short, Progress: os.Stdout,
		})
		if err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", jobs.Name, err))
			fmt.Printf("%s failed: %v\n", jobs.Name, err)
		} else {
			fmt.Print(res.Text())
			results = append(results, res)
		}
	}

	if slices.Contains(list, jobs.TopologyName) && ctx.Err() == nil {
		fmt.Printf("Running %s\n", jobs.TopologyName)
		phases, err := jobs.RunTopology(ctx, jobs.Options{
			Dir: filepath.Join(*out, jobs.TopologyName), QueueBinary: binary, BinDir: binDir, ExtensionsBinary: *extBinary,
			Command: command + " # scenario " + jobs.TopologyName, Short: *short, Progress: os.Stdout,
		})
		for _, res := range phases {
			fmt.Print(res.Text())
			results = append(results, res)
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", jobs.TopologyName, err))
			fmt.Printf("%s failed: %v\n", jobs.TopologyName, err)
		}
	}

	var summary strings.Builder
	ok := len(failures) == 0
	for _, res := range results {
		summary.WriteString(res.Text())
		if replay, ok := replays[res.Scenario]; ok {
			summary.WriteString(replay.Text())
		}
		summary.WriteString("\n")
		ok = ok && res.OK()
	}
	for _, err := range failures {
		fmt.Fprintf(&summary, "FAILED %v\n", err)
	}
	if err := os.WriteFile(filepath.Join(*out, "summary.txt"), []byte(summary.String()), 0o644); err != nil {
		return false, fmt.Errorf("writing summary: %w", err)
	}
	fmt.Printf("Results in %s\n", *out)
	return ok, nil
}
