// Package harness runs one performance scenario end to end: a fresh API
// server and etcd (envtest, on the pinned binaries), koord-queue with the
// scenario's QPS and burst, and the harness's own generator, runner and
// checker, each with its own client. It writes result.json, summary.txt
// and units.png into the scenario's output directory.
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/performance/checker"
	"github.com/koord-queue/koord-queue/test/performance/churn"
	"github.com/koord-queue/koord-queue/test/performance/controller"
	"github.com/koord-queue/koord-queue/test/performance/dashboard"
	"github.com/koord-queue/koord-queue/test/performance/forecast"
	"github.com/koord-queue/koord-queue/test/performance/generator"
	"github.com/koord-queue/koord-queue/test/performance/kube"
	"github.com/koord-queue/koord-queue/test/performance/plot"
	"github.com/koord-queue/koord-queue/test/performance/runner"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// Options configure a run.
type Options struct {
	// Dir receives the scenario's files.
	Dir string
	// Mode is checker.ModeBinary or checker.ModeInProcess.
	Mode string
	// Binary is the koord-queue binary, for checker.ModeBinary.
	Binary string
	// ExtraArgs are added to koord-queue's command line, for checker.ModeBinary.
	ExtraArgs []string
	// CPUProfile, for checker.ModeInProcess, writes a CPU profile of the run.
	CPUProfile string
	// HeapProfile, for checker.ModeBinary (and no restarts), serves
	// koord-queue's /debug/pprof (--pprof-bind-address), reads its live
	// heap before the first unit and once every unit has finished (every
	// unit then in its caches), and saves the heap profile of that moment
	// here.
	HeapProfile string
	// Command is what reproduces the run, for the result.
	Command string
	Short   bool
	// Progress receives a line every ten seconds.
	Progress io.Writer
	// AuditLog, if set, has the API server log every write there
	// (cluster.AuditFlags), for cluster.WritesBy.
	AuditLog string
	// Writes has the API server log every write, with the bodies of those
	// to Events and QueueUnits (cluster.AuditFlagsWithBodies), to
	// <Dir>/audit.log, and the result break them down by who wrote what
	// (checker.CountWrites). The log is removed once counted unless
	// KeepAudit. It excludes AuditLog.
	Writes, KeepAudit bool
	// Forecast reads koord-queue's forecast of every waiting unit through
	// the visibility API while the run goes on and reports its error
	// (package forecast), as a scenario with MeasureForecast always does.
	// For checker.ModeBinary.
	Forecast bool
	// DashboardPollers is how many open dashboard tabs poll the visibility
	// API (package dashboard) from koord-queue's start to the run's end.
	// For checker.ModeBinary; not in failover scenarios.
	DashboardPollers int
	// ScrapeInterval, when set, has Prometheus's part played: koord-queue's
	// /metrics is read this often from its start to the run's end (each
	// scrape serves the latest forecast and has the next one computed).
	// For checker.ModeBinary; not in failover scenarios.
	ScrapeInterval time.Duration
}

// Run runs the scenario and returns its checked result. An error means the
// run could not be carried out; a run that misses a bound is a result whose
// OK is false.
func Run(ctx context.Context, s scenario.Scenario, opts Options) (*checker.Result, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", opts.Dir, err)
	}
	audit := cluster.AuditFlags
	if opts.Writes {
		if opts.AuditLog != "" {
			return nil, fmt.Errorf("set AuditLog or Writes, not both")
		}
		opts.AuditLog, audit = filepath.Join(opts.Dir, "audit.log"), cluster.AuditFlagsWithBodies
	}
	// The servers' own logs say what a failed request does not (a client
	// sees an API server that dropped its connection as "unexpected EOF").
	serverLog, err := os.Create(filepath.Join(opts.Dir, "servers.log"))
	if err != nil {
		return nil, fmt.Errorf("creating the servers' log: %w", err)
	}
	defer serverLog.Close()
	env, cfg, err := startAPIServer(opts.Dir, opts.AuditLog, audit, serverLog)
	if err != nil {
		return nil, err
	}
	defer func() { _ = env.Stop() }()
	kubeconfig := filepath.Join(opts.Dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	defer os.Remove(kubeconfig)

	r := &run{s: &s, opts: opts, cfg: cfg, kubeconfig: kubeconfig, crashed: make(chan error, 1), servers: serverProcesses(env)}
	res, err := r.run(ctx)
	if err != nil {
		return nil, err
	}
	return res, r.write(res)
}

