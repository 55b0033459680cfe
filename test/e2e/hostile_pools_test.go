package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// The hostile tenant and node pools: whatever a job asks of its nodes, its
// pods hold CPU only on the nodes its quota's tree was given. A pool
// "hostile-gpu" (one kwok node labelled pool=hostile-gpu) has its own
// quota tree, whose capacity koord-queue computes from its profile
// (--compute-tree-capacity) and takes out of the classic tree's.
const (
	hostilePoolNamespace = "hostile-pools"
	hostilePool          = "hostile-gpu"
	hostilePoolTeam      = "hostile-pool-team"
)

// TestHostilePools: a Job of the classic tree whose nodeSelector names the
// pool's nodes never runs there, and an Argo Workflow of the pool's quota,
// preferring nodes outside the pool, runs its step on the pool's node.
func TestHostilePools(t *testing.T) {
	ns := hostilePoolNamespace
	create(t, namespaceObj(ns))
	create(t, cluster.FakeNode("hostile-pool-0", map[string]string{poolLabel: hostilePool}, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}))
	root := "hostile-pool-root"
	create(t,
		wrappers.MakeElasticQuota(root, ns).IsParent().
			Label(elasticquotav1alpha1.LabelQuotaTreeID, hostilePool).Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").Obj(),
		wrappers.MakeElasticQuota(hostilePoolTeam, ns).Parent(root).Label(elasticquotav1alpha1.LabelQuotaTreeID, hostilePool).
			Max(corev1.ResourceCPU, "4").Obj(),
		&quotav1alpha1.ElasticQuotaProfile{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hostilePool},
			Spec: quotav1alpha1.ElasticQuotaProfileSpec{QuotaName: root,
				NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: hostilePool}}},
		})

	t.Run("a classic-tree Job naming the pool's nodes does not run there", testClassicJobOffPool)
	t.Run("an Argo Workflow of the pool's quota runs its step on the pool", testWorkflowOnPool)
}

// testClassicJobOffPool: a tenant of a classic-tree quota (max 4 CPU)
// submits a 2-pod Job whose nodeSelector names the pool's nodes: the pool's
// capacity is not the classic tree's, so its unit is admitted, and its
// pods, kept off the pool, fit no node and wait unscheduled. The CPU its
// pods hold on the pool's node stays 0 throughout.
func testClassicJobOffPool(t *testing.T) {
	ns := hostilePoolNamespace
	quota := "hostile-pools-classic"
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	onPool := monitorPodsOnNodes(ns, func(n *corev1.Node) bool { return n.Labels[poolLabel] == hostilePool })
	t.Cleanup(func() { onPool.Peak() }) // stops it
	j := batchJob(ns, "on-pool", quota, "1")
	j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
	j.Spec.Template.Annotations = map[string]string{cluster.PodRunTimeAnnotation: "10m"}
	j.Spec.Template.Spec.NodeSelector = map[string]string{poolLabel: hostilePool}
	create(t, j)
	waitAdmitted(t, ns, j.Name)

	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: j.Name}); err != nil {
			return err
		}
		unschedulable := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				t.Fatalf("pod %s of classic-tree Job %s was bound to node %s (its nodeSelector names pool %s)", p.Name, j.Name, p.Spec.NodeName, hostilePool)
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					unschedulable++
				}
			}
		}
		if unschedulable < 2 {
			return fmt.Errorf("%d pods of %s, %d found unschedulable by kube-scheduler; want 2", len(pods.Items), j.Name, unschedulable)
		}
		return nil
	})
	if peak := onPool.Peak(); !peak.IsZero() {
		t.Errorf("the classic-tree tenant's pods held %s cpu on pool %s's node at their peak, want none", peak.String(), hostilePool)
	}
}

// testWorkflowOnPool: a Workflow of the pool's quota, whose spec.affinity
// prefers nodes outside any pool, is released with the pool's required
// affinity: the controller's step pod runs on the pool's node, and the
// workflow succeeds. Its pods on the pool never hold more than the team's
// max.
func testWorkflowOnPool(t *testing.T) {
	needWorkflowController(t)
	ns := argoNamespace
	integ := integration(t, "workflow")
	onPool := monitorPodsOnNodes(ns, func(n *corev1.Node) bool { return n.Labels[poolLabel] == hostilePool })
	t.Cleanup(func() { onPool.Peak() }) // stops it
	wf := extensionstest.MakeWorkflow("on-pool", ns).Command("true").QueueTemplate().Suspend(true).MinResources("cpu: 1").Quota(hostilePoolTeam).Obj()
	wf.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight:     100,
		Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: poolLabel, Operator: corev1.NodeSelectorOpDoesNotExist}}},
	}}}}
	create(t, wf)
	waitReleased(t, integ, ns, wf.Name)

	var node string
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		pods, err := operatorPods(ctx, ns, "Workflow", wf.Name)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				node = p.Spec.NodeName
				return nil
			}
		}
		return fmt.Errorf("workflow %s: %d pods, none bound", wf.Name, len(pods))
	})
	var n corev1.Node
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: node}, &n); err != nil {
		t.Fatal(err)
	}
	if got := n.Labels[poolLabel]; got != hostilePool {
		t.Fatalf("workflow %s's step pod runs on node %s of pool %q, want pool %q", wf.Name, node, got, hostilePool)
	}
	waitSucceeded(t, integ, ns, wf.Name)
	released, err := getWorkflow(context.Background(), ns, wf.Name)
	if err != nil {
		t.Fatal(err)
	}
	if a := released.Spec.Affinity; a == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("workflow %s's own preference was not kept: %+v", wf.Name, a)
	}
	if peak := onPool.Peak(); peak.Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("workflow %s's pods held %s cpu on the pool at their peak, over its quota's max of 4", wf.Name, peak.String())
	}
}

// monitorPodsOnNodes samples, until stopped, the cpu the pods of ns
// request (as the scheduler sums it) on the nodes onNode chooses, every
// node when it is nil; a pod being deleted still holds its node. Peak is
// the most it saw.
func monitorPodsOnNodes(ns string, onNode func(*corev1.Node) bool) *usageMonitor {
	chosen := map[string]bool{} // by node name; read by the sampler only
	return monitor(func(ctx context.Context) (resource.Quantity, error) {
		var used resource.Quantity
		var pods corev1.PodList
		if err := k8sClient.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return used, err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			on, known := chosen[p.Spec.NodeName]
			if !known {
				on = true
				if onNode != nil {
					var n corev1.Node
					if err := k8sClient.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &n); err != nil {
						return used, err
					}
					on = onNode(&n)
				}
				chosen[p.Spec.NodeName] = on
			}
			if on {
				used.Add(resources.PodRequests(&p.Spec)[corev1.ResourceCPU])
			}
		}
		return used, nil
	})
}
