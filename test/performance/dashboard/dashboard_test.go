package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/koord-queue/koord-queue/pkg/visibility"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// fakeAPI answers the dashboard's requests as the visibility API does,
// with three Queues of which two have pending units, and records each
// request's path and query in the order they came.
type fakeAPI struct {
	// fail answers the nth request (counted from 1) to a path with 503.
	fail map[string]int

	mu    sync.Mutex
	seen  []string
	count map[string]int
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, r.URL.RequestURI())
	if f.count == nil {
		f.count = map[string]int{}
	}
	f.count[r.URL.Path]++
	failed := f.fail[r.URL.Path] == f.count[r.URL.Path]
	f.mu.Unlock()
	if failed {
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(api.Error{Error: "not ready"})
		return
	}
	var body any = []any{}
	switch r.URL.Path {
	case "/api/queues":
		body = []api.QueueView{{Name: "busy", Pending: 40}, {Name: "idle"}, {Name: "one", Pending: 1, Admitted: 3}}
	case "/api/queues/busy/queueunits", "/api/queues/one/queueunits":
		body = api.QueueUnitList{Items: []api.UnitView{{Namespace: "ns", Name: "u"}}, Total: 1}
	}
	_ = json.NewEncoder(w).Encode(body)
}

func (f *fakeAPI) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

func TestRefreshMakesTheDashboardsRequests(t *testing.T) {
	fake := &fakeAPI{}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	requests, errs := Refresh(context.Background(), &visibility.Client{BaseURL: srv.URL})
	if len(errs) > 0 {
		t.Fatalf("Refresh failed: %v", errs)
	}
	got := fake.requests()
	if requests != len(got) {
		t.Errorf("Refresh counted %d requests, the server saw %d", requests, len(got))
	}
	// The first three at once, in any order; then the pending Queues'
	// units, in any order.
	if len(got) < 3 {
		t.Fatalf("requests = %v, want at least the first three", got)
	}
	first, then := slices.Sorted(slices.Values(got[:3])), slices.Sorted(slices.Values(got[3:]))
	if diff := cmp.Diff([]string{"/api/admissions", "/api/elasticquotas", "/api/queues"}, first); diff != "" {
		t.Errorf("first requests (-want +got):\n%s", diff)
	}
	wantThen := []string{"/api/queues/busy/queueunits?limit=20&phase=Enqueued", "/api/queues/one/queueunits?limit=20&phase=Enqueued"}
	if diff := cmp.Diff(wantThen, then); diff != "" {
		t.Errorf("listings of the pending Queues (-want +got):\n%s", diff)
	}
}

func TestRefreshListsNoUnitsWhenAFirstRequestFails(t *testing.T) {
	fake := &fakeAPI{fail: map[string]int{"/api/admissions": 1}}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	requests, errs := Refresh(context.Background(), &visibility.Client{BaseURL: srv.URL})
	var status *visibility.StatusError
	if len(errs) != 1 || !errors.As(errs[0], &status) || status.Code != http.StatusServiceUnavailable {
		t.Errorf("errors = %v, want one 503", errs)
	}
	if diff := cmp.Diff([]string{"/api/admissions", "/api/elasticquotas", "/api/queues"}, slices.Sorted(slices.Values(fake.requests()))); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if requests != 3 {
		t.Errorf("requests = %d, want 3", requests)
	}
}

func TestPollersRefreshCountFailuresAndStopWithTheirContext(t *testing.T) {
	// The second read of the admissions fails: its refresh makes no
	// listing; every other makes 3 requests and 2 listings.
	fake := &fakeAPI{fail: map[string]int{"/api/admissions": 2}}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const wantRefreshes = 9
	p := &Pollers{URL: func() string { return srv.URL }, N: 3, Every: 5 * time.Millisecond}
	p.afterRefresh = func() {
		// Any failure stops them (checked below), so that one more than the
		// fake's is reported with its error rather than polled on for ever.
		if st := p.Stats(); st.Refreshes >= wantRefreshes && st.Failed >= 1 {
			cancel()
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the pollers did not stop with their context within a minute")
	}

	st := p.Stats()
	if st.Pollers != 3 || st.Refreshes < wantRefreshes || st.Failed != 1 || st.FailedRequests != 1 {
		t.Errorf("stats = %+v, want 3 pollers, at least %d refreshes, one failed with one failed request", st, wantRefreshes)
	}
	if want := 5*(st.Refreshes-1) + 3; st.Requests != want {
		t.Errorf("requests = %d, want %d (5 a refresh, 3 in the failed one)", st.Requests, want)
	}
	if st.Median <= 0 || st.P99 < st.Median {
		t.Errorf("median %v, p99 %v: want 0 < median <= p99", st.Median, st.P99)
	}
	if st.LastError == nil {
		t.Error("no last error, want the failed read of the admissions")
	}
}
