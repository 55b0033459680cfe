// Package controller runs koord-queue for the performance harness, as users
// run it: the binary built from cmd/queue, with its client limited to the
// scenario's QPS and burst, in a process of its own so its CPU time and peak
// resident memory are its own. It can also run the same controllers in the
// harness's process, for a CPU profile.
package controller

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/koord-queue/koord-queue/test/cluster"
)

// Stats are what one koord-queue process used.
type Stats struct {
	CPUSeconds float64
	PeakRSSKiB int64
	// Resident is the resident memory, by kind, just before the process was
	// stopped (zero when /proc could not be read).
	Resident Resident
	// Requests to the API server by method and code ("PATCH 200").
	Requests map[string]float64
	// Reconciles by controller and result ("batchjob success"), for a
	// controller-runtime binary.
	Reconciles map[string]float64
}

// Process is one running koord-queue, or another controller-runtime
// binary, on the shared process runner, with what it used.
type Process struct {
	proc        *cluster.Process
	metricsAddr string
	// visibilityAddr serves koord-queue's visibility API over plain HTTP,
	// to anyone (Start); empty for another binary.
	visibilityAddr string
	// stopping is set before Stop or Kill signal the process, so its exit
	// is not taken for a crash.
	stopping atomic.Bool
}

// Start runs koord-queue against the API server of kubeconfig with its
// client limited to qps and burst, logging to logPath, and waits until it
// is ready (informers synced). extraArgs are added to its command line.
func Start(ctx context.Context, binary, kubeconfig string, qps float64, burst int, logPath string, extraArgs ...string) (*Process, error) {
	ports, err := cluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	metricsAddr, probeAddr := cluster.Loopback(ports[0]), cluster.Loopback(ports[1])
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--qps=" + strconv.FormatFloat(qps, 'f', -1, 64),
		"--burst=" + strconv.Itoa(burst),
		"--leader-elect=false",
		"--metrics-bind-address=" + metricsAddr,
		"--metrics-secure=false", // scraped over plain HTTP below
		"--health-probe-bind-address=" + probeAddr,
		"--visibility-bind-address=" + cluster.Loopback(ports[2]), "--visibility-insecure-allow-unauthenticated",
		"--visibility-insecure-serving", // on the loopback, read by the harness (VisibilityURL)
	}
	p, err := StartBinary(ctx, binary, logPath, metricsAddr, probeAddr, append(args, extraArgs...)...)
	if err != nil {
		return nil, err
	}
	p.visibilityAddr = cluster.Loopback(ports[2])
	return p, nil
}

// VisibilityURL is the root of koord-queue's visibility API (plain HTTP,
// no token needed); empty for a process Start did not start.
func (p *Process) VisibilityURL() string {
	if p.visibilityAddr == "" {
		return ""
	}
	return "http://" + p.visibilityAddr
}

// Scrape reads /metrics whole, as Prometheus does, and returns how many
// bytes it was.
func (p *Process) Scrape(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.metricsAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scraping /metrics: %w", err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("scraping /metrics: %s", resp.Status)
	}
	return n, err
}

// StartBinary runs a controller-runtime binary whose args make it serve
// /metrics at metricsAddr and /readyz at probeAddr, logging to logPath, and
// waits until it is ready.
func StartBinary(ctx context.Context, binary, logPath, metricsAddr, probeAddr string, args ...string) (*Process, error) {
	if err := dropCachedPages(binary); err != nil {
		return nil, err
	}
	proc, err := cluster.RunProcess(logPath, binary, args...)
	if err != nil {
		return nil, err
	}
	p := &Process{proc: proc, metricsAddr: metricsAddr}
	if err := p.waitReady(ctx, probeAddr); err != nil {
		p.Kill()
		return nil, fmt.Errorf("%s: %w", filepath.Base(binary), err)
	}
	return p, nil
}

