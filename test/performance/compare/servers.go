package compare

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
	stop func()
	done chan struct{}
}

// FollowServers starts following the control-plane children of parent.
func FollowServers(ctx context.Context, parent int, interval time.Duration) *ServerCPU {
	ctx, cancel := context.WithCancel(ctx)
	s := &ServerCPU{last: map[int]float64{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.sample(parent)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *ServerCPU) sample(parent int) {
	for _, pid := range childrenNamed(parent, serverNames) {
		if cpu, _, err := controller.ProcSample(pid); err == nil {
			s.mu.Lock()
			s.last[pid] = cpu
			s.mu.Unlock()
		}
	}
}

// Stop stops following and returns the CPU seconds the processes used, as
// last seen (0 if none was seen).
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

// childrenNamed lists the processes whose parent is parent and whose name
// is one of names.
func childrenNamed(parent int, names []string) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		stat := string(data)
		open, closing := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
		if open < 0 || closing < open {
			continue
		}
		name := stat[open+1 : closing]
		fields := strings.Fields(stat[closing+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(fields[1])
		if err != nil || ppid != parent {
			continue
		}
		for _, n := range names {
			if name == n {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
				pids = append(pids, pid)
			}
		}
	}
	return pids
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
