package visibility

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

// quotaReviewer lets users named admin-* get ElasticQuotas in namespace
// quotas, and every user list QueueUnits in namespace mine.
type quotaReviewer struct{}

func (quotaReviewer) Allowed(_ context.Context, u authz.User, attrs authz.Attributes) (bool, error) {
	if attrs.Group == elasticquotav1alpha1.GroupVersion.Group {
		return attrs.Verb == "get" && attrs.Resource == "elasticquotas" && attrs.Namespace == "quotas" && strings.HasPrefix(u.Name, "admin-"), nil
	}
	return attrs == authz.ListQueueUnits("mine"), nil
}

// listingQuotaReviewer lets users named admin-* get ElasticQuotas in
// namespace quotas, and each user list QueueUnits in the namespaces given
// ("" for all).
type listingQuotaReviewer map[string][]string

func (r listingQuotaReviewer) Allowed(ctx context.Context, u authz.User, attrs authz.Attributes) (bool, error) {
	if attrs.Group == elasticquotav1alpha1.GroupVersion.Group {
		return quotaReviewer{}.Allowed(ctx, u, attrs)
	}
	return namespaceReviewer(r).Allowed(ctx, u, attrs)
}

// whatIfCache is a queue team whose quota (in namespace quotas) has max cpu
// 4, all of it held by a unit declared to run 10 minutes, and two waiting
// units of 4 cpus, declared to run 5 minutes, in namespaces mine and theirs.
func whatIfCache() *admission.Cache {
	c := admission.NewCache()
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "quotas").Max(corev1.ResourceCPU, "4").Obj())
	c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
	c.UpsertNode(wrappers.Node("n1", "32", "64Gi"))
	running := wrappers.MakeQueueUnit("running", "mine").Quota("team").Request(corev1.ResourceCPU, "4").Obj()
	running.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](600)
	queueunit.Admit(running, "team", queueunit.Request(running), nil, nil, metav1.Now())
	running.Status.Phase = schedulingv1alpha1.Running
	c.UpsertUnit(running)
	for _, ns := range []string{"mine", "theirs"} {
		u := wrappers.MakeQueueUnit("waits", ns).Quota("team").Request(corev1.ResourceCPU, "4").Obj()
		u.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](300)
		c.UpsertUnit(u)
	}
	return c
}

func whatIfHandler(src Source) http.Handler {
	return NewHandler(src, &Auth{
		Authenticator: authz.NewAuthenticator(tokenUser{}),
		Authorizer:    authz.NewAuthorizer(quotaReviewer{}),
	})
}

func get(h http.Handler, user, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer "+user)
	h.ServeHTTP(rec, req)
	return rec
}