// dropCachedPages asks the kernel to drop the page cache's copy of file,
// so that every binary starts reading itself from the same state. A file
// just written (a binary the harness built a minute ago) is mapped in
// larger pieces than one read back from disk: the same koord-queue binary,
// freshly linked, peaked 5 MB higher in RssFile than its copy, which
// would count against koord-queue and not against Kueue's manager, built
// once and cached.
func dropCachedPages(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	// Dirty pages are not dropped: write them first.
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing %s out: %w", file, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("dropping the cached pages of %s: %w", file, err)
	}
	return nil
}

func (p *Process) waitReady(ctx context.Context, probeAddr string) error {
	httpClient := &http.Client{Timeout: time.Second}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := p.proc.Err(); err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+probeAddr+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting to be ready: %w", err)
	}
	return nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.proc.Done() }

// Err is nil while the process runs, and says how it exited and where its
// log is once it has.
func (p *Process) Err() error { return p.proc.Err() }

// Crashed reports whether the process exited without Stop or Kill; only
// valid after Done.
func (p *Process) Crashed() bool { return !p.stopping.Load() }

// CPUSeconds is the CPU time the process has used so far.
func (p *Process) CPUSeconds() (float64, error) {
	cpu, _, err := ProcSample(p.proc.Pid())
	return cpu, err
}

// Stop asks the process to shut down (SIGTERM, then SIGKILL after 10s)
// and returns what it used until then.
func (p *Process) Stop() Stats {
	before := p.measure()
	p.stopping.Store(true)
	p.proc.Stop(10 * time.Second)
	return p.stats(before)
}

// Kill kills koord-queue at once (SIGKILL), as a crash or an evicted pod
// would, and returns what it used.
func (p *Process) Kill() Stats {
	before := p.measure()
	p.stopping.Store(true)
	p.proc.Kill()
	return p.stats(before)
}

// measure reads, while the process still runs, its requests from its
// metrics and its CPU time and peak resident memory from /proc.
func (p *Process) measure() Stats {
	var st Stats
	st.Requests, st.Reconciles = p.scrapeCounts()
	if p.proc.Err() != nil {
		return st
	}
	if cpu, peak, err := ProcSample(p.proc.Pid()); err == nil {
		st.CPUSeconds, st.PeakRSSKiB = cpu, peak
	}
	if res, err := ResidentOf(p.proc.Pid()); err == nil {
		st.Resident = res
	}
	return st
}

// stats completes what measure read before the process was stopped; if
// /proc could not be read, from the exited process's rusage (user+system
// time, ru_maxrss: the same figures).
func (p *Process) stats(before Stats) Stats {
	if before.PeakRSSKiB > 0 {
		return before
	}
	st := p.proc.State()
	before.CPUSeconds = (st.UserTime() + st.SystemTime()).Seconds()
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		before.PeakRSSKiB = ru.Maxrss
	}
	return before
}

// ProcSample reads a process's CPU seconds (utime+stime of /proc/<pid>/stat)
// and peak resident memory (VmHWM of /proc/<pid>/status).
func ProcSample(pid int) (cpuSeconds float64, peakKiB int64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading /proc stat: %w", err)
	}
	// Fields after the command, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 13 {
		return 0, 0, errors.New("short /proc stat")
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	const clockTicks = 100 // USER_HZ on Linux
	cpuSeconds = (utime + stime) / clockTicks

	status, err := statusFields(pid)
	if err != nil {
		return 0, 0, err
	}
	return cpuSeconds, status["VmHWM:"], nil
}

// Resident is a process's resident memory by kind, from /proc/<pid>/status:
// anonymous (heap, stacks, the runtime's own) and file-backed (the pages of
// its binary and libraries mapped in, shared with the page cache).
type Resident struct {
	AnonKiB int64
	FileKiB int64
}

