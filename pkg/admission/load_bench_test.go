package admission

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// BenchmarkLoadQuotaTree measures a start's feed of the quota tree: the
// informers hand the Cache the large-scale shape's ElasticQuotas (10
// parents of 100 leaves, as the failover-large scenario has), each with its
// Queue, one at a time, and then the first cycle runs. It is what a new
// leader or a cold start spends on the tree before its first admission:
//
//	go test ./pkg/admission -run XXX -bench LoadQuotaTree -benchmem -count 6
func BenchmarkLoadQuotaTree(b *testing.B) {
	const parents, leaves = 10, 100
	var quotas []*wrappers.ElasticQuotaWrapper
	for p := range parents {
		parent := fmt.Sprintf("cq-%d", p)
		quotas = append(quotas, wrappers.MakeElasticQuota(parent, "quotas").IsParent().
			Min(corev1.ResourceCPU, fmt.Sprint(leaves*20)).Max(corev1.ResourceCPU, fmt.Sprint(leaves*20)))
		for l := range leaves {
			quotas = append(quotas, wrappers.MakeElasticQuota(fmt.Sprintf("cq-%d-%d", p, l), "quotas").
				Parent(parent).Min(corev1.ResourceCPU, "20").Max(corev1.ResourceCPU, "120"))
		}
	}
	t0 := time.Unix(1_000_000, 0)
	for b.Loop() {
		c := NewCache()
		c.UpsertNode(wrappers.Node("n1", "100000", "1000Ti"))
		for _, q := range quotas {
			eq := q.Obj().DeepCopy()
			c.UpsertElasticQuota(eq)
			c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: eq.Name}})
		}
		c.cycle(t0, -1)
		if errs := c.core.Quotas().Errors(); len(errs) > 0 {
			b.Fatalf("the tree is invalid: %v", errs[0])
		}
	}
}
