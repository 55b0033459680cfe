package admission

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/topology"
)

const (
	rackLabel = "example.com/rack"
	hostLabel = "kubernetes.io/hostname"
)

// rackNode is a node of 2 cpu on host name of rack.
func rackNode(rack, name string) *corev1.Node {
	n := wrappers.Node(name, "2", "8Gi")
	n.Labels = map[string]string{rackLabel: rack, hostLabel: name}
	return n
}

// rackUnit is a unit of pods × 1 cpu asking for a rack as required.
func rackUnit(name string, pods int32) *wrappers.QueueUnitWrapper {
	return wrappers.MakeQueueUnit(name, "team").Quota("team").PodSet("main", pods, "cpu", "1").
		PodSetAnnotation(topology.AnnotationPodSetRequiredTopologyKueue, rackLabel)
}

// racksTeam is a Cache with the Topology racks, which quota team (of
// maxCPU cpu) names, and no node.
func racksTeam(maxCPU string) *Cache {
	c := NewCache()
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "team").Max(corev1.ResourceCPU, maxCPU).
		Annotation(schedulingv1alpha1.AnnotationTopology, "racks").Obj())
	c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
	c.UpsertTopology(wrappers.Topology("racks", rackLabel, hostLabel))
	return c
}

// twoRacks is a Cache of two racks r1 and r2 of two hosts of 2 cpu
// (rackNode), under the Topology racks, which quota team (100 cpu) names.
func twoRacks() *Cache {
	c := racksTeam("100")
	for _, rack := range []string{"r1", "r2"} {
		for _, host := range []string{"h1", "h2"} {
			c.UpsertNode(rackNode(rack, rack+"-"+host))
		}
	}
	return c
}

func rackAssignment(rack string, pods int32) []schedulingv1alpha1.PodSetTopologyAssignment {
	return []schedulingv1alpha1.PodSetTopologyAssignment{{Name: "main", Topology: "racks", Levels: []string{rackLabel},
		Domains: []schedulingv1alpha1.TopologyDomainAssignment{{Values: []string{rack}, Count: pods}}}}
}

