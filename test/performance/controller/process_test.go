package controller

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseCounts(t *testing.T) {
	text := `# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 32
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 2670
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PATCH"} 22
rest_client_requests_total{code="201",host="other:6443",method="POST"} 1e+03
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 430
workqueue_adds_total{name="x"} 5
controller_runtime_reconcile_total{controller="batchjob",result="error"} 2
controller_runtime_reconcile_total{controller="batchjob",result="requeue"} 0
controller_runtime_reconcile_total{controller="batchjob",result="success"} 1210
controller_runtime_reconcile_total{controller="tfjob",result="success"} 3
`
	wantRequests := map[string]float64{"GET 200": 32, "PATCH 200": 2670, "PATCH 409": 22, "POST 201": 1430}
	wantReconciles := map[string]float64{"batchjob error": 2, "batchjob success": 1210, "tfjob success": 3}
	requests, reconciles := ParseCounts(strings.NewReader(text))
	if diff := cmp.Diff(wantRequests, requests); diff != "" {
		t.Errorf("ParseCounts requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantReconciles, reconciles); diff != "" {
		t.Errorf("ParseCounts reconciles (-want +got):\n%s", diff)
	}
}

// TestProcSampleReadsThisProcess checks ProcSample against this process:
// its CPU time against getrusage's user+sys, and its peak memory against 64
// MiB touched in between, so a wrong field of /proc would not pass.
func TestProcSampleReadsThisProcess(t *testing.T) {
	_, before, err := ProcSample(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ballast := make([]byte, 64<<20)
	for i := range ballast {
		ballast[i] = byte(i)
	}
	spin := time.Now()
	for time.Since(spin) < 300*time.Millisecond {
	}
	cpu, peak, err := ProcSample(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(ballast)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	want := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	// /proc counts in clock ticks (10ms); allow a few, and the time between
	// the two reads.
	if math.Abs(cpu-want) > 0.1 || cpu < 0.2 {
		t.Errorf("ProcSample cpu %.2fs, getrusage user+sys %.2fs, after spinning 0.3s", cpu, want)
	}
	if grew := peak - before; grew < 60<<10 {
		t.Errorf("ProcSample peak grew by %d KiB (from %d to %d) after touching 64 MiB", grew, before, peak)
	}
}

// TestResidentOfSplitsThisProcess checks ResidentOf against this process:
// 64 MiB touched grow its anonymous memory, and its binary's mapped pages
// are file-backed.
func TestResidentOfSplitsThisProcess(t *testing.T) {
	before, err := ResidentOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before.FileKiB <= 0 {
		t.Errorf("ResidentOf file-backed %d KiB, want some: the test binary's text is mapped", before.FileKiB)
	}
	ballast := make([]byte, 64<<20)
	for i := range ballast {
		ballast[i] = byte(i)
	}
	after, err := ResidentOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(ballast)
	if grew := after.AnonKiB - before.AnonKiB; grew < 60<<10 {
		t.Errorf("ResidentOf anonymous grew by %d KiB (from %d to %d) after touching 64 MiB", grew, before.AnonKiB, after.AnonKiB)
	}
}

// TestLiveHeapReadsAProcessHeap reads this process's heap through Go's own
// /debug/pprof handler, as koord-queue serves it: 64 MiB kept alive are in
// the live heap, and the saved profile is a gzipped profile.
func TestLiveHeapReadsAProcessHeap(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/debug/pprof/heap", pprof.Handler("heap"))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ballast := make([]byte, 64<<20)
	path := filepath.Join(t.TempDir(), "heap.pprof")
	live, err := LiveHeap(context.Background(), strings.TrimPrefix(srv.URL, "http://"), path)
	runtime.KeepAlive(ballast)
	if err != nil {
		t.Fatal(err)
	}
	if live < 64<<20 {
		t.Errorf("live heap %d bytes, want at least the 64 MiB kept alive", live)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Errorf("saved profile of %d bytes is not gzipped", len(data))
	}
}

// TestScrapeReadsMetricsWhole: a scrape reads /metrics to its end, as
// Prometheus does (the forecast's collector runs as the body is written),
// and an answer other than 200 is an error.
func TestScrapeReadsMetricsWhole(t *testing.T) {
	body := strings.Repeat("koord_queue_pending_units{queue=\"q\"} 1\n", 1000)
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	p := &Process{metricsAddr: strings.TrimPrefix(srv.URL, "http://")}
	n, err := p.Scrape(context.Background())
	if err != nil || n != int64(len(body)) {
		t.Errorf("Scrape = %d bytes, %v; want %d, no error", n, err, len(body))
	}
	status = http.StatusInternalServerError
	if _, err := p.Scrape(context.Background()); err == nil {
		t.Error("Scrape of a 500 answer gave no error")
	}
}
