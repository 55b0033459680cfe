package admission

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// shownDomain is a DomainView as a reader sees it: each amount a string.
type shownDomain struct {
	Values                           []string
	Nodes                            int
	Allocatable, Held, Assumed, Free map[string]string
}

func showDomains(ds []api.DomainView) []shownDomain {
	str := func(l corev1.ResourceList) map[string]string {
		out := map[string]string{}
		for name, q := range l {
			out[string(name)] = q.String()
		}
		return out
	}
	out := make([]shownDomain, 0, len(ds))
	for _, d := range ds {
		out = append(out, shownDomain{Values: d.Values, Nodes: d.Nodes, Allocatable: str(d.Allocatable), Held: str(d.Held),
			Assumed: str(d.Assumed), Free: str(d.Free)})
	}
	return out
}

// cpuMemPods is amounts of cpu, memory and pods as shown.
func cpuMemPods(cpu, memory, pods string) map[string]string {
	return map[string]string{"cpu": cpu, "memory": memory, "pods": pods}
}

// racksCache is two racks r1 and r2 of two hosts of 2 cpu and 8Gi
// (rackNode), under the Topology racks, which quota team names; a pod of
// no unit holds 1 cpu on r2-h1, and unit team/running was admitted to r1
// with 3 pods, one of them on r1-h1.
func racksCache(now func() time.Time) *Cache {
	c := twoRacks()
	c.domainViews.now = now
	c.UpsertPod(wrappers.MakePod("other", "ns").Requests("cpu", "1").Node("r2-h1").Obj())
	running := rackUnit("running", 3).Phase(schedulingv1alpha1.Running).Admission("main", 3).Obj()
	running.Status.TopologyAssignments = rackAssignment("r1", 3)
	running.Status.LastAllocateTime = &metav1.Time{Time: time.Unix(50, 0)}
	c.UpsertUnit(running)
	c.UpsertPod(wrappers.MakePod("running-0", "team").OfUnit("running", "main").Requests("cpu", "1").Node("r1-h1").Obj())
	return c
}

// TestTopologyDomainsSayWhatIsFree: each rack shows what its hosts offer,
// what the pods on them hold, what a unit admitted to it whose pods are
// not on a node yet keeps (its pod on a node is held, not assumed too),
// and what is left; a host level pages; a level the Topology lacks is an
// error, a Topology that does not exist none.
func TestTopologyDomainsSayWhatIsFree(t *testing.T) {
	c := racksCache(clocktesting.NewFakePassiveClock(time.Unix(100, 0)).Now)
	rackAlloc := cpuMemPods("4", "16Gi", "220")
	type page struct {
		Level  string
		Levels []string
		Total  int
		Items  []shownDomain
	}
	for name, tc := range map[string]struct {
		level         string
		offset, limit int
		want          page
	}{
		"the top level, racks": {
			limit: 10,
			want: page{Level: rackLabel, Levels: []string{rackLabel}, Total: 2, Items: []shownDomain{
				{Values: []string{"r1"}, Nodes: 2, Allocatable: rackAlloc, Held: cpuMemPods("1", "0", "0"),
					Assumed: cpuMemPods("2", "0", "0"), Free: cpuMemPods("1", "16Gi", "220")},
				{Values: []string{"r2"}, Nodes: 2, Allocatable: rackAlloc, Held: cpuMemPods("1", "0", "0"),
					Assumed: cpuMemPods("0", "0", "0"), Free: cpuMemPods("3", "16Gi", "220")},
			}},
		},
		"a page of hosts": {
			level: hostLabel, offset: 1, limit: 2,
			want: page{Level: hostLabel, Levels: []string{rackLabel, hostLabel}, Total: 4, Items: []shownDomain{
				{Values: []string{"r1", "r1-h2"}, Nodes: 1, Allocatable: cpuMemPods("2", "8Gi", "110"), Held: cpuMemPods("0", "0", "0"),
					Assumed: cpuMemPods("2", "0", "0"), Free: cpuMemPods("0", "8Gi", "110")},
				{Values: []string{"r2", "r2-h1"}, Nodes: 1, Allocatable: cpuMemPods("2", "8Gi", "110"), Held: cpuMemPods("1", "0", "0"),
					Assumed: cpuMemPods("0", "0", "0"), Free: cpuMemPods("1", "8Gi", "110")},
			}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok, err := c.TopologyDomains("racks", tc.level, tc.offset, tc.limit)
			if !ok || err != nil {
				t.Fatalf("TopologyDomains: %v, %v", ok, err)
			}
			if diff := cmp.Diff(tc.want, page{Level: got.Level, Levels: got.Levels, Total: got.Total, Items: showDomains(got.Items)}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	if _, ok, err := c.TopologyDomains("racks", "example.com/zone", 0, 10); !ok || err == nil ||
		err.Error() != `topology "racks" has no level "example.com/zone": its levels are example.com/rack, kubernetes.io/hostname` {
		t.Errorf("an unknown level: %v, %v", ok, err)
	}
	if _, ok, _ := c.TopologyDomains("blocks", "", 0, 10); ok {
		t.Error("a Topology that does not exist has domains")
	}
	if diff := cmp.Diff([]api.TopologyView{{Name: "racks", Levels: []string{rackLabel, hostLabel}}}, c.Topologies()); diff != "" {
		t.Errorf("Topologies() (-want +got):\n%s", diff)
	}
	recent := c.RecentAdmissions()
	if len(recent) != 1 {
		t.Fatalf("recent admissions %+v, want team/running's", recent)
	}
	if diff := cmp.Diff(rackAssignment("r1", 3), recent[0].TopologyAssignments); diff != "" {
		t.Errorf("the recent admission's topology assignments (-want +got):\n%s", diff)
	}
}

// TestTopologyDomainsAreBuiltOnceASecond: callers within a second of a
// view's build are shown it, whatever changed since; a second later, the
// change shows. A Topology deleted is gone at once.
func TestTopologyDomainsAreBuiltOnceASecond(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(100, 0))
	c := racksCache(clk.Now)
	heldOnR2 := func() string {
		t.Helper()
		got, ok, err := c.TopologyDomains("racks", "", 1, 1)
		if !ok || err != nil || len(got.Items) != 1 {
			t.Fatalf("TopologyDomains: %+v, %v, %v", got, ok, err)
		}
		return showDomains(got.Items)[0].Held["cpu"]
	}
	if got := heldOnR2(); got != "1" {
		t.Fatalf("r2 holds %s cpu, want 1", got)
	}
	c.UpsertPod(wrappers.MakePod("another", "ns").Requests("cpu", "1").Node("r2-h2").Obj())
	clk.Step(domainViewMaxAge - time.Millisecond)
	if got := heldOnR2(); got != "1" {
		t.Errorf("within a second of the view's build, r2 holds %s cpu, want the build's 1", got)
	}
	clk.Step(time.Millisecond)
	if got := heldOnR2(); got != "2" {
		t.Errorf("a second after the view's build, r2 holds %s cpu, want 2", got)
	}
	c.DeleteTopology("racks")
	if _, ok, _ := c.TopologyDomains("racks", "", 0, 10); ok {
		t.Error("a Topology deleted still has domains")
	}
}
