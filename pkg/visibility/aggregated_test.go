package visibility

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/pkg/visibility/api/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

// source is a Source of one queue, "q" (of quota "q"), whose units wait in
// the order given.
type source struct {
	units []api.UnitView
	// whatIf, when set, answers WhatIf.
	whatIf func() api.WhatIf
}

func (s source) Queues() []api.QueueView { return []api.QueueView{{Name: "q"}} }
func (s source) Queue(name string) (api.QueueView, bool) {
	v := api.QueueView{Name: name}
	if s.whatIf != nil {
		v.Quota = &api.QuotaView{Name: name, Namespace: "quotas"}
	}
	return v, name == "q"
}

func (s source) QueueUnits(queue string, phase schedulingv1alpha1.QueueUnitPhase, offset, limit int) ([]api.UnitView, int) {
	var all []api.UnitView
	for _, u := range s.units {
		if u.Queue == queue && (phase == "" || u.Phase == phase) {
			all = append(all, u)
		}
	}
	total := len(all)
	all = all[min(offset, len(all)):]
	return all[:min(limit, len(all))], total
}
func (s source) QueueUnit(string, string) (api.UnitView, bool) { return api.UnitView{}, false }
func (s source) Quotas() []api.QuotaView                       { return []api.QuotaView{{Name: "q"}} }
func (s source) Quota(name string) (api.QuotaView, bool) {
	return api.QuotaView{Name: name}, name == "q"
}
func (s source) RecentAdmissions() []api.AdmissionRecord { return nil }
func (s source) Topologies() []api.TopologyView {
	return []api.TopologyView{{Name: "t", Levels: []string{"rack"}}}
}
func (s source) TopologyDomains(name, level string, offset, limit int) (api.TopologyDomainList, bool, error) {
	if level != "" && level != "rack" {
		return api.TopologyDomainList{}, name == "t", errors.New("no such level")
	}
	return api.TopologyDomainList{Topology: name, Level: "rack", Offset: offset, Limit: limit}, name == "t", nil
}
func (s source) WhatIf(queue string, _ api.QuotaChange, _ func(string) (bool, error)) (api.WhatIf, bool, error) {
	if s.whatIf == nil || queue != "q" {
		return api.WhatIf{}, false, nil
	}
	return s.whatIf(), true, nil
}

// namespaceReviewer lets each user list QueueUnits in the namespaces given
// ("" for all), and get the aggregated API's resources unless the user's
// name starts with "no-visibility-".
type namespaceReviewer map[string][]string

func (r namespaceReviewer) Allowed(_ context.Context, u authz.User, attrs authz.Attributes) (bool, error) {
	if attrs.Group == v1alpha1.GroupVersion.Group {
		return attrs.Verb == "get" && !strings.HasPrefix(u.Name, "no-visibility-"), nil
	}
	return attrs == authz.ListQueueUnits(attrs.Namespace) && slices.Contains(r[u.Name], attrs.Namespace), nil
}

// headerUser authenticates the user the X-Test-User header names.
var headerUser = authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
	name := r.Header.Get("X-Test-User")
	if name == "" {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
})

func unit(ns, name string, pos int) api.UnitView {
	return api.UnitView{
		Namespace: ns, Name: name, Queue: "q", Phase: schedulingv1alpha1.Enqueued, Priority: 1, Position: pos,
		Request: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, Resource: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		PodState: schedulingv1alpha1.PodState{Pending: 2}, Reason: "waits for " + name, QuotaRule: "label",
	}
}

