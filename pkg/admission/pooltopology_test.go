package admission

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/topology"
)

// poolRackNode is a node of cpu on host name of rack, in node pool pool
// ("": none).
func poolRackNode(rack, name, cpu, pool string) *corev1.Node {
	n := wrappers.Node(name, cpu, "8Gi")
	n.Labels = map[string]string{rackLabel: rack, hostLabel: name}
	if pool != "" {
		n.Labels["pool"] = pool
	}
	return n
}

// poolRackUnit is a unit of quota of pods × 1 cpu asking for a rack as
// required.
func poolRackUnit(name, quota string, pods int32) *schedulingv1alpha1.QueueUnit {
	return wrappers.MakeQueueUnit(name, "team").Quota(quota).PodSet("main", pods, "cpu", "1").
		PodSetAnnotation(topology.AnnotationPodSetRequiredTopologyKueue, rackLabel).Obj()
}

// pooledRacks is a Cache of three racks of two hosts: r1's of 2 cpu in
// node pool a100, r2's of 4 cpu in pool h100, r3's of 4 cpu in no pool.
// Quota gpu-team is of the tree of root a100-root (total 4 cpu), quota
// team of the classic tree (the cluster's 20 cpu less the trees' 6);
// h100-root's tree (total 2 cpu) has no quota of its own. With profiles,
// ElasticQuotaProfiles a100 and h100 choose their pools' nodes for those
// roots, and profile a100 is annotated koord-queue/topology=
// profileTopology ("": not); the quotas gpu-team and team are annotated
// quotaTopology ("": not).
func pooledRacks(profiles bool, quotaTopology, profileTopology string) *Cache {
	c := NewCache()
	root := func(name, tree, total string) *elasticquotav1alpha1.ElasticQuota {
		return wrappers.MakeElasticQuota(name, "kube-system").IsParent().
			Label(elasticquotav1alpha1.LabelQuotaTreeID, tree).Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").
			Annotation(elasticquotav1alpha1.AnnotationTotalResource, `{"cpu":"`+total+`"}`).Obj()
	}
	c.UpsertElasticQuota(root("a100-root", "t1", "4"))
	c.UpsertElasticQuota(root("h100-root", "t2", "2"))
	gpuTeam := wrappers.MakeElasticQuota("gpu-team", "team").Parent("a100-root").
		Label(elasticquotav1alpha1.LabelQuotaTreeID, "t1").Max(corev1.ResourceCPU, "100")
	team := wrappers.MakeElasticQuota("team", "team").Max(corev1.ResourceCPU, "100")
	if quotaTopology != "" {
		gpuTeam.Annotation(schedulingv1alpha1.AnnotationTopology, quotaTopology)
		team.Annotation(schedulingv1alpha1.AnnotationTopology, quotaTopology)
	}
	c.UpsertElasticQuota(gpuTeam.Obj())
	c.UpsertElasticQuota(team.Obj())
	for _, q := range []string{"gpu-team", "team"} {
		c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: q}})
	}
	if profiles {
		a100 := poolProfile("a100", "a100-root", nil)
		if profileTopology != "" {
			a100.Annotations = map[string]string{schedulingv1alpha1.AnnotationTopology: profileTopology}
		}
		c.treeCapacities.UpsertElasticQuotaProfile(a100)
		c.treeCapacities.UpsertElasticQuotaProfile(poolProfile("h100", "h100-root", nil))
	}
	c.UpsertTopology(wrappers.Topology("racks", rackLabel, hostLabel))
	for _, h := range []string{"h1", "h2"} {
		c.UpsertNode(poolRackNode("r1", "r1-"+h, "2", "a100"))
		c.UpsertNode(poolRackNode("r2", "r2-"+h, "4", "h100"))
		c.UpsertNode(poolRackNode("r3", "r3-"+h, "4", ""))
	}
	return c
}

// placedOrWaiting is what a cycle at now decided of units: the rack
// each admitted one goes to, and why each other waits.
type placedOrWaiting struct {
	Admitted map[string][]schedulingv1alpha1.PodSetTopologyAssignment
	Waiting  map[string]string
}

func cycleOf(c *Cache, now int64, units []*schedulingv1alpha1.QueueUnit) placedOrWaiting {
	res := c.cycle(time.Unix(now, 0), -1)
	got := placedOrWaiting{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{}, Waiting: map[string]string{}}
	for _, a := range res.Admissions {
		got.Admitted[a.Unit] = c.units[a.Unit].admission.topology
	}
	for _, u := range units {
		key := u.Namespace + "/" + u.Name
		if _, ok := got.Admitted[key]; !ok {
			got.Waiting[key] = c.views.waitReason(key)
		}
	}
	return got
}

