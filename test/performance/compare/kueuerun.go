package compare

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/koord-queue/koord-queue/test/cluster"
)

// KueueRun is one run of Kueue's scheduler performance test as Kueue's CI
// runs it (`make test-performance-scheduler`: Makefile-test.mk's
// run-performance-scheduler, then the checker with go test).
type KueueRun struct {
	// Runner, MinimalKueue and Checker are the binaries hack/ensure-tools.sh
	// kueue builds (performance-scheduler-runner, minimalkueue,
	// kueue-perf-checker).
	Runner, MinimalKueue, Checker string
	// ProjectDir is Kueue's module root (its CRDs are in
	// config/components/crd/bases).
	ProjectDir string
	// GeneratorConfig and RangeSpec are the scenario and the checker's
	// bounds.
	GeneratorConfig, RangeSpec string
	// Timeout is the runner's --timeout; zero leaves its default (10m), as
	// the baseline's CI target does.
	Timeout time.Duration
	// APIServer and Etcd are the control plane's binaries (koord-queue's
	// pinned ones), given to the runner's envtest by KUBEBUILDER_ASSETS.
	APIServer, Etcd string
	// Audit has the API server log every write (cluster.AuditFlags), to
	// count minimalkueue's; the audit log is removed once counted unless
	// KeepAudit.
	Audit, KeepAudit bool
	// Dir receives the runner's artifacts (its --o), its log, the checker's
	// output and the API server's assets.
	Dir string
	// Progress receives a line when the run starts and ends.
	Progress io.Writer
}

// Writers are the user agents whose writes each system's figure counts:
// client-go's default user agent starts with the binary's name.
var Writers = map[string]string{Kueue: "minimalkueue", KoordQueue: "koord-queue"}

// Run runs the runner (which starts etcd, kube-apiserver and minimalkueue,
// creates the scenario, plays the workloads and records them), then the
// checker, and returns Kueue's figures as its runner reported them. A run
// the runner could not complete is a Measurement with Error set.
func (k *KueueRun) Run(ctx context.Context) (Measurement, error) {
	if err := os.MkdirAll(k.Dir, 0o755); err != nil {
		return Measurement{}, fmt.Errorf("creating %s: %w", k.Dir, err)
	}
	assets, err := k.assets()
	if err != nil {
		return Measurement{}, err
	}
	args := []string{
		"--o", k.Dir,
		"--crds=" + filepath.Join(k.ProjectDir, "config", "components", "crd", "bases"),
		"--generatorConfig=" + k.GeneratorConfig,
		"--minimalKueue=" + k.MinimalKueue,
		// SCALABILITY_EXTRA_ARGS and SCALABILITY_SCRAPE_ARGS as CI leaves them.
		"--withLogs=true", "--logToFile=true",
		"--metricsScrapeInterval=5s",
	}
	if k.Timeout > 0 {
		args = append(args, "--timeout="+k.Timeout.String())
	}
	logFile, err := os.Create(filepath.Join(k.Dir, "runner.log"))
	if err != nil {
		return Measurement{}, fmt.Errorf("creating the runner's log: %w", err)
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, k.Runner, args...)
	cmd.Env = append(k.env(), "KUBEBUILDER_ASSETS="+assets)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Stopped as the runner expects to be (it stops minimalkueue and the
	// API server itself on SIGINT).
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	// In a process group of its own, so that what it leaves running can be
	// stopped: a runner that fails exits without stopping what it started
	// (os.Exit skips the deferred Stops), and the orphans would keep
	// running, holding whatever they inherited (the caller's flock on
	// /tmp/perf.lock, for one). envtest's kube-apiserver and etcd are in
	// groups of their own: FollowServers saw them, StopLeft stops them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	m := Measurement{System: Kueue, Dir: k.Dir, Writes: -1, LoadBefore: LoadAverage()}
	k.progress("Kueue: %s %s\n", k.Runner, strings.Join(args, " "))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Measurement{}, fmt.Errorf("starting Kueue's runner: %w", err)
	}
	servers := FollowServers(ctx, cmd.Process.Pid, time.Second)
	runErr := cmd.Wait()
	serverCPU := servers.Stop()
	if n := stopGroup(cmd.Process.Pid, time.Minute); n > 0 {
		k.progress("Kueue: stopped what the runner left running (process group %d)\n", cmd.Process.Pid)
	}
	if n := servers.StopLeft(time.Minute); n > 0 {
		k.progress("Kueue: stopped the %d control-plane processes the runner left running\n", n)
	}
	m.LoadAfter = LoadAverage()
	k.progress("Kueue: runner done in %.1fs\n", time.Since(start).Seconds())
	if ctx.Err() != nil {
		return Measurement{}, ctx.Err()
	}
	if runErr != nil {
		m.Error = fmt.Sprintf("Kueue's runner: %v (log in %s)", runErr, logFile.Name())
		if recorderTimedOut(logFile.Name()) {
			m.Error = fmt.Sprintf("Kueue's runner: its recorder's timeout (--timeout, 10m by default) passed before every workload finished, so it wrote no summary (%v; log in %s)", runErr, logFile.Name())
		}
		return m, nil
	}

	summary, err := ReadKueueSummary(filepath.Join(k.Dir, "summary.yaml"))
	if err != nil {
		m.Error = err.Error()
		return m, nil
	}
	stats, err := ReadKueueCmdStats(filepath.Join(k.Dir, "minimalkueue.stats.yaml"))
	if err != nil {
		m.Error = err.Error()
		return m, nil
	}
	got := FromKueue(summary, stats)
	got.Dir, got.LoadBefore, got.LoadAfter, got.ServerCPUSeconds = k.Dir, m.LoadBefore, m.LoadAfter, serverCPU
	if k.Audit {
		if err := CountWrites(&got, k.auditLog(), Writers[Kueue], k.KeepAudit); err != nil {
			return Measurement{}, err
		}
	}
	checks, err := k.check(ctx)
	if err != nil {
		return Measurement{}, err
	}
	got.Checks = checks
	return got, nil
}