func TestAggregatedAPI(t *testing.T) {
	src := source{units: []api.UnitView{
		unit("theirs", "a", 1),
		unit("mine", "b", 2),
		unit("mine", "c", 3),
		{Namespace: "mine", Name: "d", Queue: "q", Phase: schedulingv1alpha1.Running},
	}}
	authorizer := authz.NewAuthorizer(namespaceReviewer{"tenant": {"mine"}, "admin": {""}, "no-visibility-admin": {""}})
	h := NewAggregatedHandler(src, headerUser, authorizer, nil)
	const root = "/apis/visibility.koord-queue.x-k8s.io/v1alpha1"
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	named := func(ns, name string, pos int) v1alpha1.QueueUnit {
		return v1alpha1.QueueUnit{
			Metadata: v1alpha1.ObjectMeta{Namespace: ns, Name: name}, QuotaName: "q", QueueName: "q",
			Request: cpu("1"), Resources: cpu("2"), Phase: schedulingv1alpha1.Enqueued, PodState: v1alpha1.PodState{Pending: 2},
			Priority: 1, Position: pos, Reason: "waits for " + name, QuotaRule: "label",
		}
	}
	redacted := func(pos int) v1alpha1.QueueUnit {
		return v1alpha1.QueueUnit{QuotaName: "q", QueueName: "q", Phase: schedulingv1alpha1.Enqueued, Priority: 1, Position: pos, Redacted: true}
	}
	list := func(total int, items ...v1alpha1.QueueUnit) v1alpha1.QueueUnitsSummary {
		return v1alpha1.QueueUnitsSummary{TypeMeta: metav1.TypeMeta{Kind: "QueueUnitsSummary", APIVersion: "visibility.koord-queue.x-k8s.io/v1alpha1"}, Total: total, Items: items}
	}
	withContinue := func(s v1alpha1.QueueUnitsSummary, offset, remaining int) v1alpha1.QueueUnitsSummary {
		s.Continue = encodeContinue(root+"/queues/q/queueunits?phase=Enqueued", offset)
		s.RemainingItemCount = ptr.To(int64(remaining))
		return s
	}

	cases := map[string]struct {
		user, path string
		wantCode   int
		wantList   *v1alpha1.QueueUnitsSummary
		wantReason metav1.StatusReason
	}{
		"no user: 401": {
			path: root + "/queues/q/queueunits", wantCode: 401, wantReason: metav1.StatusReasonUnauthorized,
		},
		"no user asking for discovery: 401": {
			path: root, wantCode: 401, wantReason: metav1.StatusReasonUnauthorized,
		},
		"the admin sees every waiting unit named, in order": {
			user: "admin", path: root + "/queues/q/queueunits", wantCode: 200,
			wantList: ptr.To(list(3, named("theirs", "a", 1), named("mine", "b", 2), named("mine", "c", 3))),
		},
		"the tenant sees the other namespace's unit redacted, in its place and counted": {
			user: "tenant", path: root + "/queues/q/queueunits", wantCode: 200,
			wantList: ptr.To(list(3, redacted(1), named("mine", "b", 2), named("mine", "c", 3))),
		},
		"someone allowed nowhere sees positions only": {
			user: "stranger", path: root + "/queues/q/queueunits", wantCode: 200,
			wantList: ptr.To(list(3, redacted(1), redacted(2), redacted(3))),
		},
		"a page of two continues at the third": {
			user: "tenant", path: root + "/queues/q/queueunits?limit=2", wantCode: 200,
			wantList: ptr.To(withContinue(list(3, redacted(1), named("mine", "b", 2)), 2, 1)),
		},
		"the continue token gives the last page": {
			user: "tenant", path: root + "/queues/q/queueunits?limit=2&continue=" + encodeContinue(root+"/queues/q/queueunits?phase=Enqueued", 2), wantCode: 200,
			wantList: ptr.To(list(3, named("mine", "c", 3))),
		},
		"offset as Koord-Queue v1.8 takes it": {
			user: "admin", path: root + "/queues/q/queueunits?offset=1&limit=1", wantCode: 200,
			wantList: ptr.To(withContinue(list(3, named("mine", "b", 2)), 2, 1)),
		},
		"a continue token of another list: 400": {
			user: "admin", path: root + "/queues/q/queueunits?continue=" + encodeContinue(root+"/elasticquotas/q/queueunits?phase=", 2),
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest,
		},
		"continue and offset together: 400": {
			user: "admin", path: root + "/queues/q/queueunits?offset=1&continue=" + encodeContinue(root+"/queues/q/queueunits?phase=Enqueued", 2),
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest,
		},
		"an unknown phase: 400": {
			user: "admin", path: root + "/queues/q/queueunits?phase=Sleeping", wantCode: 400, wantReason: metav1.StatusReasonBadRequest,
		},
		"an unknown queue: 404": {
			user: "admin", path: root + "/queues/nope/queueunits", wantCode: 404, wantReason: metav1.StatusReasonNotFound,
		},
		"the quota's units of a phase": {
			user: "tenant", path: root + "/elasticquotas/q/queueunits?phase=Running", wantCode: 200,
			wantList: ptr.To(list(1, v1alpha1.QueueUnit{Metadata: v1alpha1.ObjectMeta{Namespace: "mine", Name: "d"}, QuotaName: "q", QueueName: "q", Phase: schedulingv1alpha1.Running})),
		},
		"an unknown quota: 404": {
			user: "admin", path: root + "/elasticquotas/nope/queueunits", wantCode: 404, wantReason: metav1.StatusReasonNotFound,
		},
		"a caller who may list QueueUnits but not get the API's resource: 403": {
			user: "no-visibility-admin", path: root + "/queues/q/queueunits", wantCode: 403, wantReason: metav1.StatusReasonForbidden,
		},
		"the same for a quota's units: 403": {
			user: "no-visibility-admin", path: root + "/elasticquotas/q/queueunits", wantCode: 403, wantReason: metav1.StatusReasonForbidden,
		},
		"an unknown path: 404": {
			user: "admin", path: root + "/queueunits", wantCode: 404, wantReason: metav1.StatusReasonNotFound,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.user != "" {
				req.Header.Set("X-Test-User", tc.user)
			}
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", rec.Code, tc.wantCode, rec.Body)
			}
			if tc.wantList != nil {
				var got v1alpha1.QueueUnitsSummary
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(*tc.wantList, got); diff != "" {
					t.Errorf("list (-want +got):\n%s", diff)
				}
				return
			}
			var status metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
				t.Fatal(err)
			}
			if status.Kind != "Status" || status.Reason != tc.wantReason || int(status.Code) != tc.wantCode {
				t.Errorf("status %+v, want a Status of reason %s and code %d", status, tc.wantReason, tc.wantCode)
			}
		})
	}
}

