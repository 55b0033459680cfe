package kube

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// TestEachClientHasItsOwnConnection: two parts of the harness talking to
// the same API server open a connection each, so one part's traffic never
// queues behind another's. The clients are built by rest.HTTPClientFor, as
// controller-runtime's client.New builds its own.
func TestEachClientHasItsOwnConnection(t *testing.T) {
	var opened atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	base := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	for _, part := range []string{"perf-generator", "perf-runner"} {
		hc, err := rest.HTTPClientFor(ConfigFor(base, part, HarnessQPS, HarnessBurst))
		if err != nil {
			t.Fatalf("%s: building its HTTP client: %v", part, err)
		}
		resp, err := hc.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatalf("%s: %v", part, err)
		}
		resp.Body.Close()
	}
	if got := opened.Load(); got != 2 {
		t.Errorf("connections opened by two parts of the harness: %d, want 2", got)
	}
}