func (k *KueueRun) progress(format string, args ...any) {
	if k.Progress != nil {
		fmt.Fprintf(k.Progress, format, args...)
	}
}

// env is the environment of Kueue's binaries: PROJECT_DIR, which Kueue's
// test utilities (linked into the runner and the checker) read when they
// start, and whose parent they take: hence the slash.
func (k *KueueRun) env() []string {
	return append(os.Environ(), "PROJECT_DIR="+strings.TrimSuffix(k.ProjectDir, "/")+"/")
}

func (k *KueueRun) auditLog() string { return filepath.Join(k.Dir, "audit.log") }

// stopGroup stops every process left in the process group pgid: SIGTERM,
// then, after grace, SIGKILL. It returns 1 if any was left, else 0.
func stopGroup(pgid int, grace time.Duration) int {
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		return 0 // ESRCH: nothing left
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if syscall.Kill(-pgid, 0) != nil {
			return 1
		}
		time.Sleep(200 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return 1
}

// recorderTimedOut reports whether the runner's log says its recorder ran
// out of time (runner/main.go logs "Recorder run" with the error).
func recorderTimedOut(runnerLog string) bool {
	f, err := os.Open(runnerLog)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "Recorder run") && strings.Contains(line, "context deadline exceeded") {
			return true
		}
	}
	return false
}