// TestAggregatedDiscovery: what the API server's aggregator and kubectl
// read to find the API.
func TestAggregatedDiscovery(t *testing.T) {
	h := NewAggregatedHandler(source{}, headerUser, authz.NewAuthorizer(namespaceReviewer{}), nil)
	get := func(path string, into any) {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("X-Test-User", "system:kube-aggregator")
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
			t.Fatal(err)
		}
	}
	var resources metav1.APIResourceList
	get("/apis/visibility.koord-queue.x-k8s.io/v1alpha1", &resources)
	want := metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: "visibility.koord-queue.x-k8s.io/v1alpha1",
		APIResources: []metav1.APIResource{
			{Name: "queues/queueunits", Kind: "QueueUnitsSummary", Verbs: metav1.Verbs{"get"}},
			{Name: "elasticquotas/queueunits", Kind: "QueueUnitsSummary", Verbs: metav1.Verbs{"get"}},
		},
	}
	if diff := cmp.Diff(want, resources); diff != "" {
		t.Errorf("APIResourceList (-want +got):\n%s", diff)
	}
	var group metav1.APIGroup
	get("/apis/visibility.koord-queue.x-k8s.io", &group)
	if group.Name != "visibility.koord-queue.x-k8s.io" || group.PreferredVersion.Version != "v1alpha1" {
		t.Errorf("APIGroup %+v", group)
	}
	var groups metav1.APIGroupList
	get("/apis", &groups)
	if len(groups.Groups) != 1 || groups.Groups[0].Name != group.Name {
		t.Errorf("APIGroupList %+v", groups)
	}
}

func TestContinueToken(t *testing.T) {
	const list = "/apis/visibility.koord-queue.x-k8s.io/v1alpha1/queues/q/queueunits?phase=Enqueued"
	cases := map[string]struct {
		token      string
		wantOffset int
		wantErr    bool
	}{
		"a token of the list gives its offset":       {token: encodeContinue(list, 1000), wantOffset: 1000},
		"a token of another phase's list is refused": {token: encodeContinue(list+"x", 1000), wantErr: true},
		"a token that is not base64 is refused":      {token: "%%%", wantErr: true},
		"a token that is not JSON is refused":        {token: "bm90IGpzb24", wantErr: true},
		"a token with a negative offset is refused":  {token: encodeContinue(list, -1), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := decodeContinue(tc.token, list)
			if tc.wantErr {
				if !errors.Is(err, errContinue) {
					t.Errorf("err %v, want errContinue", err)
				}
				return
			}
			if err != nil || got != tc.wantOffset {
				t.Errorf("offset %d, err %v; want %d", got, err, tc.wantOffset)
			}
		})
	}
}

// TestSummaryItemCarriesTheForecast: the aggregated API gives a waiting
// unit's forecast as the REST API does, redacted or not.
func TestSummaryItemCarriesTheForecast(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	for _, redacted := range []bool{false, true} {
		u := api.UnitView{Namespace: "ns", Name: "a", Queue: "q", Phase: schedulingv1alpha1.Enqueued, Position: 1,
			EstimatedAdmissionTime: &at, EstimateBasis: "Learned", Redacted: redacted}
		got := summaryItem(u)
		if got.EstimatedAdmissionTime == nil || !got.EstimatedAdmissionTime.Equal(&at) || got.EstimateBasis != "Learned" {
			t.Errorf("redacted %v: item's forecast %v (%s), want %v (Learned)", redacted, got.EstimatedAdmissionTime, got.EstimateBasis, at)
		}
	}
}