// startAPIServer starts etcd and kube-apiserver with koord-queue's CRDs,
// with room for the harness's request rate (as Kueue's harness does), and,
// if auditLog is set, logging every write there (the policy in dir). Both
// servers write their output to log.
func startAPIServer(dir, auditLog string, auditFlags func(dir, logPath string) ([]string, error), log io.Writer) (*envtest.Environment, *rest.Config, error) {
	if _, err := cluster.Tool("kube-apiserver"); err != nil {
		return nil, nil, err
	}
	scheme, err := testenv.NewScheme()
	if err != nil {
		return nil, nil, fmt.Errorf("building scheme: %w", err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: cluster.BinDir(),
		CRDDirectoryPaths:     []string{testenv.CRDDir()},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	env.ControlPlane.GetAPIServer().Out, env.ControlPlane.GetAPIServer().Err = log, log
	env.ControlPlane.Etcd = &envtest.Etcd{Out: log, Err: log}
	env.ControlPlane.GetAPIServer().Configure().
		Append("max-requests-inflight", "800").
		Append("max-mutating-requests-inflight", "400")
	if auditLog != "" {
		flags, err := auditFlags(dir, auditLog)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range flags {
			name, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
			env.ControlPlane.GetAPIServer().Configure().Append(name, value)
		}
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, nil, fmt.Errorf("starting the API server: %w", err)
	}
	return env, cfg, nil
}

type run struct {
	s          *scenario.Scenario
	opts       Options
	cfg        *rest.Config
	kubeconfig string
	// servers are the API server's and etcd's process ids, by name.
	servers map[string]int

	recorder *checker.Recorder
	// forecasts are the first forecasts read, when the run measures them.
	forecasts *forecast.Record
	// crashed receives why koord-queue exited when nobody stopped it.
	crashed chan error

	// mu guards the running koord-queue: restarts swap it while the run
	// may be ending.
	mu sync.Mutex
	// ended: the run is over, no restart may start koord-queue again.
	ended bool
	// process or inProcess is the koord-queue running now.
	process   *controller.Process
	inProcess *controller.InProcess
	stats     []controller.Stats
	// pprofAddr serves koord-queue's /debug/pprof, for Options.HeapProfile.
	pprofAddr string
}

// run carries out the scenario: prepare the cluster, start watching,
// start koord-queue, create the quotas and the units, wait until every unit
// finished (restarting koord-queue if the scenario says so), summarize.
func (r *run) run(ctx context.Context) (*checker.Result, error) {
	if r.s.Failover != nil {
		return r.runFailover(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, r.s.Timeout)
	defer cancel()
	genClient, err := kube.Client(r.cfg, "perf-generator")
	if err != nil {
		return nil, err
	}
	if err := generator.Prepare(ctx, genClient, r.s); err != nil {
		return nil, err
	}
	if r.opts.CPUProfile != "" && r.opts.Mode == checker.ModeInProcess {
		stop, err := startCPUProfile(r.opts.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	// The wall clock starts with koord-queue, as Kueue's does; the checker
	// and the runner watch (an empty cluster) from just before.
	start := time.Now()
	r.recorder = checker.NewRecorder(r.s, start, r.s.Units())
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	if err := r.watch(watchCtx); err != nil {
		return nil, err
	}
	if err := r.startController(ctx); err != nil {
		return nil, err
	}
	defer r.stopController(true)
	stopPollers := r.startDashboardPollers(ctx)
	stopScraping := r.startScraping(ctx)
	if r.s.Churn.Quotas > 0 {
		if err := generator.CreateChurnQuotas(ctx, genClient, r.s); err != nil {
			return nil, err
		}
	}
	if err := generator.CreateQuotas(ctx, genClient, r.s); err != nil {
		return nil, err
	}
	stopChurn, err := r.startChurn(ctx)
	if err != nil {
		return nil, err
	}
	cpuBeforeUnits, cpuKnown := r.controllerCPU()
	serversBeforeUnits := r.serverCPU()
	var heapBeforeUnits int64
	if r.pprofAddr != "" {
		if heapBeforeUnits, err = controller.LiveHeap(ctx, r.pprofAddr, ""); err != nil {
			return nil, err
		}
	}
	stopProbe := r.startForecastProbe(ctx)
	genErr := make(chan error, 1)
	go func() { genErr <- generator.Generate(ctx, genClient, r.s) }()
	restartErr := make(chan error, 1)
	go func() { restartErr <- r.restarts(ctx) }()
	if err := r.waitFinished(ctx, start, genErr, restartErr); err != nil {
		stopChurn()
		stopProbe()
		stopPollers()
		stopScraping()
		return nil, err
	}
	churned := stopChurn()
	probeReads, probeFailed := stopProbe()
	polled := stopPollers()
	scrapes, scrapesFailed := stopScraping()
	serversAfterUnits := r.serverCPU()
	var heapWithUnits int64
	if r.pprofAddr != "" {
		if heapWithUnits, err = controller.LiveHeap(ctx, r.pprofAddr, r.opts.HeapProfile); err != nil {
			return nil, err
		}
	}
	r.stopController(true)
	res := r.recorder.Summarize(r.s)
	res.Short, res.Command = r.opts.Short, r.opts.Command
	res.Controller = r.controllerStats(res.WallSeconds)
	if cpuKnown && r.s.Restarts == 0 && res.WorkloadSeconds > 0 {
		// Wall includes the setup (the churn's extra quotas): this is
		// what koord-queue used while the units ran, comparable between
		// scenarios of one workload.
		cpu := res.Controller.CPUSeconds - cpuBeforeUnits
		addExtra(res, "koord-queue CPU seconds from the first unit created", cpu)
		addExtra(res, "koord-queue cores from the first unit created", cpu/res.WorkloadSeconds)
	}
	if r.pprofAddr != "" {
		// Units are never deleted: at the end every one is cached, as
		// it was last written (finished).
		const mib = 1 << 20
		addExtra(res, "koord-queue live heap before the first unit (MiB)", float64(heapBeforeUnits)/mib)
		addExtra(res, "koord-queue live heap with every unit finished (MiB)", float64(heapWithUnits)/mib)
		addExtra(res, "koord-queue live heap per unit (bytes)", float64(heapWithUnits-heapBeforeUnits)/float64(r.s.Units()))
	}
	for name, after := range serversAfterUnits {
		if before, ok := serversBeforeUnits[name]; ok && res.WorkloadSeconds > 0 {
			// The machine's cores are shared: what the API server spent
			// is what the run's requests cost everyone.
			addExtra(res, name+" cores from the first unit created", (after-before)/res.WorkloadSeconds)
		}
	}
	if r.forecasts != nil {
		for name, v := range forecast.Measure(r.forecasts.First(), r.recorder.Times(), forecast.MinWait).Extra() {
			addExtra(res, name, v)
		}
		addExtra(res, "forecast: visibility API reads", float64(probeReads))
		addExtra(res, "forecast: visibility API reads failed", float64(probeFailed))
	}
	if r.opts.ScrapeInterval > 0 {
		addExtra(res, "/metrics scrapes", float64(scrapes))
		addExtra(res, "/metrics scrapes failed", float64(scrapesFailed))
	}
	if polled.Pollers > 0 {
		for name, v := range polled.Extra() {
			addExtra(res, name, v)
		}
	}
	if r.s.Churn.Quotas > 0 {
		addExtra(res, "churn: ElasticQuotas patched", float64(len(r.churnNames())))
		addExtra(res, "churn: rounds", float64(churned.Rounds))
		addExtra(res, "churn: rounds slower than the interval", float64(churned.LateRounds))
		addExtra(res, "churn: patches per second", churned.PatchesPerSecond())
		addExtra(res, "churn: failed patches", float64(churned.Failed))
		if churned.LastError != nil && r.opts.Progress != nil {
			fmt.Fprintf(r.opts.Progress, "  %s: the last of %d failed churn patches: %v\n", r.s.Name, churned.Failed, churned.LastError)
		}
	}
	if r.opts.Writes {
		// The API server is still up: the log holds every write.
		if res.Writes, err = checker.CountWrites(r.opts.AuditLog, checker.KoordQueueAgent, res.Admissions+res.Evictions); err != nil {
			return nil, err
		}
		if !r.opts.KeepAudit {
			if err := cluster.RemoveAuditLogs(r.opts.AuditLog); err != nil {
				return nil, err
			}
		}
	}
	res.Check(r.s.Bounds)
	return res, nil
}

func addExtra(res *checker.Result, name string, value float64) {
	if res.Extra == nil {
		res.Extra = map[string]float64{}
	}
	res.Extra[name] = value
}

// churnNames are the ElasticQuotas the scenario's churn patches: its own,
// then the extra ones.
func (r *run) churnNames() []string {
	var names []string
	for _, q := range r.s.Quotas {
		names = append(names, q.Name)
	}
	names = append(names, r.s.ChurnQuotas()...)
	return names[:min(len(names), r.s.Churn.Quotas)]
}

// startChurn plays koord-scheduler, if the scenario says so, until stop is
// called, through a client whose rate limiter allows the churn's rate (and
// a tenth more, so a round ends within its interval while the API server
// keeps up) and nothing else.
func (r *run) startChurn(ctx context.Context) (stop func() churn.Stats, err error) {
	if r.s.Churn.Quotas == 0 {
		return func() churn.Stats { return churn.Stats{} }, nil
	}
	names := r.churnNames()
	rate := 1.1 * float64(churn.PatchesPerQuota*len(names)) / r.s.Churn.Interval.Seconds()
	c, err := kube.ClientWithBudget(r.cfg, "perf-churn", float32(rate), max(int(rate/10), 1))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan churn.Stats, 1)
	churner := &churn.Churner{Client: c, Namespace: generator.QuotaNamespace, Names: names}
	go func() { done <- churner.Run(ctx, r.s.Churn.Interval) }()
	return func() churn.Stats {
		cancel()
		return <-done
	}, nil
}

// startForecastProbe reads koord-queue's forecast of the waiting units
// until stop is called, if the run measures it (Options.Forecast or the
// scenario's MeasureForecast) and koord-queue runs as a binary (the
// in-process manager serves no visibility API); stop returns how many
// reads the probe made and how many failed.
func (r *run) startForecastProbe(ctx context.Context) (stop func() (reads, failed int)) {
	if !r.opts.Forecast && !r.s.MeasureForecast {
		return func() (int, int) { return 0, 0 }
	}
	if r.opts.Mode == checker.ModeInProcess {
		if r.opts.Progress != nil {
			fmt.Fprintf(r.opts.Progress, "  %s: the forecast is not measured in-process (no visibility API)\n", r.s.Name)
		}
		return func() (int, int) { return 0, 0 }
	}
	r.forecasts = &forecast.Record{}
	var queues []string
	for _, leaf := range r.s.Leaves() {
		queues = append(queues, leaf.Name) // each quota's Queue has its name
	}
	probe := &forecast.Probe{URL: r.visibilityURL, Queues: queues, Record: r.forecasts, Now: time.Now}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		probe.Run(ctx, forecast.DefaultEvery)
	}()
	return func() (int, int) {
		cancel()
		<-done
		reads, failed, last := probe.Stats()
		if last != nil && r.opts.Progress != nil {
			fmt.Fprintf(r.opts.Progress, "  %s: %d of %d forecast reads failed, the last: %v\n", r.s.Name, failed, reads, last)
		}
		return reads, failed
	}
}

// startDashboardPollers runs Options.DashboardPollers open dashboard tabs
// against koord-queue's visibility API (which answers once koord-queue is
// ready) until stop is called, for a binary
// (the in-process manager serves no visibility API); stop returns what
// they did. A failed request is counted, never fatal.
func (r *run) startDashboardPollers(ctx context.Context) (stop func() dashboard.Stats) {
	if r.opts.DashboardPollers <= 0 {
		return func() dashboard.Stats { return dashboard.Stats{} }
	}
	if r.opts.Mode == checker.ModeInProcess {
		if r.opts.Progress != nil {
			fmt.Fprintf(r.opts.Progress, "  %s: no dashboard pollers in-process (no visibility API)\n", r.s.Name)
		}
		return func() dashboard.Stats { return dashboard.Stats{} }
	}
	pollers := &dashboard.Pollers{URL: r.visibilityURL, N: r.opts.DashboardPollers}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pollers.Run(ctx)
	}()
	return func() dashboard.Stats {
		cancel()
		<-done
		st := pollers.Stats()
		if st.LastError != nil && r.opts.Progress != nil {
			fmt.Fprintf(r.opts.Progress, "  %s: %d of %d dashboard requests failed, the last: %v\n", r.s.Name, st.FailedRequests, st.Requests, st.LastError)
		}
		return st
	}
}

// startScraping reads koord-queue's /metrics every Options.ScrapeInterval
// until stop is called, as Prometheus would, for a binary; stop returns
// how many scrapes were made and how many failed (while koord-queue
// restarts, say: counted, never fatal).
func (r *run) startScraping(ctx context.Context) (stop func() (scrapes, failed int)) {
	if r.opts.ScrapeInterval <= 0 || r.opts.Mode == checker.ModeInProcess {
		return func() (int, int) { return 0, 0 }
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var scrapes, failed int
	go func() {
		defer close(done)
		tick := time.NewTicker(r.opts.ScrapeInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r.mu.Lock()
			p := r.process
			r.mu.Unlock()
			if p == nil {
				continue
			}
			scrapes++
			if _, err := p.Scrape(ctx); err != nil && ctx.Err() == nil {
				failed++
			}
		}
	}()
	return func() (int, int) {
		cancel()
		<-done
		return scrapes, failed
	}
}

// visibilityURL is the running koord-queue's visibility API; empty while
// none runs.
func (r *run) visibilityURL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.process == nil {
		return ""
	}
	return r.process.VisibilityURL()
}

// serverProcesses finds the API server's and etcd's processes by the
// directories envtest started them with; a process not found is left out.
func serverProcesses(env *envtest.Environment) map[string]int {
	want := map[string]string{
		"kube-apiserver": "--cert-dir=" + env.ControlPlane.APIServer.CertDir,
		"etcd":           "--data-dir=" + env.ControlPlane.Etcd.DataDir,
	}
	found := map[string]int{}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, path := range cmdlines {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil {
			continue
		}
		args := strings.Split(string(data), "\x00")
		for name, arg := range want {
			if slices.Contains(args, arg) {
				found[name] = pid
			}
		}
	}
	return found
}

// serverCPU is the CPU seconds the API server and etcd have used so far.
func (r *run) serverCPU() map[string]float64 {
	out := map[string]float64{}
	for name, pid := range r.servers {
		if cpu, _, err := controller.ProcSample(pid); err == nil {
			out[name] = cpu
		}
	}
	return out
}

// controllerCPU is the CPU koord-queue's process has used so far; false
// when it runs in-process or cannot be read.
func (r *run) controllerCPU() (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.process == nil {
		return 0, false
	}
	cpu, err := r.process.CPUSeconds()
	return cpu, err == nil
}

// watch starts the checker's and the runner's informers, each through a
// client of its own, and the runner.
func (r *run) watch(ctx context.Context) error {
	checkClient, err := kube.Client(r.cfg, "perf-checker")
	if err != nil {
		return err
	}
	runClient, err := kube.Client(r.cfg, "perf-runner")
	if err != nil {
		return err
	}
	runInformer := kube.UnitInformer(runClient)
	rn, err := runner.New(runClient, runInformer)
	if err != nil {
		return err
	}
	if err := r.recorder.Watch(ctx, kube.UnitListWatch(checkClient)); err != nil {
		return err
	}
	if err := kube.RunInformer(ctx, runInformer); err != nil {
		return err
	}
	go rn.Run(logr.NewContext(ctx, logr.Discard()))
	return nil
}

// waitFinished waits until every unit finished, reporting progress every
// ten seconds; it fails when generating or restarting fails, koord-queue
// dies by itself, or the scenario's time is up.
func (r *run) waitFinished(ctx context.Context, start time.Time, genErr, restartErr <-chan error) error {
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	for {
		select {
		case <-r.recorder.Done():
			return nil
		case err := <-genErr:
			if err != nil {
				return fmt.Errorf("generating units: %w", err)
			}
		case err := <-restartErr:
			if err != nil {
				return err
			}
		case err := <-r.crashed:
			return err
		case <-progress.C:
			if r.opts.Progress != nil {
				fmt.Fprintf(r.opts.Progress, "  %s %4.0fs: %s\n", r.s.Name, time.Since(start).Seconds(), r.recorder)
			}
		case <-ctx.Done():
			return fmt.Errorf("scenario %s did not finish within %v: %s", r.s.Name, r.s.Timeout, r.recorder)
		}
	}
}

// startCPUProfile profiles this process (koord-queue in-process) until stop.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// logPath is koord-queue's log; each restart appends to it.
func (r *run) logPath() string { return filepath.Join(r.opts.Dir, "koord-queue.log") }

// startController starts koord-queue, with extra added to its command line
// (a binary only).
func (r *run) startController(ctx context.Context, extra ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return nil
	}
	switch r.opts.Mode {
	case checker.ModeInProcess:
		p, err := controller.StartInProcess(ctx, r.cfg, r.s.QPS, r.s.Burst)
		if err != nil {
			return err
		}
		r.inProcess = p
	default:
		args := append(slices.Clone(r.opts.ExtraArgs), extra...)
		if r.opts.HeapProfile != "" && r.s.Restarts == 0 {
			ports, err := cluster.FreePorts(1)
			if err != nil {
				return err
			}
			r.pprofAddr = cluster.Loopback(ports[0])
			args = append(slices.Clone(args), "--pprof-bind-address="+r.pprofAddr)
		}
		p, err := controller.Start(ctx, r.opts.Binary, r.kubeconfig, r.s.QPS, r.s.Burst, r.logPath(), args...)
		if err != nil {
			return fmt.Errorf("%w (log in %s)", err, r.logPath())
		}
		r.process = p
		r.watchCrash(p)
	}
	return nil
}

// watchCrash reports on r.crashed a process that exits without being
// stopped.
func (r *run) watchCrash(p *controller.Process) {
	go func() {
		<-p.Done()
		if p.Crashed() {
			select {
			case r.crashed <- fmt.Errorf("%w without being stopped", p.Err()):
			default:
			}
		}
	}()
}

// stopController stops the running koord-queue: gracefully, or killed as
// a crash would, and keeps what it used. A manager in the harness's process
// can only be stopped gracefully, so in-process restarts are not crashes.
func (r *run) stopController(graceful bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = r.ended || graceful
	switch {
	case r.inProcess != nil:
		_ = r.inProcess.Stop()
		r.inProcess = nil
	case r.process != nil:
		var st controller.Stats
		if graceful {
			st = r.process.Stop()
		} else {
			st = r.process.Kill()
		}
		r.stats = append(r.stats, st)
		r.process = nil
	}
}

// restarts kills and restarts koord-queue the scenario's number of times,
// evenly spread over the units' first admissions.
func (r *run) restarts(ctx context.Context) error {
	n := r.s.Units()
	for i := 1; i <= r.s.Restarts; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-r.recorder.WhenAdmitted(n * i / (r.s.Restarts + 1)):
		}
		if r.opts.Progress != nil {
			fmt.Fprintf(r.opts.Progress, "  %s: killing koord-queue (restart %d of %d): %s\n", r.s.Name, i, r.s.Restarts, r.recorder)
		}
		r.stopController(false)
		if err := r.startController(ctx); err != nil {
			return fmt.Errorf("restarting koord-queue: %w", err)
		}
	}
	return nil
}

