package compare

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/koord-queue/koord-queue/test/performance/controller"
)

// serverNames are the control plane's processes, as /proc/<pid>/stat names
// them.
var serverNames = []string{"kube-apiserver", "etcd"}

// ServerCPU follows the CPU of the kube-apiserver and etcd processes whose
// parent is one process (envtest starts both from the process that runs
// it: Kueue's runner, or this one for koord-queue's harness). It samples
// them every interval until stopped, keeping each process's last reading:
// what a process used is only readable while it runs.
type ServerCPU struct {
	mu   sync.Mutex
	last map[int]float64
	// started is each followed process's start time (clock ticks after
	// boot), so that StopLeft never signals another process given its pid.
	started map[int]uint64
	stop    func()
	done    chan struct{}
}

// FollowServers starts following the control-plane children of parent.
func FollowServers(ctx context.Context, parent int, interval time.Duration) *ServerCPU {
	return FollowProcesses(ctx, parent, serverNames, interval)
}

// FollowProcesses starts following the children of parent whose binary's
// name is one of names.
func FollowProcesses(ctx context.Context, parent int, names []string, interval time.Duration) *ServerCPU {
	ctx, cancel := context.WithCancel(ctx)
	s := &ServerCPU{last: map[int]float64{}, started: map[int]uint64{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.sample(parent, names)
			select {
			case <-ctx.Done():
				// Once more: up to an interval of CPU since the last
				// sample would otherwise be lost.
				s.sample(parent, names)
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *ServerCPU) sample(parent int, names []string) {
	for _, p := range childrenNamed(parent, names) {
		if cpu, _, err := controller.ProcSample(p.pid); err == nil {
			s.mu.Lock()
			s.last[p.pid] = cpu
			s.started[p.pid] = p.start
			s.mu.Unlock()
		}
	}
}

// Stop samples the processes once more, stops following and returns the
// CPU seconds they used, as last seen (0 if none was seen).
func (s *ServerCPU) Stop() float64 {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0.0
	for _, cpu := range s.last {
		total += cpu
	}
	return total
}

// StopLeft stops the followed processes that still run, SIGTERM then, after
// grace, SIGKILL, and returns how many there were. Kueue's runner, when it
// fails, exits without stopping its envtest (os.Exit skips the deferred
// Stop); envtest starts kube-apiserver and etcd in process groups of their
// own, so stopping the runner's group leaves them running, using the cores
// the next run is measured on. Call it after Stop.
func (s *ServerCPU) StopLeft(grace time.Duration) int {
	s.mu.Lock()
	var left []int
	for pid, start := range s.started {
		if running(pid, start) {
			left = append(left, pid)
		}
	}
	started := maps.Clone(s.started)
	s.mu.Unlock()
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for _, pid := range left {
		for running(pid, started[pid]) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return len(left)
}

// proc is a process as /proc/<pid>/stat describes it.
type proc struct {
	pid, ppid int
	name      string
	state     byte
	start     uint64 // clock ticks after boot
}

// readProc reads /proc/<pid>/stat.
func readProc(pid int) (proc, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	stat := string(data)
	open, closing := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || closing < open {
		return proc{}, false
	}
	// Fields from the third (state); the start time is the 22nd.
	fields := strings.Fields(stat[closing+1:])
	if len(fields) < 20 || len(fields[0]) != 1 {
		return proc{}, false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return proc{}, false
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return proc{}, false
	}
	return proc{pid: pid, ppid: ppid, name: stat[open+1 : closing], state: fields[0][0], start: start}, true
}

// running reports whether pid is the process that started at start and has
// not exited (a zombie has: only its parent's wait is missing).
func running(pid int, start uint64) bool {
	p, ok := readProc(pid)
	return ok && p.start == start && p.state != 'Z'
}

// childrenNamed lists the processes whose parent is parent and whose name
// is one of names. /proc/<pid>/stat names a process by the first 15 bytes
// of its binary's name ("kube-controller" for kube-controller-manager).
func childrenNamed(parent int, names []string) []proc {
	comms := make([]string, len(names))
	for i, n := range names {
		comms[i] = n[:min(len(n), 15)]
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var procs []proc
	for _, path := range stats {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil {
			continue
		}
		p, ok := readProc(pid)
		if ok && p.ppid == parent && slices.Contains(comms, p.name) {
			procs = append(procs, p)
		}
	}
	return procs
}

// LoadAverage is the 1-minute load average (0 if unreadable).
func LoadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
