package e2e

import (
	"context"
	"fmt"
	"strings"
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
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/visibility"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

const (
	// gpu is the GPU resource the pools' nodes offer.
	gpu corev1.ResourceName = "nvidia.com/gpu"
	// poolLabel chooses a pool's nodes.
	poolLabel = "pool"
)

// TestNodePoolsOnKwok: two node pools (Koordinator's multiple quota trees)
// on kwok nodes, pool=a100 with one node of 2 GPUs and pool=h100 with two,
// each with an ElasticQuotaProfile, its root quota and a team quota under
// it, and no koord-manager: koord-queue computes each tree's capacity from
// its profile and nodes (--compute-tree-capacity). A100's team fills its
// pool; its next Job waits, its unit saying which tree is full, while
// H100's Job is admitted; every admitted Job's pods run on its own pool's
// nodes only (the pool's node selector is their required node affinity,
// which kube-scheduler honours); a node joining A100 admits the waiting
// Job, whose pod runs there.
func TestNodePoolsOnKwok(t *testing.T) {
	ns := "pools"
	create(t, namespaceObj(ns))
	node := func(name, pool string) *corev1.Node {
		return cluster.FakeNode(name, map[string]string{poolLabel: pool}, corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("64Gi"),
			corev1.ResourcePods: resource.MustParse("110"), gpu: resource.MustParse("2"),
		})
	}
	create(t, node("pool-a100-0", "a100"), node("pool-h100-0", "h100"), node("pool-h100-1", "h100"))
	for _, pool := range []string{"a100", "h100"} {
		root := "pools-" + pool + "-root"
		create(t,
			wrappers.MakeElasticQuota(root, ns).IsParent().
				Label(elasticquotav1alpha1.LabelQuotaTreeID, pool).Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").Obj(),
			wrappers.MakeElasticQuota("pools-"+pool+"-team", ns).Parent(root).Label(elasticquotav1alpha1.LabelQuotaTreeID, pool).
				Max(corev1.ResourceCPU, "100").Max(gpu, "100").Obj(),
			&quotav1alpha1.ElasticQuotaProfile{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pool},
				Spec: quotav1alpha1.ElasticQuotaProfileSpec{QuotaName: root,
					NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: pool}}},
			})
	}

	// Each tree's capacity is its own pool's.
	waitTreeCapacity(t, "pools-a100-root", "2", "8")
	waitTreeCapacity(t, "pools-h100-root", "4", "16")

	// A100's team fills its pool with two 1-GPU pods that run on.
	create(t, gpuJob(ns, "a100-fill", "pools-a100-team", 2))
	waitAdmitted(t, ns, "a100-fill")
	create(t, gpuJob(ns, "a100-wait", "pools-a100-team", 1), gpuJob(ns, "h100-run", "pools-h100-team", 2))
	waitAdmitted(t, ns, "h100-run")
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitPhase(ctx, ns, "a100-wait")
		if err != nil {
			return err
		}
		if queueunit.HoldsQuota(u) {
			t.Fatalf("a100-wait was admitted into a full pool: %s", u.Status.Message)
		}
		if !strings.Contains(u.Status.Message, "quota tree a100") {
			return fmt.Errorf("a100-wait: phase %s, message %q, want it to name quota tree a100", u.EffectivePhase(), u.Status.Message)
		}
		return nil
	})
	t.Logf("a100-wait waits: %s", mustUnit(t, ns, "a100-wait").Status.Message)
	waitPodsOnPool(t, ns, "a100-fill", 2, "a100")
	waitPodsOnPool(t, ns, "h100-run", 2, "h100")
	if u := mustUnit(t, ns, "a100-wait"); queueunit.HoldsQuota(u) {
		t.Fatalf("a100-wait was admitted into a full pool: %s", u.Status.Message)
	}

	// A node joins A100: its tree grows, and the waiting Job runs there.
	create(t, node("pool-a100-1", "a100"))
	waitTreeCapacity(t, "pools-a100-root", "4", "16")
	waitAdmitted(t, ns, "a100-wait")
	waitPodsOnPool(t, ns, "a100-wait", 1, "a100")
}

// gpuJob is a suspended Job of quota with pods running in parallel, each
// asking for one GPU and one cpu, that run until the test ends.
func gpuJob(ns, name, quota string, pods int32) *batchv1.Job {
	job := batchJob(ns, name, quota, "1")
	job.Spec.Parallelism, job.Spec.Completions = ptr.To(pods), ptr.To(pods)
	job.Spec.Template.Annotations = map[string]string{cluster.PodRunTimeAnnotation: "10m"}
	res := &job.Spec.Template.Spec.Containers[0].Resources
	res.Requests[gpu] = resource.MustParse("1")
	res.Limits = corev1.ResourceList{gpu: resource.MustParse("1")}
	return job
}

// waitTreeCapacity waits until the visibility API shows root's capacity
// as gpus GPUs and cpus cpu, without error.
func waitTreeCapacity(t *testing.T, root, gpus, cpus string) {
	t.Helper()
	vis := &visibility.Client{BaseURL: visibilityURL, HTTP: visibilityHTTP, Token: visibilityToken}
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		quotas, err := vis.Quotas(ctx)
		if err != nil {
			return err
		}
		for _, q := range quotas {
			if q.Name != root {
				continue
			}
			g, c := q.Capacity[gpu], q.Capacity[corev1.ResourceCPU]
			if g.Cmp(resource.MustParse(gpus)) != 0 || c.Cmp(resource.MustParse(cpus)) != 0 || q.Error != "" {
				return fmt.Errorf("quota %s: capacity %s GPUs, %s cpu (error %q), want %s and %s", root, g.String(), c.String(), q.Error, gpus, cpus)
			}
			return nil
		}
		return fmt.Errorf("quota %s not in the visibility API", root)
	})
}

// waitPodsOnPool waits until n pods of the Job are bound, and fails if one
// is bound to a node outside the pool.
func waitPodsOnPool(t *testing.T, ns, job string, n int, pool string) {
	t.Helper()
	waitJobPods(t, ns, job, n, func(pod string, node *corev1.Node) {
		if got := node.Labels[poolLabel]; got != pool {
			t.Fatalf("pod %s of %s runs on node %s of pool %q, want pool %q", pod, job, node.Name, got, pool)
		}
	})
}

// waitJobPods waits until n pods of the Job are bound, calling check with
// each bound pod's name and node.
func waitJobPods(t *testing.T, ns, job string, n int, check func(pod string, node *corev1.Node)) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: job}); err != nil {
			return err
		}
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			var node corev1.Node
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &node); err != nil {
				return err
			}
			check(p.Name, &node)
			bound++
		}
		if bound < n {
			return fmt.Errorf("%d of %d pods of %s bound", bound, n, job)
		}
		return nil
	})
}

func mustUnit(t *testing.T, ns, name string) *schedulingv1alpha1.QueueUnit {
	t.Helper()
	u, err := unitPhase(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
