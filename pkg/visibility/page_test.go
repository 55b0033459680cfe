package visibility

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/pkg/visibility/api/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

// TestAnOverLargeLimitGetsMaxLimit: a limit above MaxLimit gets a page of
// MaxLimit units, and the answer says so: the REST API's limit is the one
// applied and its total counts the rest, the aggregated API's continue
// and remainingItemCount lead to the next page. Koord-Queue v1.8's limit
// and offset keep their meaning.
func TestAnOverLargeLimitGetsMaxLimit(t *testing.T) {
	const waiting = MaxLimit + 500
	var src source
	for i := range waiting {
		src.units = append(src.units, unit("mine", fmt.Sprintf("u%d", i), i+1))
	}
	rest := NewHandler(src, nil)
	aggregated := NewAggregatedHandler(src, headerUser, authz.NewAuthorizer(namespaceReviewer{"admin": {""}}), nil)
	const root = "/apis/visibility.koord-queue.x-k8s.io/v1alpha1/queues/q/queueunits"
	get := func(h http.Handler, path string, into any) {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("X-Test-User", "admin")
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %.300s", path, rec.Code, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
			t.Fatal(err)
		}
	}

	type restPage struct{ Offset, Limit, Items, Total int }
	for path, want := range map[string]restPage{
		"?limit=100000":             {Limit: MaxLimit, Items: MaxLimit, Total: waiting},
		"?limit=100000&offset=1000": {Offset: 1000, Limit: MaxLimit, Items: 500, Total: waiting},
		"":                          {Limit: DefaultLimit, Items: DefaultLimit, Total: waiting},
	} {
		var got api.QueueUnitList
		get(rest, "/api/queues/q/queueunits"+path, &got)
		if diff := cmp.Diff(want, restPage{Offset: got.Offset, Limit: got.Limit, Items: len(got.Items), Total: got.Total}); diff != "" {
			t.Errorf("REST %q (-want +got):\n%s", path, diff)
		}
	}

	type summaryPage struct {
		Items     int
		Remaining int64
		Continues bool
	}
	page := func(s v1alpha1.QueueUnitsSummary) summaryPage {
		p := summaryPage{Items: len(s.Items), Continues: s.Continue != ""}
		if s.RemainingItemCount != nil {
			p.Remaining = *s.RemainingItemCount
		}
		return p
	}
	var first, next v1alpha1.QueueUnitsSummary
	get(aggregated, root+"?limit=100000", &first)
	if diff := cmp.Diff(summaryPage{Items: MaxLimit, Remaining: 500, Continues: true}, page(first)); diff != "" {
		t.Errorf("aggregated, limit 100000 (-want +got):\n%s", diff)
	}
	get(aggregated, root+"?limit=100000&continue="+first.Continue, &next)
	if diff := cmp.Diff(summaryPage{Items: 500}, page(next)); diff != "" {
		t.Errorf("aggregated, the next page (-want +got):\n%s", diff)
	}
	for path, want := range map[string]summaryPage{
		"":                         {Items: 1000, Remaining: 500, Continues: true},
		"?limit=1000":              {Items: 1000, Remaining: 500, Continues: true},
		"?offset=1000&limit=1000":  {Items: 500},
		"?offset=1499&limit=50000": {Items: 1},
	} {
		var got v1alpha1.QueueUnitsSummary
		get(aggregated, root+path, &got)
		if diff := cmp.Diff(want, page(got)); diff != "" {
			t.Errorf("aggregated, Koord-Queue v1.8's %q (-want +got):\n%s", path, diff)
		}
	}
}