// ResidentOf reads RssAnon and RssFile of /proc/<pid>/status.
func ResidentOf(pid int) (Resident, error) {
	fields, err := statusFields(pid)
	if err != nil {
		return Resident{}, err
	}
	return Resident{AnonKiB: fields["RssAnon:"], FileKiB: fields["RssFile:"]}, nil
}

// statusFields are the numeric fields of /proc/<pid>/status (in KiB for
// the memory ones), by name with its colon.
func statusFields(pid int) (map[string]int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("reading /proc status: %w", err)
	}
	fields := map[string]int64{}
	for line := range strings.Lines(string(status)) {
		if f := strings.Fields(line); len(f) >= 2 {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				fields[f[0]] = n
			}
		}
	}
	return fields, nil
}

// restRequests matches client-go's request counter, and reconciles
// controller-runtime's reconcile counter, in the Prometheus text format.
var (
	restRequests = regexp.MustCompile(`^rest_client_requests_total\{([^}]*)\} ([0-9.e+]+)$`)
	reconciles   = regexp.MustCompile(`^controller_runtime_reconcile_total\{([^}]*)\} ([0-9.e+]+)$`)
	labelPair    = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// scrapeCounts reads how many requests the process made, by method and
// code, and how many reconciles it ran, by controller and result.
func (p *Process) scrapeCounts() (requests, reconciles map[string]float64) {
	httpClient := &http.Client{Timeout: 2 * time.Second}
	resp, err := httpClient.Get("http://" + p.metricsAddr + "/metrics")
	if err != nil {
		return nil, nil
	}
	defer resp.Body.Close()
	return ParseCounts(resp.Body)
}

// ParseCounts sums rest_client_requests_total by method and code, and
// controller_runtime_reconcile_total by controller and result.
func ParseCounts(r io.Reader) (requests, reconcileCounts map[string]float64) {
	requests, reconcileCounts = map[string]float64{}, map[string]float64{}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for scanner.Scan() {
		into, key := requests, [2]string{"method", "code"}
		m := restRequests.FindStringSubmatch(scanner.Text())
		if m == nil {
			into, key = reconcileCounts, [2]string{"controller", "result"}
			if m = reconciles.FindStringSubmatch(scanner.Text()); m == nil {
				continue
			}
		}
		labels := map[string]string{}
		for _, kv := range labelPair.FindAllStringSubmatch(m[1], -1) {
			labels[kv[1]] = kv[2]
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil || v == 0 {
			continue
		}
		into[labels[key[0]]+" "+labels[key[1]]] += v
	}
	return requests, reconcileCounts
}

// heapAlloc matches the live heap in Go's text heap profile (?debug=1),
// which ends with the runtime's memory statistics.
var heapAlloc = regexp.MustCompile(`(?m)^# HeapAlloc = (\d+)$`)

// LiveHeap asks a process serving Go's /debug/pprof at pprofAddr (koord-queue
// with --pprof-bind-address) to collect its garbage, and returns the bytes
// its heap still holds (runtime.MemStats.HeapAlloc just after the
// collection). With a path, the heap profile of that moment is saved there
// (`go tool pprof -sample_index=inuse_space` reads it).
func LiveHeap(ctx context.Context, pprofAddr, path string) (int64, error) {
	get := func(query string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pprofAddr+"/debug/pprof/heap"+query, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("reading the heap profile: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("reading the heap profile: %s", resp.Status)
		}
		return io.ReadAll(resp.Body)
	}
	text, err := get("?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	m := heapAlloc.FindSubmatch(text)
	if m == nil {
		return 0, errors.New("the heap profile has no HeapAlloc")
	}
	live, err := strconv.ParseInt(string(m[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the heap profile's HeapAlloc: %w", err)
	}
	if path != "" {
		// In use as of the collection just made.
		profile, err := get("")
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(path, profile, 0o644); err != nil {
			return 0, fmt.Errorf("writing the heap profile: %w", err)
		}
	}
	return live, nil
}