// controllerStats sums what every koord-queue process used.
func (r *run) controllerStats(wall float64) checker.ControllerStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts.Mode == checker.ModeInProcess {
		return checker.ControllerStats{Mode: checker.ModeInProcess, Restarts: r.s.Restarts}
	}
	return BinaryStats(r.stats, wall)
}

// BinaryStats sums what the processes of one binary used (one per start:
// more than one is restarts) over a run of wall seconds.
func BinaryStats(stats []controller.Stats, wall float64) checker.ControllerStats {
	cs := checker.ControllerStats{Mode: checker.ModeBinary, Restarts: len(stats) - 1, Requests: map[string]float64{}}
	for _, st := range stats {
		cs.CPUSeconds += st.CPUSeconds
		cs.PeakRSSMiB = max(cs.PeakRSSMiB, float64(st.PeakRSSKiB)/1024)
		for k, v := range st.Requests {
			cs.Requests[k] += v
		}
	}
	if wall > 0 {
		cs.AverageCores = cs.CPUSeconds / wall
	}
	return cs
}

// write saves the run's results, and forecast.csv when the forecast was
// measured.
func (r *run) write(res *checker.Result) error {
	if err := WriteResults(r.opts.Dir, res, r.recorder); err != nil {
		return fmt.Errorf("writing results of %s: %w", r.s.Name, err)
	}
	if r.forecasts == nil {
		return nil
	}
	f, err := os.Create(filepath.Join(r.opts.Dir, "forecast.csv"))
	if err != nil {
		return err
	}
	if err := forecast.WriteCSV(f, r.recorder.Start(), r.forecasts.First(), r.recorder.Times()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteResults saves result.json, summary.txt, units.png, units.csv and
// evictions.csv in dir.
func WriteResults(dir string, res *checker.Result, rec *checker.Recorder) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding result: %w", err)
	}
	errs := []error{
		os.WriteFile(filepath.Join(dir, "result.json"), data, 0o644),
		os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(res.Text()), 0o644),
		plot.Units(res, filepath.Join(dir, "units.png")),
	}
	if f, err := os.Create(filepath.Join(dir, "units.csv")); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, rec.WriteUnitsCSV(f), f.Close())
	}
	if f, err := os.Create(filepath.Join(dir, "evictions.csv")); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, rec.WriteEvictionsCSV(f), f.Close())
	}
	return errors.Join(errs...)
}