// TestUnitsAskingForARack: on two racks of two 2-cpu hosts, a unit asking
// for a rack is admitted only when one rack has room for all its pods,
// less what pods on the nodes hold and what units admitted to a rack and
// not on nodes yet keep; the rack chosen is recorded with its admission.
func TestUnitsAskingForARack(t *testing.T) {
	type seen struct {
		Admitted map[string][]schedulingv1alpha1.PodSetTopologyAssignment
		Waiting  map[string]string
	}
	admittedTo := func(u *wrappers.QueueUnitWrapper, rack string, pods int32) *schedulingv1alpha1.QueueUnit {
		o := u.Phase(schedulingv1alpha1.Running).Admission("main", int64(pods)).Obj()
		o.Status.TopologyAssignments = rackAssignment(rack, pods)
		return o
	}
	cases := map[string]struct {
		quotaTopology string
		pods          []*corev1.Pod
		units         []*schedulingv1alpha1.QueueUnit
		want          seen
	}{
		"a unit one rack holds is admitted to the rack with the least to spare": {
			quotaTopology: "racks",
			pods:          []*corev1.Pod{wrappers.MakePod("other", "ns").Requests("cpu", "1").Node("r2-h1").Obj()},
			units:         []*schedulingv1alpha1.QueueUnit{rackUnit("u", 3).Obj()},
			want:          seen{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{"team/u": rackAssignment("r2", 3)}},
		},
		"a unit no rack holds waits saying why, and a smaller one behind it is admitted": {
			quotaTopology: "racks",
			pods:          []*corev1.Pod{wrappers.MakePod("other", "ns").Requests("cpu", "1").Node("r1-h1").Obj()},
			units: []*schedulingv1alpha1.QueueUnit{rackUnit("big", 5).Obj(),
				func() *schedulingv1alpha1.QueueUnit {
					u := rackUnit("small", 2).Obj()
					u.CreationTimestamp = metav1.NewTime(time.Unix(5, 0))
					return u
				}()},
			want: seen{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{"team/small": rackAssignment("r1", 2)},
				Waiting: map[string]string{"team/big": "needs 5 × 1 cpu within one `example.com/rack`; the largest free one has 4"}},
		},
		"pods admitted to a rack and not on nodes yet keep its room, as a restart reads them from the status": {
			quotaTopology: "racks",
			units:         []*schedulingv1alpha1.QueueUnit{admittedTo(rackUnit("running", 4), "r1", 4), rackUnit("u", 4).Obj()},
			want:          seen{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{"team/u": rackAssignment("r2", 4)}},
		},
		"pods of an admitted unit on nodes count once": {
			quotaTopology: "racks",
			pods: []*corev1.Pod{wrappers.MakePod("running-0", "team").OfUnit("running", "main").Requests("cpu", "1").Node("r1-h1").Obj(),
				wrappers.MakePod("running-1", "team").OfUnit("running", "main").Requests("cpu", "1").Node("r1-h1").Obj()},
			units: []*schedulingv1alpha1.QueueUnit{admittedTo(rackUnit("running", 2), "r1", 2), rackUnit("u", 4).Obj(),
				func() *schedulingv1alpha1.QueueUnit {
					u := rackUnit("v", 2).Obj()
					u.CreationTimestamp = metav1.NewTime(time.Unix(5, 0))
					return u
				}()},
			want: seen{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{
				"team/u": rackAssignment("r2", 4), "team/v": rackAssignment("r1", 2)}},
		},
		"a level the quota's Topology lacks is an error on the unit": {
			quotaTopology: "racks",
			units: []*schedulingv1alpha1.QueueUnit{wrappers.MakeQueueUnit("u", "team").Quota("team").PodSet("main", 1, "cpu", "1").
				PodSetAnnotation(topology.AnnotationPodSetRequiredTopology, "example.com/zone").Obj()},
			want: seen{Waiting: map[string]string{"team/u": `pod set main: koord-queue/podset-required-topology asks for topology level "example.com/zone", which topology "racks" does not have: its levels are example.com/rack, kubernetes.io/hostname`}},
		},
		"a quota naming no Topology is an error on the unit": {
			units: []*schedulingv1alpha1.QueueUnit{rackUnit("u", 1).Obj()},
			want:  seen{Waiting: map[string]string{"team/u": "pod set main asks for topology level example.com/rack, and quota team names no Topology: annotate it, or an ancestor, koord-queue/topology=<topology>"}},
		},
		"a Topology that does not exist is an error on the unit": {
			quotaTopology: "blocks",
			units:         []*schedulingv1alpha1.QueueUnit{rackUnit("u", 1).Obj()},
			want:          seen{Waiting: map[string]string{"team/u": `pod set main asks for topology level example.com/rack, and Topology "blocks", which quota team names, does not exist`}},
		},
		"a node selection too large to place is an error on the unit": {
			quotaTopology: "racks",
			units: []*schedulingv1alpha1.QueueUnit{func() *schedulingv1alpha1.QueueUnit {
				u := rackUnit("u", 1).Obj()
				values := make([]string, 200)
				for i := range values {
					values[i] = fmt.Sprintf("%050d", i)
				}
				u.Spec.PodSets[0].Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: hostLabel, Operator: corev1.NodeSelectorOpNotIn, Values: values}}}}}}}
				return u
			}()},
			want: seen{Waiting: map[string]string{"team/u": "pod set main: its nodeSelector, required node affinity and tolerations take 10475 bytes; a pod set that asks for a topology level may have at most 8192"}},
		},
		"a malformed ask is an error on the unit, cut short": {
			quotaTopology: "racks",
			units: []*schedulingv1alpha1.QueueUnit{wrappers.MakeQueueUnit("u", "team").Quota("team").PodSet("main", 1, "cpu", "1").
				PodSetAnnotation(topology.AnnotationPodSetRequiredTopology, strings.Repeat("x", 100_000)).Obj()},
			want: seen{Waiting: map[string]string{"team/u": "pod set main: koord-queue/podset-required-topology is longer than 316 characters, the most a node label key has"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCache()
			team := wrappers.MakeElasticQuota("team", "team").Max(corev1.ResourceCPU, "100")
			if tc.quotaTopology != "" {
				team.Annotation(schedulingv1alpha1.AnnotationTopology, tc.quotaTopology)
			}
			c.UpsertElasticQuota(team.Obj())
			c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
			c.UpsertTopology(wrappers.Topology("racks", rackLabel, hostLabel))
			for _, rack := range []string{"r1", "r2"} {
				for _, host := range []string{"h1", "h2"} {
					c.UpsertNode(rackNode(rack, rack+"-"+host))
				}
			}
			for _, u := range tc.units {
				c.UpsertUnit(u)
			}
			for _, p := range tc.pods {
				c.UpsertPod(p)
			}
			res := c.cycle(time.Unix(100, 0), -1)
			got := seen{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{}, Waiting: map[string]string{}}
			for _, a := range res.Admissions {
				got.Admitted[a.Unit] = c.units[a.Unit].admission.topology
			}
			for _, u := range tc.units {
				key := u.Namespace + "/" + u.Name
				if _, ok := got.Admitted[key]; !ok && !strings.HasPrefix(u.Name, "running") {
					got.Waiting[key] = c.views.waitReason(key)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnAdmissionNotWrittenYetKeepsItsRack: a unit admitted to a rack in
// one cycle keeps the rack's room in the cycles after it while its
// admission is not written, or written and not seen back: a unit admitted
// then goes to another rack.
func TestAnAdmissionNotWrittenYetKeepsItsRack(t *testing.T) {
	c := twoRacks()
	admittedIn := func(at int64) map[string][]schedulingv1alpha1.PodSetTopologyAssignment {
		got := map[string][]schedulingv1alpha1.PodSetTopologyAssignment{}
		for _, a := range c.cycle(time.Unix(at, 0), -1).Admissions {
			got[a.Unit] = c.units[a.Unit].admission.topology
		}
		return got
	}
	c.UpsertUnit(rackUnit("first", 4).Obj())
	if diff := cmp.Diff(map[string][]schedulingv1alpha1.PodSetTopologyAssignment{"team/first": rackAssignment("r1", 4)}, admittedIn(100)); diff != "" {
		t.Fatalf("the first cycle (-want +got):\n%s", diff)
	}
	c.UpsertUnit(rackUnit("second", 4).Obj())
	if diff := cmp.Diff(map[string][]schedulingv1alpha1.PodSetTopologyAssignment{"team/second": rackAssignment("r2", 4)}, admittedIn(101)); diff != "" {
		t.Fatalf("the second cycle, the first's admission not written (-want +got):\n%s", diff)
	}
}

// TestAPlacementItsPodsCannotKeepToWaits: koord-queue-controllers keeps a
// released pod set's pods within its domains with one required node
// affinity term per domain and term of the template, and at most 64
// terms; a unit whose pods would be spread over more domains than that
// waits saying so, rather than being admitted and never released.
func TestAPlacementItsPodsCannotKeepToWaits(t *testing.T) {
	twoTerms := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"nvme"}}}}}}}}
	cases := map[string]struct {
		pods     int32
		affinity *corev1.Affinity
		// offPool: a node pool of two requirements, which the classic
		// tree's units keep off with two terms for each of theirs.
		offPool bool
		want    string // "": admitted
	}{
		"over 64 hosts":                       {pods: 128},
		"over 65 hosts":                       {pods: 130, want: "pod set main would be spread over 65 domains of `kubernetes.io/hostname`; its pods' required node affinity can keep to at most 64"},
		"over 32 hosts, two terms of its own": {pods: 64, affinity: twoTerms},
		"over 33 hosts, two terms of its own": {pods: 66, affinity: twoTerms,
			want: "pod set main would be spread over 33 domains of `kubernetes.io/hostname`; its pods' required node affinity can keep to at most 32"},
		"over 32 hosts, off a pool": {pods: 64, offPool: true},
		"over 33 hosts, off a pool": {pods: 66, offPool: true,
			want: "pod set main would be spread over 33 domains of `kubernetes.io/hostname`; its pods' required node affinity can keep to at most 32"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := racksTeam("1000")
			for h := range 70 {
				n := rackNode("r1", fmt.Sprintf("h%02d", h))
				n.Labels["disk"] = "ssd"
				c.UpsertNode(n)
			}
			if tc.offPool {
				h100 := poolProfile("h100", "h100-root", nil)
				h100.Spec.NodeSelector.MatchExpressions = []metav1.LabelSelectorRequirement{
					{Key: "gpu-health", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"bad"}}}
				c.treeCapacities.UpsertElasticQuotaProfile(h100)
				c.UpsertElasticQuota(wrappers.MakeElasticQuota("h100-root", "kube-system").IsParent().
					Label(elasticquotav1alpha1.LabelQuotaTreeID, "t2").Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").
					Annotation(elasticquotav1alpha1.AnnotationTotalResource, `{"cpu":"2"}`).Obj())
			}
			u := wrappers.MakeQueueUnit("wide", "team").Quota("team").PodSet("main", tc.pods, "cpu", "1").
				PodSetAnnotation(topology.AnnotationPodSetPreferredTopologyKueue, hostLabel).Obj()
			u.Spec.PodSets[0].Template.Spec.Affinity = tc.affinity
			c.UpsertUnit(u)
			res := c.cycle(time.Unix(100, 0), -1)
			got := c.views.waitReason("team/wide")
			if len(res.Admissions) == 1 {
				got = ""
			}
			if got != tc.want {
				t.Errorf("admitted %v, waits saying %q; want %q", res.Admissions, got, tc.want)
			}
		})
	}
}

