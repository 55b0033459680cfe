package compare

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/koord-queue/koord-queue/test/testenv"
)

func readFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestParseCheckerOutput(t *testing.T) {
	for _, tc := range []struct {
		name, fixture string
		want          []Check
	}{{
		// Kueue's checker (v0.17.0, go test -c) on a summary and stats
		// made to miss the baseline's bounds.
		name: "bounds missed", fixture: "checker-fail.txt",
		want: []Check{
			{Name: "CommandStats", Detail: "checker_test.go:81: Wall time 426100ms is greater than maximum expected 425000ms"},
			{Name: "ClusterQueueClasses/cq", Detail: "checker_test.go:98: Usage 0.00% is less then expected 55.00%"},
			{Name: "WorkloadClasses/large", Detail: "checker_test.go:112: Average wait for admission 30100ms is more then expected 11000ms"},
			{Name: "WorkloadClasses/small", OK: true},
		},
	}, {
		name: "the summary unreadable",
		want: []Check{{Name: "TestScalability", Detail: "checker_test.go:47: Unable to read summary: open /nonexistent: no such file or directory"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			output := "=== RUN   TestScalability\n    checker_test.go:47: Unable to read summary: open /nonexistent: no such file or directory\n--- FAIL: TestScalability (0.00s)\nFAIL\n"
			if tc.fixture != "" {
				output = readFixture(t, tc.fixture)
			}
			if diff := cmp.Diff(tc.want, ParseCheckerOutput(output)); diff != "" {
				t.Errorf("ParseCheckerOutput (-want +got):\n%s", diff)
			}
		})
	}
}

// wantRun is what testdata/run holds: the files of a real run of Kueue's
// runner and checker (v0.17.0; perfcompare's smoke run of a one-cohort,
// two-queue, 90-workload config on two loaded cores).
var wantRun = Measurement{
	System: Kueue, WallSeconds: 22.91, CPUSeconds: 2.147, Cores: 2.147 / 22.91, PeakRSSMiB: 63716.0 / 1024,
	AvgToAdmission: map[string]float64{"large": 4.913, "medium": 9.831, "small": 10.705},
	Units:          90, Evictions: 60, Admissions: 150, Writes: -1,
}

func TestReadKueueRunFiles(t *testing.T) {
	summary, err := ReadKueueSummary(filepath.Join("testdata", "run", "summary.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	stats, err := ReadKueueCmdStats(filepath.Join("testdata", "run", "minimalkueue.stats.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := FromKueue(summary, stats)
	if diff := cmp.Diff(wantRun, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("FromKueue (-want +got):\n%s", diff)
	}
	wantChecks := []Check{
		{Name: "CommandStats", OK: true}, {Name: "ClusterQueueClasses/cq", OK: true},
		{Name: "WorkloadClasses/large", OK: true}, {Name: "WorkloadClasses/medium", OK: true}, {Name: "WorkloadClasses/small", OK: true},
	}
	if diff := cmp.Diff(wantChecks, ParseCheckerOutput(readFixture(t, filepath.Join("run", "checker.txt")))); diff != "" {
		t.Errorf("the run's checks (-want +got):\n%s", diff)
	}
	// The usage Kueue's checker computed from the same summary (it passed
	// its 55 % bound).
	if got := summary.ClusterQueueClasses["cq"].UsagePercent(); got < 55 || got > 100 {
		t.Errorf("cq usage %.2f%%, want Kueue's checker's figure, between 55 and 100", got)
	}
}

func TestReadKueueSummaryIsStrict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.yaml")
	data := strings.Replace(readFixture(t, filepath.Join("run", "summary.yaml")), "averageTimeToAdmissionMs", "avgTimeToAdmissionMs", 1)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKueueSummary(path); err == nil {
		t.Errorf("a renamed field was read as zero, want an error")
	}
}

func TestRecorderTimedOut(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, log string
		want      bool
	}{
		// Lines of a real runner's log (v0.17.0) whose 10 minutes passed.
		{"timed out", "2026-12-02T04:01:46.684757538Z\tERROR\tStart recorder\trunner/main.go:397\tRecorder run\t{\"error\": \"context deadline exceeded\"}\n2026-12-02T04:01:46.684864569Z\tERROR\trunner/main.go:229\tError\t{\"error\": \"context deadline exceeded\"}\n", true},
		{"another error", "2026-12-02T04:01:46.684864569Z\tERROR\tRun generator\trunner/main.go:380\tgenerating\t{\"error\": \"forbidden\"}\n", false},
	} {
		path := filepath.Join(dir, tc.name+".log")
		if err := os.WriteFile(path, []byte(tc.log), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := recorderTimedOut(path); got != tc.want {
			t.Errorf("%s: recorderTimedOut = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestStopGroupStopsWhatARunnerLeaves: a command that exits leaving a
// child running in its process group (as Kueue's runner leaves its
// envtest's kube-apiserver and etcd when it fails) has that child stopped.
func TestStopGroupStopsWhatARunnerLeaves(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("child's pid %q: %v", out, err)
	}
	if err := syscall.Kill(child, 0); err != nil {
		t.Fatalf("the child is not running before: %v", err)
	}
	if got := stopGroup(cmd.Process.Pid, 10*time.Second); got != 1 {
		t.Errorf("stopGroup = %d, want 1 (a process was left)", got)
	}
	if err := syscall.Kill(-cmd.Process.Pid, 0); err == nil {
		t.Errorf("process group %d still has a process", cmd.Process.Pid)
	}
	if got := stopGroup(cmd.Process.Pid, time.Second); got != 0 {
		t.Errorf("stopGroup of an empty group = %d, want 0", got)
	}
}

// TestStopLeftStopsOrphanedServers: a control-plane process in a process
// group of its own (as envtest starts kube-apiserver and etcd), orphaned by
// the runner that started it, is stopped by StopLeft; stopGroup of the
// runner's group does not reach it. Without StopLeft, pair 1's Kueue API
// server ran on through koord-queue's run after it (seen 2026-12-02).
func TestStopLeftStopsOrphanedServers(t *testing.T) {
	etcd := fakeEtcd(t, t.TempDir())
	// The runner: starts "etcd" in a group of its own, says its pid, and
	// exits when its input closes.
	runner := exec.Command("sh", "-c", `setsid "$0" 300 >/dev/null 2>&1 & echo $!; read x || :`, etcd)
	runner.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := runner.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := runner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	server, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("server's pid %q: %v", line, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(server, syscall.SIGKILL) })
	testenv.Eventually(t, 10*time.Second, func(context.Context) error {
		if pgid, err := syscall.Getpgid(server); err != nil || pgid != server {
			return fmt.Errorf("the server's process group is %d (%v), want one of its own", pgid, err)
		}
		return nil
	})

	servers := FollowServers(context.Background(), runner.Process.Pid, 10*time.Millisecond)
	testenv.Eventually(t, 10*time.Second, func(context.Context) error {
		servers.mu.Lock()
		defer servers.mu.Unlock()
		if len(servers.started) != 1 {
			return fmt.Errorf("following %d processes, want 1", len(servers.started))
		}
		return nil
	})
	stdin.Close()
	if err := runner.Wait(); err != nil {
		t.Fatal(err)
	}
	servers.Stop()
	stopGroup(runner.Process.Pid, time.Second)
	p, ok := readProc(server)
	if !ok || !running(server, p.start) {
		t.Fatal("the server stopped with its runner's group: the test shows nothing")
	}

	if got := servers.StopLeft(10 * time.Second); got != 1 {
		t.Errorf("StopLeft = %d, want 1", got)
	}
	if running(server, p.start) {
		t.Errorf("the server (pid %d) still runs", server)
	}
	if got := servers.StopLeft(time.Second); got != 0 {
		t.Errorf("StopLeft with nothing left = %d, want 0", got)
	}
}

// TestKueueRunStopsWhatAFailedRunnerLeaves runs KueueRun.Run with a runner
// that does what Kueue's does when it fails: it starts "etcd" in a process
// group of its own (as envtest does) and exits with an error without
// stopping it. Run must leave nothing running (it calls StopLeft; without
// that call this test fails).
func TestKueueRunStopsWhatAFailedRunnerLeaves(t *testing.T) {
	dir := t.TempDir()
	etcd := fakeEtcd(t, dir)
	pidFile := filepath.Join(dir, "etcd.pid")
	// Run follows the runner's children once a second: the runner lives
	// three seconds after starting "etcd", so that it is seen.
	runner := filepath.Join(dir, "runner")
	script := "#!/bin/sh\nsetsid " + shellQuote(etcd) + " 300 >/dev/null 2>&1 &\necho $! > " + shellQuote(pidFile) + "\nsleep 3\nexit 3\n"
	if err := os.WriteFile(runner, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	k := &KueueRun{Runner: runner, ProjectDir: dir, APIServer: etcd, Etcd: etcd, Dir: filepath.Join(dir, "run")}

	type result struct {
		m   Measurement
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := k.Run(context.Background())
		done <- result{m, err}
	}()
	var server proc
	t.Cleanup(func() {
		if server.pid > 0 {
			_ = syscall.Kill(server.pid, syscall.SIGKILL)
		}
	})
	testenv.Eventually(t, 10*time.Second, func(context.Context) error {
		data, err := os.ReadFile(pidFile)
		if err != nil {
			return err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return fmt.Errorf("etcd's pid %q: %w", data, err)
		}
		p, ok := readProc(pid)
		if !ok || p.name != "etcd" {
			return fmt.Errorf("pid %d is not etcd yet", pid)
		}
		server = p
		return nil
	})

	got := <-done
	if got.err != nil {
		t.Fatalf("Run: %v", got.err)
	}
	if !strings.Contains(got.m.Error, "exit status 3") {
		t.Errorf("Measurement.Error = %q, want the runner's exit status", got.m.Error)
	}
	if running(server.pid, server.start) {
		t.Errorf("the runner's etcd (pid %d) still runs after Run returned", server.pid)
	}
}

// fakeEtcd copies sleep into dir as "etcd": a process that the servers'
// follower takes for a control-plane server, and that does nothing.
func fakeEtcd(t *testing.T, dir string) string { return fakeServer(t, "sleep", dir) }

// fakeServer copies program into dir as "etcd", which FollowServers
// follows by its name.
func fakeServer(t *testing.T, program, dir string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err != nil {
		t.Skipf("no %s: %v", program, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	etcd := filepath.Join(dir, "etcd")
	if err := os.WriteFile(etcd, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return etcd
}

// TestRecountWrites: -summarize counts a run's writes again from the audit
// log and the backups the API server rotated it into, when the run kept
// them, with the writer of the run's system; a run that kept none is left
// as it was.
func TestRecountWrites(t *testing.T) {
	write := func(agent string) string {
		return `{"stage":"ResponseComplete","verb":"patch","userAgent":"` + agent + `/v1","objectRef":{"resource":"workloads","subresource":"status"},"responseStatus":{"code":200}}` + "\n"
	}
	kept := t.TempDir()
	for name, data := range map[string]string{
		"audit-2026-12-02T15-21-40.276.log": write("minimalkueue") + write("koord-queue"),
		"audit.log":                         write("minimalkueue"),
	} {
		if err := os.WriteFile(filepath.Join(kept, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m := Measurement{System: Kueue, Dir: kept, Writes: 1}
	recounted, err := RecountWrites(&m)
	if err != nil || !recounted {
		t.Fatalf("RecountWrites = %v, %v; want true, nil", recounted, err)
	}
	if diff := cmp.Diff(map[string]int{"patch workloads/status 200": 2}, m.WritesByKind); m.Writes != 2 || diff != "" {
		t.Errorf("Writes = %d, by kind (-want +got):\n%s", m.Writes, diff)
	}

	none := Measurement{System: KoordQueue, Dir: t.TempDir(), Writes: 7}
	if recounted, err := RecountWrites(&none); err != nil || recounted || none.Writes != 7 {
		t.Errorf("RecountWrites without audit logs = %v, %v, writes %d; want false, nil, 7", recounted, err, none.Writes)
	}
}
