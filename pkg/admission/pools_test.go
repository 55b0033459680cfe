package admission

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// nodeInPool is a Ready node of pool with cpu allocatable.
func nodeInPool(name, pool, cpu string) *corev1.Node {
	n := wrappers.Node(name, cpu, "64Gi")
	n.Labels = map[string]string{"pool": pool}
	return n
}

// poolProfile is an ElasticQuotaProfile choosing the nodes of pool for the
// tree rooted at quota root in namespace kube-system.
func poolProfile(pool, root string, ratio *string) *quotav1alpha1.ElasticQuotaProfile {
	return &quotav1alpha1.ElasticQuotaProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: pool},
		Spec: quotav1alpha1.ElasticQuotaProfileSpec{QuotaName: root, ResourceRatio: ratio,
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}}},
	}
}

// TestTreeCapacityFromProfiles: with ComputeTreeCapacity on, a quota tree's
// root (no koord-manager writing its total-resource annotation) offers what
// its ElasticQuotaProfile's nodes offer, times the ratio, less the cordoned
// and NotReady ones, and follows nodes coming and going; with it off, the
// annotation stays in charge.
func TestTreeCapacityFromProfiles(t *testing.T) {
	type seen struct {
		Capacity string
		Admitted int
		Error    bool
	}
	cordon := func(n *corev1.Node) *corev1.Node {
		n = n.DeepCopy()
		n.Spec.Unschedulable = true
		return n
	}
	cases := map[string]struct {
		compute    bool
		annotation string
		profile    *quotav1alpha1.ElasticQuotaProfile
		nodes      []*corev1.Node
		// change happens after a first cycle; want is seen after a second.
		change       func(c *Cache)
		before, want seen
	}{
		"capacity from the profile's nodes times its ratio": {
			compute: true,
			profile: poolProfile("a100", "a100", ptr.To("0.5")),
			nodes:   []*corev1.Node{nodeInPool("n1", "a100", "8"), nodeInPool("n2", "a100", "8"), nodeInPool("n3", "other", "32")},
			before:  seen{Capacity: "8", Admitted: 1},
			want:    seen{Capacity: "8"},
		},
		"a node joining the pool admits a waiting unit": {
			compute: true,
			profile: poolProfile("a100", "a100", nil),
			nodes:   []*corev1.Node{nodeInPool("n1", "a100", "4"), nodeInPool("n3", "other", "32")},
			change:  func(c *Cache) { c.UpsertNode(nodeInPool("n2", "a100", "4")) },
			before:  seen{Capacity: "4"},
			want:    seen{Capacity: "8", Admitted: 1},
		},
		"a node relabelled into the pool admits a waiting unit": {
			compute: true,
			profile: poolProfile("a100", "a100", nil),
			nodes:   []*corev1.Node{nodeInPool("n1", "a100", "4"), nodeInPool("n2", "other", "4")},
			change:  func(c *Cache) { c.UpsertNode(nodeInPool("n2", "a100", "4")) },
			before:  seen{Capacity: "4"},
			want:    seen{Capacity: "8", Admitted: 1},
		},
		"a cordoned node shrinks the tree": {
			compute: true,
			profile: poolProfile("a100", "a100", nil),
			nodes:   []*corev1.Node{nodeInPool("n1", "a100", "4"), nodeInPool("n2", "a100", "4")},
			change:  func(c *Cache) { c.UpsertNode(cordon(nodeInPool("n2", "a100", "4"))) },
			before:  seen{Capacity: "8", Admitted: 1},
			want:    seen{Capacity: "4"},
		},
		"a deleted node shrinks the tree": {
			compute: true,
			profile: poolProfile("a100", "a100", nil),
			nodes:   []*corev1.Node{nodeInPool("n1", "a100", "4"), nodeInPool("n2", "a100", "4")},
			change:  func(c *Cache) { c.DeleteNode("n2") },
			before:  seen{Capacity: "8", Admitted: 1},
			want:    seen{Capacity: "4"},
		},
		"flag off: the annotation is in charge": {
			annotation: `{"cpu":"2"}`,
			profile:    poolProfile("a100", "a100", nil),
			nodes:      []*corev1.Node{nodeInPool("n1", "a100", "8")},
			change:     func(c *Cache) { c.UpsertNode(nodeInPool("n2", "a100", "8")) },
			before:     seen{Capacity: "2"},
			want:       seen{Capacity: "2"},
		},
		"flag on: the profile overrides the annotation": {
			compute:    true,
			annotation: `{"cpu":"2"}`,
			profile:    poolProfile("a100", "a100", nil),
			nodes:      []*corev1.Node{nodeInPool("n1", "a100", "8")},
			before:     seen{Capacity: "8", Admitted: 1},
			want:       seen{Capacity: "8"},
		},
		"a profile of another namespace does not set the root": {
			compute: true,
			profile: func() *quotav1alpha1.ElasticQuotaProfile {
				p := poolProfile("a100", "a100", nil)
				p.Namespace = "elsewhere"
				return p
			}(),
			nodes:  []*corev1.Node{nodeInPool("n1", "a100", "8")},
			before: seen{Capacity: "0", Error: true},
			want:   seen{Capacity: "0", Error: true},
		},
		"an invalid selector is said on the root, whose tree admits nothing": {
			compute: true,
			profile: func() *quotav1alpha1.ElasticQuotaProfile {
				p := poolProfile("a100", "a100", nil)
				p.Spec.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Near"}}}
				return p
			}(),
			nodes:  []*corev1.Node{nodeInPool("n1", "a100", "8")},
			before: seen{Capacity: "0", Error: true},
			want:   seen{Capacity: "0", Error: true},
		},
		"a profile deleted: the tree admits nothing": {
			compute: true,
			profile: poolProfile("a100", "a100", nil),
			nodes:   []*corev1.Node{nodeInPool("n1", "a100", "8")},
			change:  func(c *Cache) { c.treeCapacities.DeleteElasticQuotaProfile("kube-system", "a100") },
			before:  seen{Capacity: "8", Admitted: 1},
			want:    seen{Capacity: "0", Error: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCache()
			c.treeCapacities.computeTrees = tc.compute
			root := wrappers.MakeElasticQuota("a100", "kube-system").IsParent().
				Label(elasticquotav1alpha1.LabelQuotaTreeID, "t-a100").Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true")
			if tc.annotation != "" {
				root.Annotation(elasticquotav1alpha1.AnnotationTotalResource, tc.annotation)
			}
			c.UpsertElasticQuota(root.Obj())
			c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "team").Parent("a100").
				Label(elasticquotav1alpha1.LabelQuotaTreeID, "t-a100").Max(corev1.ResourceCPU, "100").Obj())
			c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
			c.treeCapacities.UpsertElasticQuotaProfile(tc.profile)
			for _, n := range tc.nodes {
				c.UpsertNode(n)
			}
			c.UpsertUnit(wrappers.MakeQueueUnit("u", "team").Quota("team").Request(corev1.ResourceCPU, "6").Obj())
			look := func(at int64) seen {
				res := c.cycle(time.Unix(at, 0), -1)
				v := c.views.quotaView("a100")
				return seen{Capacity: v.Capacity.Cpu().String(), Admitted: len(res.Admissions), Error: v.Error != ""}
			}
			if diff := cmp.Diff(tc.before, look(10)); diff != "" {
				t.Errorf("before (-want +got):\n%s", diff)
			}
			if tc.change != nil {
				if tc.before.Admitted > 0 {
					// Undo the admission: the unit waits again.
					c.mu.Lock()
					c.decisions.forgetUnwritten()
					c.mu.Unlock()
				}
				tc.change(c)
			}
			if diff := cmp.Diff(tc.want, look(200)); diff != "" {
				t.Errorf("after the change (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNodeBeingDeletedCountsNowhere: a node with a deletion timestamp (held
// by a finalizer, say) offers nothing, neither to its pool's tree nor to the
// cluster, whose classic tree is the cluster less the pools.
func TestNodeBeingDeletedCountsNowhere(t *testing.T) {
	type seen struct{ Pool, Classic string }
	deleting := func(n *corev1.Node) *corev1.Node {
		n.DeletionTimestamp = &metav1.Time{Time: time.Unix(100, 0)}
		return n
	}
	cases := map[string]struct {
		compute bool
		deleted *corev1.Node
		want    seen
	}{
		"a node of a pool": {
			compute: true,
			deleted: deleting(nodeInPool("n2", "a100", "4")),
			want:    seen{Pool: "4", Classic: "16"},
		},
		"a node of no pool": {
			compute: true,
			deleted: deleting(nodeInPool("n3", "other", "16")),
			want:    seen{Pool: "8", Classic: "0"},
		},
		"capacities not computed: a node of the cluster": {
			deleted: deleting(nodeInPool("n3", "other", "16")),
			want:    seen{Classic: "8"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCache()
			c.treeCapacities.computeTrees = tc.compute
			c.UpsertElasticQuota(wrappers.MakeElasticQuota("a100", "kube-system").IsParent().
				Label(elasticquotav1alpha1.LabelQuotaTreeID, "t-a100").Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").Obj())
			c.treeCapacities.UpsertElasticQuotaProfile(poolProfile("a100", "a100", nil))
			for _, n := range []*corev1.Node{nodeInPool("n1", "a100", "4"), nodeInPool("n2", "a100", "4"), nodeInPool("n3", "other", "16")} {
				c.UpsertNode(n)
			}
			c.UpsertNode(tc.deleted)
			c.mu.Lock()
			e := c.core.Quotas()
			pool, classic := e.Capacity("a100"), e.Capacity(elasticquotav1alpha1.RootQuotaName)
			got := seen{Pool: pool.Cpu().String(), Classic: classic.Cpu().String()}
			c.mu.Unlock()
			if !tc.compute {
				got.Pool = ""
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("capacities (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDuplicateProfilesOneRule: of two ElasticQuotaProfiles naming one tree
// root, the tree's capacity is that of the one pool.ProfileOf chooses (the
// one the root's profile label names, else the oldest), as
// koord-queue-controllers chooses the pool's node affinity, and the other
// is said to be ignored.
func TestDuplicateProfilesOneRule(t *testing.T) {
	profile := func(name string, created int64) *quotav1alpha1.ElasticQuotaProfile {
		p := poolProfile(name, "a100", nil)
		p.CreationTimestamp = metav1.NewTime(time.Unix(created, 0))
		return p
	}
	type seen struct {
		Capacity string
		Ignored  string
	}
	cases := map[string]struct {
		label string
		want  seen
	}{
		"the oldest, though its name sorts last": {want: seen{Capacity: "8", Ignored: "kube-system/a"}},
		"the one the root's label names":         {label: "a", want: seen{Capacity: "4", Ignored: "kube-system/b"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCache()
			c.treeCapacities.computeTrees = true
			c.treeCapacities.UpsertElasticQuotaProfile(profile("b", 10)) // pool b: 8 CPU
			c.UpsertNode(nodeInPool("nb", "b", "8"))
			c.UpsertNode(nodeInPool("na", "a", "4"))
			c.treeCapacities.UpsertElasticQuotaProfile(profile("a", 20)) // pool a: 4 CPU
			root := wrappers.MakeElasticQuota("a100", "kube-system").IsParent().
				Label(elasticquotav1alpha1.LabelQuotaTreeID, "t-a100").Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true")
			if tc.label != "" {
				root.Label(elasticquotav1alpha1.LabelQuotaProfile, tc.label)
			}
			c.UpsertElasticQuota(root.Obj())
			c.mu.Lock()
			v := c.views.quotaView("a100")
			c.mu.Unlock()
			got := seen{Capacity: v.Capacity.Cpu().String()}
			if _, after, ok := strings.Cut(v.Error, "ElasticQuotaProfile "); ok {
				got.Ignored, _, _ = strings.Cut(after, " ")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tree a100 (-want +got):\n%s\nerror: %s", diff, v.Error)
			}
		})
	}
}
