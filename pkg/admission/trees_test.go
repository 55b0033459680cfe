package admission

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestQueueViewShowsItsTree: a queue's view names its quota's tree and
// pool (the root's ElasticQuotaProfile where known: the profile label
// koord-manager puts on the root, or the profile naming the root when
// koord-queue computes capacities; else the tree id; none for the classic
// tree) with the root's capacity and use, and a unit waiting for room in
// a full tree is told the tree and the pool.
func TestQueueViewShowsItsTree(t *testing.T) {
	type seen struct {
		ID, Pool, Root, Capacity, Used string
		Reason                         string
	}
	cases := map[string]struct {
		classic bool
		compute bool
		profile string // label on the root
		want    seen
	}{
		"a queue of the classic tree": {
			classic: true,
			want:    seen{Root: elasticquotav1alpha1.RootQuotaName, Capacity: "32", Used: "6", Reason: "cluster: cpu 6 used of capacity 32, request 30"},
		},
		"the pool koord-manager labelled the root with": {
			profile: "gpu-a100",
			want: seen{ID: "t1", Pool: "gpu-a100", Root: "a100", Capacity: "8", Used: "6",
				Reason: "a100 (root of quota tree t1, pool gpu-a100): cpu 6 used of capacity 8, request 4"},
		},
		"no profile known: the tree id": {
			want: seen{ID: "t1", Pool: "t1", Root: "a100", Capacity: "8", Used: "6",
				Reason: "a100 (root of quota tree t1): cpu 6 used of capacity 8, request 4"},
		},
		"capacity computed: the profile naming the root": {
			compute: true,
			want: seen{ID: "t1", Pool: "a100-nodes", Root: "a100", Capacity: "8", Used: "6",
				Reason: "a100 (root of quota tree t1, pool a100-nodes): cpu 6 used of capacity 8, request 4"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCache()
			c.treeCapacities.computeTrees = tc.compute
			c.UpsertNode(wrappers.Node("n0", "32", "64Gi"))
			team := wrappers.MakeElasticQuota("team", "team").Max(corev1.ResourceCPU, "100")
			request := "4"
			if tc.classic {
				request = "30"
			} else {
				root := wrappers.MakeElasticQuota("a100", "kube-system").IsParent().
					Label(elasticquotav1alpha1.LabelQuotaTreeID, "t1").Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true")
				if !tc.compute {
					root.Annotation(elasticquotav1alpha1.AnnotationTotalResource, `{"cpu":"8"}`)
				}
				if tc.profile != "" {
					root.Label(elasticquotav1alpha1.LabelQuotaProfile, tc.profile)
				}
				c.UpsertElasticQuota(root.Obj())
				team.Parent("a100").Label(elasticquotav1alpha1.LabelQuotaTreeID, "t1")
			}
			if tc.compute {
				c.treeCapacities.UpsertElasticQuotaProfile(poolProfile("a100-nodes", "a100", nil))
				c.UpsertNode(nodeInPool("n1", "a100-nodes", "8"))
			}
			c.UpsertElasticQuota(team.Obj())
			c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
			c.UpsertUnit(wrappers.MakeQueueUnit("first", "team").Quota("team").Request(corev1.ResourceCPU, "6").Obj())
			if res := c.cycle(time.Unix(10, 0), -1); len(res.Admissions) != 1 {
				t.Fatalf("first: %d admissions, want 1", len(res.Admissions))
			}
			c.UpsertUnit(wrappers.MakeQueueUnit("second", "team").Quota("team").Request(corev1.ResourceCPU, request).Obj())
			c.cycle(time.Unix(20, 0), -1)

			v, ok := c.Queue("team")
			if !ok || v.QuotaTree == nil {
				t.Fatalf("queue team: %+v (found %v), want its tree", v, ok)
			}
			second, _ := c.QueueUnit("team", "second")
			got := seen{ID: v.QuotaTree.ID, Pool: v.QuotaTree.Pool, Root: v.QuotaTree.Root,
				Capacity: v.QuotaTree.Capacity.Cpu().String(), Used: v.QuotaTree.Used.Cpu().String(), Reason: second.Reason}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAUnitOfADeletedPoolQuotaStaysInItsPool: a unit admitted in a node
// pool's quota records the tree (status.quotaTree), so that koord-queue,
// restarted after the quota was deleted while the unit ran, still counts
// it in the pool, not in the classic tree, and the pool does not admit
// its room a second time.
func TestAUnitOfADeletedPoolQuotaStaysInItsPool(t *testing.T) {
	pool := wrappers.MakeElasticQuota("a100", "quotas").IsParent().Max(corev1.ResourceCPU, "8").
		Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").Label(elasticquotav1alpha1.LabelQuotaTreeID, "t1").
		Annotation(elasticquotav1alpha1.AnnotationTotalResource, `{"cpu":"8"}`).Obj()
	team := func(name string) *elasticquotav1alpha1.ElasticQuota {
		return wrappers.MakeElasticQuota(name, "quotas").Parent("a100").Max(corev1.ResourceCPU, "8").Label(elasticquotav1alpha1.LabelQuotaTreeID, "t1").Obj()
	}
	// The process that admitted it wrote the tree with the admission.
	first := NewCache()
	first.UpsertNode(wrappers.Node("n1", "16", "64Gi"))
	for _, eq := range []*elasticquotav1alpha1.ElasticQuota{pool, team("gone"), team("other")} {
		first.UpsertElasticQuota(eq)
	}
	first.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "gone"}})
	running := wrappers.MakeQueueUnit("running", "ns").Quota("gone").Request(corev1.ResourceCPU, "8").Obj()
	first.UpsertUnit(running)
	if res := first.cycle(time.Unix(100, 0), -1); len(res.Admissions) != 1 {
		t.Fatalf("admissions %v, want the unit", res.Admissions)
	}
	a := first.units["ns/running"].admission
	queueunit.Admit(running, a.queue, a.request, nil, nil, metav1.NewTime(time.Unix(100, 0)))
	running.Status.QuotaTree = a.tree

	// Restarted after quota gone was deleted.
	c := NewCache()
	c.UpsertNode(wrappers.Node("n1", "16", "64Gi"))
	c.UpsertElasticQuota(pool)
	c.UpsertElasticQuota(team("other"))
	c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "other"}})
	c.UpsertUnit(running)
	c.UpsertUnit(wrappers.MakeQueueUnit("next", "ns").Quota("other").Request(corev1.ResourceCPU, "8").Obj())
	got := map[string]string{}
	for _, q := range []string{"a100", elasticquotav1alpha1.RootQuotaName} {
		used := c.core.Quotas().Used(q)[corev1.ResourceCPU]
		got[q] = used.String()
	}
	if diff := cmp.Diff(map[string]string{"a100": "8", elasticquotav1alpha1.RootQuotaName: "0"}, got); diff != "" {
		t.Errorf("used after the restart (-want +got):\n%s", diff)
	}
	if res := c.cycle(time.Unix(200, 0), -1); len(res.Admissions) > 0 {
		t.Errorf("admitted %v into the pool its 8 cpu are held in", res.Admissions)
	}
}
