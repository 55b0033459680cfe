package controller

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRequests(t *testing.T) {
	text := `# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 32
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 2670
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PATCH"} 22
rest_client_requests_total{code="201",host="other:6443",method="POST"} 1e+03
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 430
workqueue_adds_total{name="x"} 5
`
	want := map[string]float64{"GET 200": 32, "PATCH 200": 2670, "PATCH 409": 22, "POST 201": 1430}
	if diff := cmp.Diff(want, ParseRequests(strings.NewReader(text))); diff != "" {
		t.Errorf("ParseRequests (-want +got):\n%s", diff)
	}
}

func TestProcSampleReadsThisProcess(t *testing.T) {
	cpu, rss, peak, err := ProcSample(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if cpu < 0 || rss <= 0 || peak < rss {
		t.Errorf("ProcSample = cpu %v, rss %d KiB, peak %d KiB; want cpu ≥ 0 and 0 < rss ≤ peak", cpu, rss, peak)
	}
}