// assets makes the KUBEBUILDER_ASSETS directory: etcd, and kube-apiserver
// itself or, to log writes, a script that runs it with the audit flags
// added to envtest's.
func (k *KueueRun) assets() (string, error) {
	dir := filepath.Join(k.Dir, "assets")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	etcd := filepath.Join(dir, "etcd")
	_ = os.Remove(etcd)
	if err := os.Symlink(k.Etcd, etcd); err != nil {
		return "", fmt.Errorf("linking etcd: %w", err)
	}
	apiServer := filepath.Join(dir, "kube-apiserver")
	_ = os.Remove(apiServer)
	if !k.Audit {
		if err := os.Symlink(k.APIServer, apiServer); err != nil {
			return "", fmt.Errorf("linking kube-apiserver: %w", err)
		}
		return dir, nil
	}
	flags, err := cluster.AuditFlags(dir, k.auditLog())
	if err != nil {
		return "", err
	}
	script := "#!/bin/sh\nexec " + shellQuote(k.APIServer) + ` "$@"`
	for _, f := range flags {
		script += " " + shellQuote(f)
	}
	if err := os.WriteFile(apiServer, []byte(script+"\n"), 0o755); err != nil {
		return "", fmt.Errorf("writing the kube-apiserver script: %w", err)
	}
	return dir, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// CountWrites sets m's writes from the audit log and its rotated backups:
// every write whose user agent is agent's (cluster.WritesBy). It removes
// them unless keep.
func CountWrites(m *Measurement, auditLog, agent string, keep bool) error {
	writes, err := cluster.WritesBy(auditLog, agent)
	if err != nil {
		return err
	}
	m.Writes, m.WritesByKind = 0, map[string]int{}
	for w, n := range writes {
		m.Writes += n
		m.WritesByKind[w.String()] += n
	}
	if keep {
		return nil
	}
	return cluster.RemoveAuditLogs(auditLog)
}

// RecountWrites counts m's writes again from the audit log, and its
// backups, kept in m.Dir (-keep-audit); it reports false, leaving m as it
// was, when none was kept.
func RecountWrites(m *Measurement) (bool, error) {
	log := filepath.Join(m.Dir, "audit.log")
	files, err := cluster.AuditLogFiles(log)
	if err != nil {
		return false, err
	}
	if len(files) == 0 {
		return false, nil
	}
	return true, CountWrites(m, log, Writers[m.System], true)
}

// check runs Kueue's checker (its TestScalability, compiled by go test -c)
// on the run's summary.yaml and minimalkueue.stats.yaml against the range
// spec, as CI's test-performance-scheduler-once does, keeping its output in
// checker.txt.
func (k *KueueRun) check(ctx context.Context) ([]Check, error) {
	out := filepath.Join(k.Dir, "checker.txt")
	cmd := exec.CommandContext(ctx, k.Checker, "-test.v",
		"-summary="+filepath.Join(k.Dir, "summary.yaml"),
		"-cmdStats="+filepath.Join(k.Dir, "minimalkueue.stats.yaml"),
		"-range="+k.RangeSpec)
	cmd.Env = k.env()
	output, err := cmd.CombinedOutput()
	if werr := os.WriteFile(out, output, 0o644); werr != nil {
		return nil, fmt.Errorf("writing %s: %w", out, werr)
	}
	checks := ParseCheckerOutput(string(output))
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, fmt.Errorf("running Kueue's checker: %w", err)
	}
	if err != nil && len(checks) == 0 {
		checks = []Check{{Name: "Kueue's checker", OK: false, Detail: fmt.Sprintf("%v, output in %s", err, out)}}
	}
	return checks, nil
}

// ParseCheckerOutput reads the leaf results of the checker's `go test -v`
// output ("--- PASS: TestScalability/WorkloadClasses/large (0.00s)"), each
// with what its test logged as Detail. With -v, a test's log lines follow
// its "=== RUN" (or "=== NAME", "=== CONT") line and the results come last.
func ParseCheckerOutput(output string) []Check {
	const top = "TestScalability"
	var order []string
	status, detail := map[string]string{}, map[string]string{}
	current := ""
	sc := bufio.NewScanner(strings.NewReader(output))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "=== "):
			f := strings.Fields(trimmed)
			current = ""
			if len(f) >= 3 {
				current = f[2]
			}
		case strings.HasPrefix(trimmed, "--- PASS: "), strings.HasPrefix(trimmed, "--- FAIL: "):
			name := trimmed[len("--- PASS: "):]
			if i := strings.LastIndex(name, " ("); i >= 0 {
				name = name[:i]
			}
			if _, seen := status[name]; !seen {
				order = append(order, name)
			}
			status[name] = trimmed[4:8]
			current = ""
		case current != "" && trimmed != "" && line != trimmed:
			if detail[current] != "" {
				detail[current] += "; "
			}
			detail[current] += trimmed
		}
	}
	var checks []Check
	for _, name := range order {
		leaf := true
		for _, other := range order {
			if strings.HasPrefix(other, name+"/") {
				leaf = false
			}
		}
		if !leaf {
			continue
		}
		c := Check{Name: strings.TrimPrefix(name, top+"/"), OK: status[name] == "PASS", Detail: detail[name]}
		checks = append(checks, c)
	}
	return checks
}
