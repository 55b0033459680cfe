package visibility

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/topology"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

const (
	rackLabel = "example.com/rack"
	hostLabel = "kubernetes.io/hostname"
)

// racksCache is a Topology racks (rack, host) over hosts of 2 cpu, hosts
// of them in each rack named, and quota team naming it.
func racksCache(hosts int, racks ...string) *admission.Cache {
	c := admission.NewCache()
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "quotas").Max(corev1.ResourceCPU, "100").
		Annotation(schedulingv1alpha1.AnnotationTopology, "racks").Obj())
	c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
	c.UpsertTopology(wrappers.Topology("racks", rackLabel, hostLabel))
	for _, rack := range racks {
		for h := range hosts {
			n := wrappers.Node(fmt.Sprintf("%s-h%d", rack, h), "2", "8Gi")
			n.Labels = map[string]string{rackLabel: rack, hostLabel: n.Name}
			c.UpsertNode(n)
		}
	}
	return c
}

// admittedToRack is a unit of namespace ns admitted to rack with pods
// pods of 1 cpu, none on a node yet.
func admittedToRack(ns, name, rack string, pods int32) *schedulingv1alpha1.QueueUnit {
	u := wrappers.MakeQueueUnit(name, ns).Quota("team").PodSet("main", pods, "cpu", "1").
		PodSetAnnotation(topology.AnnotationPodSetRequiredTopologyKueue, rackLabel).
		Phase(schedulingv1alpha1.Running).Admission("main", int64(pods)).Obj()
	u.Status.TopologyAssignments = []schedulingv1alpha1.PodSetTopologyAssignment{{Name: "main", Topology: "racks", Levels: []string{rackLabel},
		Domains: []schedulingv1alpha1.TopologyDomainAssignment{{Values: []string{rack}, Count: pods}}}}
	u.Status.LastAllocateTime = &metav1.Time{Time: time.Unix(50, 0)}
	return u
}

// TestTopologyDomainsAreForEveryAuthenticatedUser: a Topology's domains
// and what they have free are cluster-wide totals, shown to a user who
// may list QueueUnits nowhere, without naming the units that keep room
// in them; a caller without a token gets a 401.
func TestTopologyDomainsAreForEveryAuthenticatedUser(t *testing.T) {
	c := racksCache(2, "r1")
	c.UpsertUnit(admittedToRack("theirs", "secret-job", "r1", 3))
	h := NewHandler(c, &Auth{Authenticator: authz.NewAuthenticator(tokenUser{}), Authorizer: authz.NewAuthorizer(namespaceReviewer{})})

	rec := get(h, "tenant", "/api/topologies")
	var topologies []api.TopologyView
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/topologies: %d %s", rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &topologies); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]api.TopologyView{{Name: "racks", Levels: []string{rackLabel, hostLabel}}}, topologies); diff != "" {
		t.Errorf("GET /api/topologies (-want +got):\n%s", diff)
	}

	rec = get(h, "tenant", "/api/topologies/racks/domains")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/topologies/racks/domains: %d %s", rec.Code, rec.Body)
	}
	var list api.TopologyDomainList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("domains %+v, want rack r1", list)
	}
	r1 := list.Items[0]
	type amounts struct{ Allocatable, Assumed, Free string }
	got := amounts{Allocatable: r1.Allocatable.Cpu().String(), Assumed: r1.Assumed.Cpu().String(), Free: r1.Free.Cpu().String()}
	if diff := cmp.Diff(amounts{Allocatable: "4", Assumed: "3", Free: "1"}, got); diff != "" {
		t.Errorf("rack r1's cpu (-want +got):\n%s", diff)
	}
	for _, name := range []string{"theirs", "secret-job"} {
		if strings.Contains(rec.Body.String(), name) {
			t.Errorf("the domains name %q, of a unit the tenant may not see: %s", name, rec.Body)
		}
	}

	if rec := get(h, "", "/api/topologies/racks/domains"); rec.Code != http.StatusUnauthorized {
		t.Errorf("without a token: %d %s, want 401", rec.Code, rec.Body)
	}
}

// TestTopologyDomainsArePaged: a level's domains come a page at a time,
// at most MaxLimit whatever the limit asked, as a queue's units do; a
// malformed page, a level the Topology lacks or a Topology that does not
// exist is refused.
func TestTopologyDomainsArePaged(t *testing.T) {
	const hosts = MaxLimit + 100
	h := NewHandler(racksCache(hosts, "r1"), nil)
	type page struct {
		Code                 int
		Level                string
		Total, Offset, Limit int
		Items                int
	}
	for path, want := range map[string]page{
		"/api/topologies/racks/domains":                                      {Code: 200, Level: rackLabel, Total: 1, Limit: DefaultLimit, Items: 1},
		"/api/topologies/racks/domains?level=" + hostLabel:                   {Code: 200, Level: hostLabel, Total: hosts, Limit: DefaultLimit, Items: MaxLimit},
		"/api/topologies/racks/domains?level=" + hostLabel + "&limit=100000": {Code: 200, Level: hostLabel, Total: hosts, Limit: MaxLimit, Items: MaxLimit},
		"/api/topologies/racks/domains?level=" + hostLabel + "&offset=1000&limit=500": {Code: 200, Level: hostLabel, Total: hosts,
			Offset: 1000, Limit: 500, Items: 100},
		"/api/topologies/racks/domains?limit=0":                  {Code: 400},
		"/api/topologies/racks/domains?offset=-1":                {Code: 400},
		"/api/topologies/racks/domains?level=example.com%2Fzone": {Code: 400},
		"/api/topologies/zones/domains":                          {Code: 404},
	} {
		rec := get(h, "", path)
		got := page{Code: rec.Code}
		if rec.Code == http.StatusOK {
			var list api.TopologyDomainList
			if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
				t.Fatal(err)
			}
			got = page{Code: rec.Code, Level: list.Level, Total: list.Total, Offset: list.Offset, Limit: list.Limit, Items: len(list.Items)}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s\n%.300s", path, diff, rec.Body)
		}
	}
}