// TestAUnitAskingForARackCountsOnlyItsNodePool: a unit asking for a rack
// counts only the nodes its pods will be let onto at release, as
// koord-queue-controllers places them (pool.PlacementOf): a unit of a
// pool's tree its pool's, a unit of the classic tree those outside every
// pool. Without ElasticQuotaProfiles (no CRD) every node counts, as
// before pools.
func TestAUnitAskingForARackCountsOnlyItsNodePool(t *testing.T) {
	// other holds 1 cpu of rack r1 (pool a100), others 4 of rack r3 (no pool).
	other := wrappers.MakePod("other", "ns").Requests("cpu", "1").Node("r1-h1").Obj()
	others := wrappers.MakePod("others", "ns").Requests("cpu", "4").Node("r3-h1").Obj()
	cases := map[string]struct {
		noProfiles bool
		pods       []*corev1.Pod
		units      []*schedulingv1alpha1.QueueUnit
		want       placedOrWaiting
	}{
		"a unit of a pool's tree waits when only another pool's rack has room, counting its pool's nodes": {
			pods:  []*corev1.Pod{other},
			units: []*schedulingv1alpha1.QueueUnit{poolRackUnit("u", "gpu-team", 4)},
			want: placedOrWaiting{Waiting: map[string]string{
				"team/u": "needs 4 × 1 cpu within one `example.com/rack` of the nodes its pods can use; the largest free one has 3"}},
		},
		"a unit of a pool's tree that its pool's rack holds goes there": {
			pods:  []*corev1.Pod{other},
			units: []*schedulingv1alpha1.QueueUnit{poolRackUnit("u", "gpu-team", 3)},
			want:  placedOrWaiting{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{"team/u": rackAssignment("r1", 3)}},
		},
		"a unit of the classic tree does not count the pools' nodes": {
			pods:  []*corev1.Pod{others},
			units: []*schedulingv1alpha1.QueueUnit{poolRackUnit("u", "team", 5)},
			want: placedOrWaiting{Waiting: map[string]string{
				"team/u": "needs 5 × 1 cpu within one `example.com/rack` of the nodes its pods can use; the largest free one has 4"}},
		},
		"a unit of the classic tree goes to the rack outside the pools, not to a pool's with less to spare": {
			pods:  []*corev1.Pod{others},
			units: []*schedulingv1alpha1.QueueUnit{poolRackUnit("u", "team", 4)},
			want:  placedOrWaiting{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{"team/u": rackAssignment("r3", 4)}},
		},
		"without profiles a unit of a tree counts every node, as before pools": {
			noProfiles: true,
			pods:       []*corev1.Pod{other},
			units:      []*schedulingv1alpha1.QueueUnit{poolRackUnit("u", "gpu-team", 4)},
			want:       placedOrWaiting{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{"team/u": rackAssignment("r2", 4)}},
		},
		"without profiles a unit of the classic tree counts every node, as before pools": {
			noProfiles: true,
			pods:       []*corev1.Pod{others},
			units:      []*schedulingv1alpha1.QueueUnit{poolRackUnit("u", "team", 4)},
			want:       placedOrWaiting{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{"team/u": rackAssignment("r1", 4)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := pooledRacks(!tc.noProfiles, "racks", "")
			for _, p := range tc.pods {
				c.UpsertPod(p)
			}
			for _, u := range tc.units {
				c.UpsertUnit(u)
			}
			if diff := cmp.Diff(tc.want, cycleOf(c, 100, tc.units), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestTheTreesProfileNamesTheTopology: when neither a unit's quota nor an
// ancestor names a Topology, the ElasticQuotaProfile of its tree's root
// (pool.ProfileOf's) does; a quota's annotation wins over it. The classic
// tree has no profile.
func TestTheTreesProfileNamesTheTopology(t *testing.T) {
	cases := map[string]struct {
		quotaTopology, profileTopology string
		units                          []*schedulingv1alpha1.QueueUnit
		want                           placedOrWaiting
	}{
		"the profile names the Topology of its tree's units": {
			profileTopology: "racks",
			units:           []*schedulingv1alpha1.QueueUnit{poolRackUnit("u", "gpu-team", 3)},
			want:            placedOrWaiting{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{"team/u": rackAssignment("r1", 3)}},
		},
		"a quota's annotation wins over the profile's": {
			quotaTopology: "racks", profileTopology: "blocks",
			units: []*schedulingv1alpha1.QueueUnit{poolRackUnit("u", "gpu-team", 3)},
			want:  placedOrWaiting{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{"team/u": rackAssignment("r1", 3)}},
		},
		"a Topology the profile names and that does not exist is said on the unit": {
			profileTopology: "blocks",
			units:           []*schedulingv1alpha1.QueueUnit{poolRackUnit("u", "gpu-team", 3)},
			want: placedOrWaiting{Waiting: map[string]string{
				"team/u": `pod set main asks for topology level example.com/rack, and Topology "blocks", which ElasticQuotaProfile kube-system/a100 names, does not exist`}},
		},
		"a unit of the classic tree takes no profile's Topology": {
			profileTopology: "racks",
			units:           []*schedulingv1alpha1.QueueUnit{poolRackUnit("u", "team", 3)},
			want: placedOrWaiting{Waiting: map[string]string{
				"team/u": "pod set main asks for topology level example.com/rack, and quota team names no Topology: annotate it, or an ancestor, koord-queue/topology=<topology>"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := pooledRacks(true, tc.quotaTopology, tc.profileTopology)
			for _, u := range tc.units {
				c.UpsertUnit(u)
			}
			if diff := cmp.Diff(tc.want, cycleOf(c, 100, tc.units), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAProfileOrNodeChangePlacesAskersAgain: a unit waiting for its
// tree's Topology or pool is decided again when a profile or a node
// changes, with no change of its own.
func TestAProfileOrNodeChangePlacesAskersAgain(t *testing.T) {
	a100 := func(topologyName string, pool string) *quotav1alpha1.ElasticQuotaProfile {
		p := poolProfile(pool, "a100-root", nil)
		p.Name = "a100"
		if topologyName != "" {
			p.Annotations = map[string]string{schedulingv1alpha1.AnnotationTopology: topologyName}
		}
		return p
	}
	cases := map[string]struct {
		quotaTopology string
		pods          int32
		change        func(c *Cache)
		before        string // why team/u waits
		rack          string // where it then goes
	}{
		"the profile comes to name a Topology": {
			pods:   3,
			change: func(c *Cache) { c.treeCapacities.UpsertElasticQuotaProfile(a100("racks", "a100")) },
			before: "pod set main asks for topology level example.com/rack, and quota gpu-team names no Topology: annotate it, an ancestor, or its tree's ElasticQuotaProfile kube-system/a100, koord-queue/topology=<topology>",
			rack:   "r1",
		},
		"the tree's root comes to choose another profile, which names a Topology": {
			pods: 3,
			change: func(c *Cache) {
				p := a100("racks", "a100")
				p.Name = "a100-racks"
				c.treeCapacities.UpsertElasticQuotaProfile(p) // not chosen yet: a100 comes first by name
				c.UpsertElasticQuota(wrappers.MakeElasticQuota("a100-root", "kube-system").IsParent().
					Label(elasticquotav1alpha1.LabelQuotaTreeID, "t1").Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").
					Label(elasticquotav1alpha1.LabelQuotaProfile, "a100-racks").
					Annotation(elasticquotav1alpha1.AnnotationTotalResource, `{"cpu":"4"}`).Obj())
			},
			before: "pod set main asks for topology level example.com/rack, and quota gpu-team names no Topology: annotate it, an ancestor, or its tree's ElasticQuotaProfile kube-system/a100, koord-queue/topology=<topology>",
			rack:   "r1",
		},
		"the profile's pool moves to a rack with room": {
			quotaTopology: "racks", pods: 4,
			change: func(c *Cache) { c.treeCapacities.UpsertElasticQuotaProfile(a100("", "h100")) },
			before: "needs 4 × 1 cpu within one `example.com/rack` of the nodes its pods can use; the largest free one has 3",
			rack:   "r2",
		},
		"the nodes of a rack with room join the pool": {
			quotaTopology: "racks", pods: 4,
			change: func(c *Cache) {
				for _, h := range []string{"h1", "h2"} {
					c.UpsertNode(poolRackNode("r3", "r3-"+h, "4", "a100"))
				}
			},
			before: "needs 4 × 1 cpu within one `example.com/rack` of the nodes its pods can use; the largest free one has 3",
			rack:   "r3",
		},
		"the profile is deleted: its tree has no pool": {
			quotaTopology: "racks", pods: 4,
			change: func(c *Cache) { c.treeCapacities.DeleteElasticQuotaProfile("kube-system", "a100") },
			before: "needs 4 × 1 cpu within one `example.com/rack` of the nodes its pods can use; the largest free one has 3",
			rack:   "r2",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := pooledRacks(true, tc.quotaTopology, "")
			c.UpsertPod(wrappers.MakePod("other", "ns").Requests("cpu", "1").Node("r1-h1").Obj())
			u := poolRackUnit("u", "gpu-team", tc.pods)
			c.UpsertUnit(u)
			if diff := cmp.Diff(placedOrWaiting{Waiting: map[string]string{"team/u": tc.before}}, cycleOf(c, 100, []*schedulingv1alpha1.QueueUnit{u}), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("before (-want +got):\n%s", diff)
			}
			tc.change(c)
			want := placedOrWaiting{Admitted: map[string][]schedulingv1alpha1.PodSetTopologyAssignment{"team/u": rackAssignment(tc.rack, tc.pods)}}
			if diff := cmp.Diff(want, cycleOf(c, 101, []*schedulingv1alpha1.QueueUnit{u}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("after the change (-want +got):\n%s", diff)
			}
		})
	}
}
