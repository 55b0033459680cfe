package forecast

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/test/performance/checker"
)

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func view(name string, estimate *time.Time, basis string) api.UnitView {
	v := api.UnitView{Namespace: "ns", Name: name, Phase: schedulingv1alpha1.Enqueued, EstimateBasis: basis}
	if estimate != nil {
		v.EstimatedAdmissionTime = &metav1.Time{Time: *estimate}
	}
	return v
}

func TestRecordKeepsTheFirstEstimate(t *testing.T) {
	first, later := sec(100), sec(50)
	var r Record
	r.Observe(sec(1), view("a", nil, "Unknown")) // no time yet: not a forecast
	r.Observe(sec(2), view("a", &first, "Declared"))
	r.Observe(sec(4), view("a", &later, "Declared"))
	redacted := view("b", &first, "Declared")
	redacted.Redacted = true
	r.Observe(sec(2), redacted)
	want := map[string]Seen{"ns/a": {At: sec(2), Estimate: sec(100), Basis: "Declared"}}
	if diff := cmp.Diff(want, r.First()); diff != "" {
		t.Errorf("first forecasts (-want +got):\n%s", diff)
	}
}

func TestMeasure(t *testing.T) {
	times := map[string]checker.UnitTimes{
		// waited 100s, forecast 10s late: error 10s, a tenth of the wait
		"ns/late": {Created: sec(0), Admitted: sec(100)},
		// waited 40s, forecast 20s early
		"ns/early": {Created: sec(10), Admitted: sec(50)},
		// waited 60s, forecast exact
		"ns/exact": {Created: sec(0), Admitted: sec(60)},
		// waited 60s, forecast read only after it was admitted
		"ns/raced": {Created: sec(0), Admitted: sec(60)},
		// waited 60s, never forecast
		"ns/none": {Created: sec(0), Admitted: sec(60)},
		// waited 5s: too short to count
		"ns/quick": {Created: sec(0), Admitted: sec(5)},
		// never admitted
		"ns/stuck": {Created: sec(0)},
	}
	first := map[string]Seen{
		"ns/late":  {At: sec(5), Estimate: sec(110), Basis: "Declared"},
		"ns/early": {At: sec(15), Estimate: sec(30), Basis: "Learned"},
		"ns/exact": {At: sec(5), Estimate: sec(60), Basis: "Declared"},
		"ns/raced": {At: sec(61), Estimate: sec(61), Basis: "Declared"},
		"ns/quick": {At: sec(1), Estimate: sec(50), Basis: "Declared"},
	}
	got := Measure(first, times, MinWait)
	want := Accuracy{
		MinWait: MinWait, Waited: 5, Forecast: 3,
		MedianError: 10 * time.Second, P90Error: 20 * time.Second,
		MedianRelative: 0.1, P90Relative: 0.5,
		MedianSigned: 0, MedianLead: 55 * time.Second, MedianDelay: 5 * time.Second,
		Bases: map[string]int{"Declared": 2, "Learned": 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("accuracy (-want +got):\n%s", diff)
	}
}

// TestProbeReadsEveryQueuesWaitingUnits: a round lists each queue's
// Enqueued units, page after page until the total, and records their
// estimates; a queue that cannot be read is counted as failed and the
// others still read.
func TestProbeReadsEveryQueuesWaitingUnits(t *testing.T) {
	estimate := sec(90)
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RequestURI())
		if strings.Contains(r.URL.Path, "/broken/") {
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(api.Error{Error: "broken"})
			return
		}
		// q1 has two waiting units, one a page.
		name := "u" + r.URL.Query().Get("offset")
		_ = json.NewEncoder(w).Encode(api.QueueUnitList{Total: 2, Items: []api.UnitView{view(name, &estimate, "Learned")}})
	}))
	defer srv.Close()
	rec := &Record{}
	p := &Probe{URL: func() string { return srv.URL }, Queues: []string{"broken", "q1"}, Record: rec, Now: func() time.Time { return sec(3) }}
	p.Round(context.Background())

	wantAsked := []string{
		"/api/queues/broken/queueunits?limit=1000&phase=Enqueued",
		"/api/queues/q1/queueunits?limit=1000&phase=Enqueued",
		"/api/queues/q1/queueunits?limit=1000&offset=1&phase=Enqueued",
	}
	if diff := cmp.Diff(wantAsked, asked); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if got := len(rec.First()); got != 2 {
		t.Errorf("%d forecasts recorded, want the 2 of q1", got)
	}
	if reads, failed, last := p.Stats(); reads != 2 || failed != 1 || last == nil || !strings.Contains(last.Error(), "broken") {
		t.Errorf("stats: %d reads, %d failed, last %v; want 2, 1 and the broken queue's error", reads, failed, last)
	}
}
