package admission

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestUnwrittenAdmissionsAreDecidedAgainWhenTheRoomShrinks: an admission
// decided and not yet handed to the API server was decided in the room the
// tree and the cluster gave then. Any change that shrinks that room sends it
// back to be decided again; a change that leaves the room as large keeps it.
func TestUnwrittenAdmissionsAreDecidedAgainWhenTheRoomShrinks(t *testing.T) {
	// org (min 12) over a and b (min 4 each, lending), in a cluster of two
	// nodes of 16 cpu; the unit asks 2 cpu of a.
	org := func() *wrappers.ElasticQuotaWrapper {
		return wrappers.MakeElasticQuota("org", "quotas").IsParent().Min(corev1.ResourceCPU, "12").Max(corev1.ResourceCPU, "32")
	}
	a := func() *wrappers.ElasticQuotaWrapper {
		return wrappers.MakeElasticQuota("a", "quotas").Parent("org").Min(corev1.ResourceCPU, "4").Max(corev1.ResourceCPU, "32")
	}
	b := func() *wrappers.ElasticQuotaWrapper {
		return wrappers.MakeElasticQuota("b", "quotas").Parent("org").Min(corev1.ResourceCPU, "4").Max(corev1.ResourceCPU, "32")
	}
	root := func() *wrappers.ElasticQuotaWrapper {
		return wrappers.MakeElasticQuota(elasticquotav1alpha1.RootQuotaName, "quotas").IsParent().Max(corev1.ResourceCPU, "32")
	}
	notReady := func(n *corev1.Node) *corev1.Node {
		n.Status.Conditions[0].Status = corev1.ConditionFalse
		return n
	}
	cases := map[string]struct {
		setup, change func(c *Cache)
		wantForgets   bool
	}{
		"a node removed": {
			change:      func(c *Cache) { c.DeleteNode("n2") },
			wantForgets: true,
		},
		"a node NotReady": {
			change:      func(c *Cache) { c.UpsertNode(notReady(wrappers.Node("n2", "16", "64Gi"))) },
			wantForgets: true,
		},
		"the root's total falls": {
			setup:       func(c *Cache) { c.UpsertElasticQuota(root().Obj()) },
			change:      func(c *Cache) { c.UpsertElasticQuota(root().Max(corev1.ResourceCPU, "20").Obj()) },
			wantForgets: true,
		},
		"a non-lending quota's min rises": {
			setup: func(c *Cache) {
				c.UpsertElasticQuota(b().Label(elasticquotav1alpha1.LabelAllowLentResource, "false").Obj())
			},
			change: func(c *Cache) {
				c.UpsertElasticQuota(b().Label(elasticquotav1alpha1.LabelAllowLentResource, "false").Min(corev1.ResourceCPU, "6").Obj())
			},
			wantForgets: true,
		},
		"allow-lent-resource turns false": {
			change: func(c *Cache) {
				c.UpsertElasticQuota(b().Label(elasticquotav1alpha1.LabelAllowLentResource, "false").Obj())
			},
			wantForgets: true,
		},
		"a max lowered": {
			change:      func(c *Cache) { c.UpsertElasticQuota(org().Max(corev1.ResourceCPU, "20").Obj()) },
			wantForgets: true,
		},
		"a parent changed": {
			change:      func(c *Cache) { c.UpsertElasticQuota(a().Parent("").Obj()) },
			wantForgets: true,
		},
		"the quota turns invalid": {
			change:      func(c *Cache) { c.UpsertElasticQuota(a().Min(corev1.ResourceCPU, "40").Obj()) },
			wantForgets: true,
		},
		"a node added": {
			change: func(c *Cache) { c.UpsertNode(wrappers.Node("n3", "16", "64Gi")) },
		},
		"a lending quota's min rises": {
			change: func(c *Cache) { c.UpsertElasticQuota(b().Min(corev1.ResourceCPU, "6").Obj()) },
		},
		"a max raised": {
			change: func(c *Cache) { c.UpsertElasticQuota(org().Max(corev1.ResourceCPU, "40").Obj()) },
		},
		// The admission was decided in the room left after the shrink.
		"a node added after a shrink before the admission": {
			setup: func(c *Cache) {
				c.cycle(time.Unix(50, 0), -1) // nothing to admit yet
				c.DeleteNode("n2")
			},
			change: func(c *Cache) { c.UpsertNode(wrappers.Node("n3", "16", "64Gi")) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCache()
			c.UpsertNode(wrappers.Node("n1", "16", "64Gi"))
			c.UpsertNode(wrappers.Node("n2", "16", "64Gi"))
			for _, eq := range []*elasticquotav1alpha1.ElasticQuota{org().Obj(), a().Obj(), b().Obj()} {
				c.UpsertElasticQuota(eq)
			}
			if tc.setup != nil {
				tc.setup(c)
			}
			c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "a"}})
			c.UpsertUnit(wrappers.MakeQueueUnit("u", "ns").Quota("a").Request(corev1.ResourceCPU, "2").Obj())
			if res := c.cycle(time.Unix(100, 0), -1); len(res.Admissions) != 1 {
				t.Fatalf("admissions before the change: %v, want the unit", res.Admissions)
			}

			tc.change(c)

			_, charged := c.core.Quotas().Charged("ns/u")
			got := struct{ Recorded, Charged bool }{c.units["ns/u"].admission != nil, charged}
			want := struct{ Recorded, Charged bool }{!tc.wantForgets, !tc.wantForgets}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the unwritten admission after the change (-want +got):\n%s", diff)
			}
		})
	}
}
