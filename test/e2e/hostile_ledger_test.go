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
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// The hostile tenant, after admission: what holds a node is a pod, so a
// tenant's quota must cover every pod of its on a node, Terminating ones
// included, whatever it does to its jobs once they run. Each case's pods
// stay Terminating for podGrace after deletion, as a container that
// ignores SIGTERM does for its grace period on a real kubelet.

// podGrace is how long the cases' pods stay Terminating.
const podGrace = 20 * time.Second

// podDeleteDelayAnnotation keeps a kwok pod Terminating that long.
const podDeleteDelayAnnotation = "pod-delete.stage.kwok.x-k8s.io/delay"

// lingeringJob is a Job of pods of cpu each that run for an hour and stay
// Terminating for podGrace once deleted.
func lingeringJob(ns, name, quota, cpu string, pods int32) *batchv1.Job {
	job := batchJob(ns, name, quota, cpu)
	job.Spec.Parallelism, job.Spec.Completions = &pods, &pods
	job.Spec.Template.Annotations = map[string]string{cluster.PodRunTimeAnnotation: "1h", podDeleteDelayAnnotation: podGrace.String()}
	return job
}

// monitorPods samples the cpu the pods of ns hold on nodes: bound, not
// finished, Terminating included.
func monitorPods(ns string) *usageMonitor { return monitorPodsOnNodes(ns, nil) }

// monitorPodsMatching samples as monitorPods does the pods of ns that
// match.
func monitorPodsMatching(ns string, match func(*corev1.Pod) bool) *usageMonitor {
	return monitor(func(ctx context.Context) (resource.Quantity, error) {
		var pods corev1.PodList
		if err := k8sClient.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return resource.Quantity{}, err
		}
		matching := pods.Items[:0]
		for i := range pods.Items {
			if match(&pods.Items[i]) {
				matching = append(matching, pods.Items[i])
			}
		}
		return heldCPU(matching), nil
	})
}

// boundPods counts the pods of a Job on nodes, Terminating included.
func boundPods(ctx context.Context, t *testing.T, ns, job string) int {
	t.Helper()
	var pods corev1.PodList
	if err := k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: job}); err != nil {
		t.Fatalf("listing the pods of %s: %v", job, err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n
}

// TestPodsHoldTheirQuotaUntilTheyAreGone: pods that outlive their unit's
// quota (orphaned, or Terminating after an eviction) keep it held: the next
// job runs only once they have left their nodes, and the tenant's pods on
// nodes never hold more than its quota's max.
func TestPodsHoldTheirQuotaUntilTheyAreGone(t *testing.T) {
	priorityClasses(t)
	t.Run("jobs deleted with --cascade=orphan", testOrphanedPods)
	t.Run("an eviction waits for its victim's Terminating pods", testEvictionWaitsForPods)
}

// testOrphanedPods: three 4-pod Jobs of a 4-CPU quota, each deleted with
// --cascade=orphan once running: the orphans keep the quota, so the next
// Job waits until they are gone.
func testOrphanedPods(t *testing.T) {
	ns := "hostile-orphans"
	create(t, namespaceObj(ns))
	create(t, wrappers.MakeElasticQuota("orphans", ns).Max(corev1.ResourceCPU, "4").Obj())
	tn := newTenant(t, ns)
	monitor := monitorPods(ns)
	for i := range 3 {
		name := fmt.Sprintf("orphaner-%d", i)
		tn.create(t, lingeringJob(ns, name, "orphans", "1", 4))
		if i > 0 {
			// The orphans of the Job before still run: this one waits,
			// saying why (a message is written after a cycle decided it).
			testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
				u, err := unitPhase(ctx, ns, name)
				switch {
				case err != nil:
					return err
				case queueunit.HoldsQuota(u):
					t.Fatalf("%s was admitted while the orphans of the Job before hold the quota", name)
				case u.Status.Message == "" || u.Status.Message == "Enqueued":
					return fmt.Errorf("%s's unit says nothing yet of why it waits", name)
				}
				return nil
			})
			var orphans corev1.PodList
			if err := k8sClient.List(context.Background(), &orphans, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: fmt.Sprintf("orphaner-%d", i-1)}); err != nil {
				t.Fatal(err)
			}
			for j := range orphans.Items {
				if err := tn.c.Delete(context.Background(), &orphans.Items[j]); client.IgnoreNotFound(err) != nil {
					t.Fatal(err)
				}
			}
		}
		testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
			if n := boundPods(ctx, t, ns, name); n < 4 {
				return fmt.Errorf("%d of the 4 pods of %s run", n, name)
			}
			return nil
		})
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := tn.c.Delete(context.Background(), job, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
			t.Fatal(err)
		}
	}
	if peak := monitor.Peak(); peak.Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("the tenant's pods held %s cpu on nodes at their peak, over its quota's max of 4", peak.String())
	}
}

// testEvictionWaitsForPods: a high-priority Job preempts a running one
// whose pods stay Terminating for podGrace: the preemptor's pods start only
// once the victim's have left their nodes.
func testEvictionWaitsForPods(t *testing.T) {
	ns := "hostile-grace"
	create(t, namespaceObj(ns))
	create(t, wrappers.MakeElasticQuota("grace", ns).Max(corev1.ResourceCPU, "4").
		Annotation(schedulingv1alpha1.AnnotationEnableQueueUnitPreemption, "true").
		Annotation(policy.AnnotationPreemptRunning, "true").Obj())
	monitor := monitorPods(ns)
	low := lingeringJob(ns, "low", "grace", "2", 2)
	low.Spec.Template.Spec.PriorityClassName = "e2e-low"
	create(t, low)
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		if n := boundPods(ctx, t, ns, "low"); n < 2 {
			return fmt.Errorf("%d of the 2 pods of low run", n)
		}
		return nil
	})
	high := lingeringJob(ns, "high", "grace", "4", 1)
	high.Spec.Template.Spec.PriorityClassName = "e2e-high"
	create(t, high)
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		if n := boundPods(ctx, t, ns, "high"); n < 1 {
			u, _ := unitPhase(ctx, ns, "high")
			return fmt.Errorf("high's pod does not run yet (unit %s, holds quota: %v)", u.EffectivePhase(), queueunit.HoldsQuota(u))
		}
		return nil
	})
	if peak := monitor.Peak(); peak.Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("the pods held %s cpu on nodes at their peak, over the quota's max of 4", peak.String())
	}
}