// TestWhatIfMovesEstimates: raising the quota's max moves the waiting
// units' estimates earlier; units of namespaces the caller may not list
// are left out of the replay, and listed redacted, with no estimate.
func TestWhatIfMovesEstimates(t *testing.T) {
	h := whatIfHandler(whatIfCache())
	forecast := func(query string) api.WhatIf {
		t.Helper()
		rec := get(h, "admin-ann", "/api/queues/team/forecast"+query)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET forecast%s: %d %s", query, rec.Code, rec.Body)
		}
		var w api.WhatIf
		if err := json.Unmarshal(rec.Body.Bytes(), &w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	at := func(w api.WhatIf) time.Time {
		v := w.Items[0] // mine/waits
		if v.EstimatedAdmissionTime == nil || v.EstimateBasis != "Declared" {
			t.Fatalf("unit %+v: no declared estimate", v)
		}
		return v.EstimatedAdmissionTime.Time
	}
	before, after := forecast(""), forecast("?max.cpu=12")
	if len(before.Items) != 2 || len(after.Items) != 2 {
		t.Fatalf("items: %d and %d, want 2 waiting units", len(before.Items), len(after.Items))
	}
	if was, is := at(before), at(after); !is.Before(was) {
		t.Errorf("mine/waits: estimate %v with max cpu 12, not before %v with max cpu 4", is, was)
	}
	if hidden := after.Items[1]; hidden.EstimatedAdmissionTime != nil || hidden.EstimateBasis != "" || !after.OnlyVisible {
		t.Errorf("the unit of theirs: estimate %v (%s), onlyVisible %v; want none, and true", hidden.EstimatedAdmissionTime, hidden.EstimateBasis, after.OnlyVisible)
	}
	if got := after.Max[corev1.ResourceCPU]; got.String() != "12" || after.Quota != "team" {
		t.Errorf("quota %s max cpu %s, want team 12", after.Quota, got.String())
	}
	names := func(w api.WhatIf) []string {
		var out []string
		for _, v := range w.Items {
			out = append(out, v.Namespace+"/"+v.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"mine/waits", "/"}, names(after)); diff != "" {
		t.Errorf("the unit of theirs not redacted (-want +got):\n%s", diff)
	}
}

// TestWhatIfRefuses: a caller who may not get the quota is refused, bad
// parameters are named, an unknown queue is not found.
func TestWhatIfRefuses(t *testing.T) {
	h := whatIfHandler(whatIfCache())
	for name, tc := range map[string]struct {
		user, query string
		wantCode    int
		wantError   string
	}{
		"a tenant may not get the quota":   {user: "tenant", query: "?max.cpu=8", wantCode: 403, wantError: `may not get elasticquotas.scheduling.sigs.k8s.io "team" in namespace "quotas"`},
		"an unknown parameter":             {user: "admin-ann", query: "?cpu=8", wantCode: 400, wantError: `unknown parameter "cpu": give min.<resource> or max.<resource>`},
		"an amount that is not a quantity": {user: "admin-ann", query: "?max.cpu=lots", wantCode: 400, wantError: `max.cpu="lots": quantities must match`},
		"a negative amount":                {user: "admin-ann", query: "?max.cpu=-1", wantCode: 400, wantError: "max[cpu] is -1"},
		"an amount given twice":            {user: "admin-ann", query: "?max.cpu=1&max.cpu=2", wantCode: 400, wantError: "max.cpu given 2 times"},
		"min above max":                    {user: "admin-ann", query: "?min.cpu=8&max.cpu=4", wantCode: 400, wantError: "min.cpu=8 is more than max.cpu=4"},
		"a bad resource name":              {user: "admin-ann", query: "?max.a%20b=1", wantCode: 400, wantError: `resource name "a b"`},
	} {
		t.Run(name, func(t *testing.T) {
			rec := get(h, tc.user, "/api/queues/team/forecast"+tc.query)
			var e api.Error
			_ = json.Unmarshal(rec.Body.Bytes(), &e)
			if rec.Code != tc.wantCode || !strings.Contains(e.Error, tc.wantError) {
				t.Errorf("%d %q, want %d with %q", rec.Code, e.Error, tc.wantCode, tc.wantError)
			}
		})
	}
	if rec := get(h, "admin-ann", "/api/queues/nobody/forecast"); rec.Code != http.StatusNotFound {
		t.Errorf("an unknown queue: %d %s, want 404", rec.Code, rec.Body)
	}
}

// TestWhatIfOneAtATime: while a caller's what-if is computed, another of
// theirs is answered 429 with Retry-After, and served once it is done.
func TestWhatIfOneAtATime(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	h := whatIfHandler(source{whatIf: func() api.WhatIf {
		if calls.Add(1) == 1 { // the first is computed until released
			close(started)
			<-release
		}
		return api.WhatIf{Queue: "q", Items: []api.UnitView{}}
	}})
	first := make(chan int)
	go func() { first <- get(h, "admin-ann", "/api/queues/q/forecast").Code }()
	<-started
	if rec := get(h, "admin-ann", "/api/queues/q/forecast?max.cpu=8"); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a second what-if while the first is computed: %d %v %s, want 429 with Retry-After", rec.Code, rec.Header(), rec.Body)
	}
	close(release)
	if code := <-first; code != http.StatusOK {
		t.Errorf("the first what-if: %d, want 200", code)
	}
	if code := get(h, "admin-ann", "/api/queues/q/forecast?max.cpu=8").Code; code != http.StatusOK {
		t.Errorf("a what-if after the first is done: %d, want 200", code)
	}
}

// TestClientWhatIf: the client asks for the quota change it is given and
// reads the forecast under it; a refusal is a StatusError with the API's
// code and message.
func TestClientWhatIf(t *testing.T) {
	srv := httptest.NewServer(whatIfHandler(whatIfCache()))
	defer srv.Close()
	ctx := context.Background()
	admin := &Client{BaseURL: srv.URL, Token: "admin-ann"}
	change := api.QuotaChange{
		Min: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12"), corev1.ResourceMemory: resource.MustParse("64Gi")},
	}
	got, err := admin.WhatIf(ctx, "team", change)
	if err != nil {
		t.Fatalf("WhatIf: %v", err)
	}
	quota := func(w api.WhatIf) map[string]string {
		out := map[string]string{"queue": w.Queue, "quota": w.Quota}
		for name, q := range w.Min {
			out["min."+string(name)] = q.String()
		}
		for name, q := range w.Max {
			out["max."+string(name)] = q.String()
		}
		return out
	}
	want := map[string]string{"queue": "team", "quota": "team", "min.cpu": "2", "max.cpu": "12", "max.memory": "64Gi"}
	if diff := cmp.Diff(want, quota(got)); diff != "" {
		t.Errorf("the quota the forecast assumed (-want +got):\n%s", diff)
	}
	live, err := admin.WhatIf(ctx, "team", api.QuotaChange{})
	if err != nil {
		t.Fatalf("WhatIf with no change: %v", err)
	}
	if len(got.Items) != 2 || len(live.Items) != 2 {
		t.Fatalf("items: %d and %d, want the 2 waiting units", len(got.Items), len(live.Items))
	}
	// The unit of mine; theirs, which the caller may not list, has none.
	was, is := live.Items[0].EstimatedAdmissionTime, got.Items[0].EstimatedAdmissionTime
	if was == nil || is == nil || !is.Before(was) {
		t.Errorf("mine/waits: estimate %v with max cpu 12, want one before %v with the quota as it is", is, was)
	}

	_, err = (&Client{BaseURL: srv.URL, Token: "tenant"}).WhatIf(ctx, "team", change)
	var status *StatusError
	if !errors.As(err, &status) || status.Code != http.StatusForbidden || !strings.Contains(status.Message, "may not get elasticquotas") {
		t.Errorf("a tenant's what-if: %v, want a 403 StatusError saying it may not get the quota", err)
	}
	_, err = admin.WhatIf(ctx, "a/b", api.QuotaChange{})
	if !errors.As(err, &status) || status.Code != http.StatusNotFound {
		t.Errorf("a queue named a/b: %v, want a 404 StatusError (the name escaped, not a path)", err)
	}
}

// TestWhatIfBisectionFindsNothingHidden: a tenant who may get the quota
// but list QueueUnits only in mine asks 16 what-ifs, halving max.cpu, for
// whether the unit of theirs ahead of its own would be admitted: it learns
// nothing of that unit's request (the same answers for 2345m and 2346m).
// An administrator who may list QueueUnits everywhere finds it exactly:
// the bisection works where nothing is hidden.
func TestWhatIfBisectionFindsNothingHidden(t *testing.T) {
	world := func(hidden string) http.Handler {
		c := admission.NewCache()
		c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "quotas").Max(corev1.ResourceCPU, "4").Obj())
		c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
		c.UpsertNode(wrappers.Node("n1", "128", "64Gi"))
		for _, r := range []struct {
			ns, cpu  string
			priority int32
		}{{"theirs", hidden, 10}, {"mine", "1", 1}} {
			u := wrappers.MakeQueueUnit("waits", r.ns).Quota("team").Request(corev1.ResourceCPU, r.cpu).Priority(r.priority).Obj()
			u.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](300)
			c.UpsertUnit(u)
		}
		return NewHandler(c, &Auth{
			Authenticator: authz.NewAuthenticator(tokenUser{}),
			Authorizer:    authz.NewAuthorizer(listingQuotaReviewer{"admin-tenant": {"mine"}, "admin-all": {""}}),
		})
	}
	// bisect halves [0, 65536m] 16 times: the least max.cpu under which
	// the unit at position 1 has an estimate (it fits).
	bisect := func(h http.Handler, user string) int {
		lo, hi := 0, 1<<16
		for range 16 {
			mid := (lo + hi) / 2
			rec := get(h, user, fmt.Sprintf("/api/queues/team/forecast?max.cpu=%dm", mid))
			var w api.WhatIf
			if err := json.Unmarshal(rec.Body.Bytes(), &w); rec.Code != http.StatusOK || err != nil {
				t.Fatalf("%s's what-if: %d %s", user, rec.Code, rec.Body)
			}
			if w.Items[0].EstimatedAdmissionTime != nil {
				hi = mid
			} else {
				lo = mid
			}
		}
		return hi
	}
	small, large := world("2345m"), world("2346m")
	if got := []int{bisect(small, "admin-all"), bisect(large, "admin-all")}; !cmp.Equal([]int{2345, 2346}, got) {
		t.Errorf("the administrator's bisections found %v millicores, want 2345 and 2346", got)
	}
	if a, b := bisect(small, "admin-tenant"), bisect(large, "admin-tenant"); a != b || a == 2345 {
		t.Errorf("the tenant's bisections found %d and %d millicores: they tell 2345m from 2346m", a, b)
	}
}