// TestATopologyNamedAfterTheUnitsIsUsed: units asking for a rack whose
// quota's tree names no Topology wait with an error; once an ancestor, or
// the quota itself, names one, they are placed again and admitted to a
// rack, whichever quota changes.
func TestATopologyNamedAfterTheUnitsIsUsed(t *testing.T) {
	for name, annotate := range map[string]string{"the parent names it": "org", "the quota names it": "team"} {
		t.Run(name, func(t *testing.T) {
			c := NewCache()
			org := wrappers.MakeElasticQuota("org", "org").Max(corev1.ResourceCPU, "100").IsParent()
			team := wrappers.MakeElasticQuota("team", "team").Max(corev1.ResourceCPU, "100").Parent("org")
			c.UpsertElasticQuota(org.Obj())
			c.UpsertElasticQuota(team.Obj())
			c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
			c.UpsertTopology(wrappers.Topology("racks", rackLabel, hostLabel))
			for i := range 4 {
				c.UpsertNode(rackNode(fmt.Sprintf("r%d", i/2+1), fmt.Sprintf("n%d", i)))
			}
			c.UpsertUnit(rackUnit("u", 4).Obj())
			if res := c.cycle(time.Unix(100, 0), -1); len(res.Admissions) != 0 {
				t.Fatalf("admitted %v with no Topology named", res.Admissions)
			}
			want := "pod set main asks for topology level example.com/rack, and quota team names no Topology: annotate it, or an ancestor, koord-queue/topology=<topology>"
			if got := c.views.waitReason("team/u"); got != want {
				t.Fatalf("before a Topology is named, team/u waits with %q, want %q", got, want)
			}
			named := map[string]*wrappers.ElasticQuotaWrapper{"org": org, "team": team}[annotate].Obj().DeepCopy() // the Cache keeps the object it was given
			metav1.SetMetaDataAnnotation(&named.ObjectMeta, schedulingv1alpha1.AnnotationTopology, "racks")
			c.UpsertElasticQuota(named)
			res := c.cycle(time.Unix(101, 0), -1)
			if len(res.Admissions) != 1 {
				t.Fatalf("admitted %v once %s names racks, want team/u", res.Admissions, annotate)
			}
			if diff := cmp.Diff(rackAssignment("r1", 4), c.units["team/u"].admission.topology); diff != "" {
				t.Errorf("assignment (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAUnitWaitingForARackIsAdmittedWhenPodsLeaveIt: the unit that no rack
// holds is tried again when a pod leaves, with no other event.
func TestAUnitWaitingForARackIsAdmittedWhenPodsLeaveIt(t *testing.T) {
	c := racksTeam("100")
	for i := range 4 {
		c.UpsertNode(rackNode(fmt.Sprintf("r%d", i/2+1), fmt.Sprintf("n%d", i)))
	}
	c.UpsertPod(wrappers.MakePod("a", "ns").Requests("cpu", "1").Node("n0").Obj())
	c.UpsertPod(wrappers.MakePod("b", "ns").Requests("cpu", "1").Node("n2").Obj())
	c.UpsertUnit(rackUnit("u", 4).Obj())
	if res := c.cycle(time.Unix(100, 0), -1); len(res.Admissions) != 0 {
		t.Fatalf("admitted %v with 3 cpu free in each rack", res.Admissions)
	}
	c.DeletePod("ns", "b")
	res := c.cycle(time.Unix(101, 0), -1)
	if len(res.Admissions) != 1 {
		t.Fatalf("admitted %v once rack r2 is free, want team/u", res.Admissions)
	}
	if diff := cmp.Diff(rackAssignment("r2", 4), c.units["team/u"].admission.topology); diff != "" {
		t.Errorf("assignment (-want +got):\n%s", diff)
	}
	// The visibility API shows it while the admission is written.
	v, ok := c.QueueUnit("team", "u")
	if !ok {
		t.Fatal("team/u not in the visibility API")
	}
	if diff := cmp.Diff(rackAssignment("r2", 4), v.TopologyAssignments); diff != "" {
		t.Errorf("visibility API's assignment (-want +got):\n%s", diff)
	}
}

// TestARackFollowsItsNodesAndTheirPods: once a tree is built, a node that
// joins a rack brings the room its pods already hold, a cordoned node
// leaves its rack, and one uncordoned comes back with what its pods hold:
// the tree and what the pods hold are changed as the nodes are, not read
// afresh, and say the same.
func TestARackFollowsItsNodesAndTheirPods(t *testing.T) {
	c := twoRacks()
	spare := wrappers.Node("spare", "96", "8Gi") // in no rack: the cluster's room is not what the unit waits for
	c.UpsertNode(spare)
	c.UpsertPod(wrappers.MakePod("early", "ns").Requests("cpu", "2").Node("r2-h3").Obj()) // on a node not known yet
	c.UpsertPod(wrappers.MakePod("held", "ns").Requests("cpu", "1").Node("r1-h1").Obj())
	c.UpsertUnit(rackUnit("u", 6).Obj())
	waits := func(step string, now int64, want string) {
		t.Helper()
		if res := c.cycle(time.Unix(now, 0), -1); len(res.Admissions) != 0 {
			t.Fatalf("%s: admitted %v", step, res.Admissions)
		}
		if got := c.views.waitReason("team/u"); got != want {
			t.Errorf("%s: team/u waits: %q, want %q", step, got, want)
		}
	}
	waits("four hosts", 100, "needs 6 × 1 cpu within one `example.com/rack`; the largest free one has 4")
	c.UpsertNode(rackNode("r2", "r2-h3"))
	waits("r2-h3 joins, its 2 cpu held", 101, "needs 6 × 1 cpu within one `example.com/rack`; the largest free one has 4")
	cordoned := rackNode("r2", "r2-h1")
	cordoned.Spec.Unschedulable = true
	c.UpsertNode(cordoned)
	waits("r2-h1 cordoned", 102, "needs 6 × 1 cpu within one `example.com/rack`; the largest free one has 3")
	c.UpsertNode(rackNode("r3", "r3-h1"))
	c.UpsertNode(rackNode("r3", "r3-h2"))
	cordoned = rackNode("r1", "r1-h1")
	cordoned.Spec.Unschedulable = true
	c.UpsertNode(cordoned)
	waits("rack r3 of two hosts, r1-h1 cordoned", 103, "needs 6 × 1 cpu within one `example.com/rack`; the largest free one has 4")
	c.UpsertNode(rackNode("r1", "r1-h1"))
	c.UpsertNode(rackNode("r1", "r1-h3"))
	waits("r1-h1 back with its pod, r1-h3 joins", 104, "needs 6 × 1 cpu within one `example.com/rack`; the largest free one has 5")
}

// TestAUnitAskingForARackKeepsToTheNodesItsPodsCanUse: a unit asking for
// a rack is admitted only to a rack whose nodes its pods select and
// tolerate; untainting a rack admits the unit that waited for it.
func TestAUnitAskingForARackKeepsToTheNodesItsPodsCanUse(t *testing.T) {
	c := racksTeam("100")
	// Racks r1 and r2 of two 2-cpu hosts: r1's of model a, r2's of model
	// b and tainted for training.
	node := func(rack, name, model string, tainted bool) *corev1.Node {
		n := rackNode(rack, name)
		n.Labels["example.com/model"] = model
		if tainted {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "train", Effect: corev1.TaintEffectNoSchedule}}
		}
		return n
	}
	for _, h := range []string{"h1", "h2"} {
		c.UpsertNode(node("r1", "r1-"+h, "a", false))
		c.UpsertNode(node("r2", "r2-"+h, "b", true))
	}
	modelB := rackUnit("model-b", 3).Obj()
	modelB.Spec.PodSets[0].Template.Spec.NodeSelector = map[string]string{"example.com/model": "b"}
	c.UpsertUnit(modelB)
	if res := c.cycle(time.Unix(100, 0), -1); len(res.Admissions) != 0 {
		t.Fatalf("admitted %v: the only rack of model b is tainted", res.Admissions)
	}
	if got, want := c.views.waitReason("team/model-b"), "needs 3 × 1 cpu within one `example.com/rack` of the nodes its pods can use; the largest free one has 0"; got != want {
		t.Errorf("team/model-b waits: %q, want %q", got, want)
	}
	anywhere := rackUnit("anywhere", 3).Obj()
	anywhere.CreationTimestamp = metav1.NewTime(time.Unix(5, 0))
	c.UpsertUnit(anywhere)
	res := c.cycle(time.Unix(101, 0), -1)
	if len(res.Admissions) != 1 || res.Admissions[0].Unit != "team/anywhere" {
		t.Fatalf("admitted %v, want team/anywhere alone", res.Admissions)
	}
	if diff := cmp.Diff(rackAssignment("r1", 3), c.units["team/anywhere"].admission.topology); diff != "" {
		t.Errorf("team/anywhere, which tolerates no taint (-want +got):\n%s", diff)
	}
	for _, h := range []string{"h1", "h2"} {
		c.UpsertNode(node("r2", "r2-"+h, "b", false))
	}
	res = c.cycle(time.Unix(102, 0), -1)
	if len(res.Admissions) != 1 || res.Admissions[0].Unit != "team/model-b" {
		t.Fatalf("admitted %v once rack r2 is untainted, want team/model-b", res.Admissions)
	}
	if diff := cmp.Diff(rackAssignment("r2", 3), c.units["team/model-b"].admission.topology); diff != "" {
		t.Errorf("team/model-b (-want +got):\n%s", diff)
	}
}

// TestPreemptionEvictsOnlyWhenItFreesARack: on two racks of two 4-cpu
// hosts, high (8 pods asking for a rack) finds, for quota, both
// lower-priority units of its quota as victims, each holding 4 cpu of a
// different rack. It evicts them only when their going frees one rack
// whole: their pods on nodes (the pod ledger) and their pods admitted to
// a rack and not on a node yet (assumed) are given back, the other pods
// of the racks are not.
func TestPreemptionEvictsOnlyWhenItFreesARack(t *testing.T) {
	onNodes := func(unit, host string) []*corev1.Pod {
		var pods []*corev1.Pod
		for i := range 4 {
			pods = append(pods, wrappers.MakePod(fmt.Sprintf("%s-%d", unit, i), "team").OfUnit(unit, "main").Requests("cpu", "1").Node(host).Obj())
		}
		return pods
	}
	other := func(host string) *corev1.Pod {
		return wrappers.MakePod("other-"+host, "ns").Requests("cpu", "4").Node(host).Obj()
	}
	const futile = "evicting 2 unit(s) would free no `example.com/rack` with room for 8 × 1 cpu (the largest would have room for 4)"
	cases := map[string]struct {
		pods        []*corev1.Pod
		wantVictims []string
		wantWait    string
	}{
		"victims on nodes of both racks, beside other pods: nobody is evicted": {
			pods:     append(append(onNodes("low-1", "r1-h1"), onNodes("low-2", "r2-h1")...), other("r1-h2"), other("r2-h2")),
			wantWait: futile,
		},
		"victims admitted to both racks, not on nodes yet: nobody is evicted": {
			pods:     []*corev1.Pod{other("r1-h2"), other("r2-h2")},
			wantWait: futile,
		},
		"victims whose going frees rack r1 are evicted": {
			pods:        append(append(onNodes("low-1", "r1-h1"), onNodes("low-2", "r2-h1")...), other("r2-h2")),
			wantVictims: []string{"team/low-1", "team/low-2"},
		},
		"victims admitted to r1, not on nodes yet, free it too": {
			pods:        append(onNodes("low-2", "r2-h1"), other("r2-h2")),
			wantVictims: []string{"team/low-1", "team/low-2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCache()
			c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "team").Max(corev1.ResourceCPU, "8").
				Annotation(schedulingv1alpha1.AnnotationTopology, "racks").Obj())
			c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team",
				Annotations: map[string]string{schedulingv1alpha1.AnnotationEnableQueueUnitPreemption: "true", policy.AnnotationPreemptRunning: "true"}}})
			c.UpsertTopology(wrappers.Topology("racks", rackLabel, hostLabel))
			for _, rack := range []string{"r1", "r2"} {
				for _, host := range []string{"h1", "h2"} {
					n := wrappers.Node(rack+"-"+host, "4", "16Gi")
					n.Labels = map[string]string{rackLabel: rack, hostLabel: n.Name}
					c.UpsertNode(n)
				}
			}
			for i, rack := range []string{"r1", "r2"} {
				low := rackUnit(fmt.Sprintf("low-%d", i+1), 4).Priority(1).Phase(schedulingv1alpha1.Running).Admission("main", 4).Obj()
				low.Status.TopologyAssignments = rackAssignment(rack, 4)
				c.UpsertUnit(low)
			}
			high := rackUnit("high", 8).Priority(10).Obj()
			high.CreationTimestamp = metav1.NewTime(time.Unix(5, 0))
			c.UpsertUnit(high)
			for _, p := range tc.pods {
				c.UpsertPod(p)
			}
			now := time.Unix(100, 0)
			var victims []string
			for _, at := range []time.Time{now, now.Add(policy.DefaultPreemptionDelay)} {
				res := c.cycle(at, -1)
				if len(res.Admissions) != 0 {
					t.Fatalf("admitted %v", res.Admissions)
				}
				for _, p := range res.Preemptions {
					victims = append(victims, p.Victims...)
				}
			}
			slices.Sort(victims)
			if diff := cmp.Diff(tc.wantVictims, victims); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
			if tc.wantWait != "" {
				if diff := cmp.Diff(tc.wantWait, c.views.waitReason("team/high")); diff != "" {
					t.Errorf("wait reason (-want +got):\n%s", diff)
				}
			}
		})
	}
}
