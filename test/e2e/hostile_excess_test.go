package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// The hostile tenant, after admission: pods never exceed their unit. A job
// grown per pod once released, or a job made under an admitted owner, must
// not run past what was admitted: the CPU the tenant's pods hold on nodes
// (Terminating included) never passes its quota's max.

// TestPodsNeverExceedTheirAdmission runs each way of growing past an
// admission as a tenant would.
func TestPodsNeverExceedTheirAdmission(t *testing.T) {
	t.Run("a PyTorchJob's Worker template grown per pod", testWorkerGrownPerPod)
	t.Run("a Job made under an admitted Workflow", testJobUnderAWorkflow)
}

// testWorkerGrownPerPod: a running PyTorchJob (Master 1, Worker 2, 1 CPU
// each) of a 4-CPU quota has its Worker template patched to 7 CPU, then
// its workers deleted: the real training-operator would make them again at
// 7 CPU (15 CPU in all). The extension suspends the job and queues it again
// at its new size, which the quota cannot admit: no 7-CPU worker runs.
func testWorkerGrownPerPod(t *testing.T) {
	needTrainingOperator(t)
	ns, quota, name := kubeflowNamespace, "excess-grown", "grown"
	integ := integration(t, "pytorchjob")
	kind := integ.GVK.Kind
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	monitor := monitorPodsMatching(ns, func(p *corev1.Pod) bool {
		ref := metav1.GetControllerOf(p)
		return ref != nil && ref.Kind == kind && ref.Name == name
	})
	create(t, extensionstest.MakePyTorchJob(name, ns).Quota(quota).
		Replica(kftraining.PyTorchJobReplicaTypeMaster, 1, "cpu", "1").Replica(kftraining.PyTorchJobReplicaTypeWorker, 2, "cpu", "1").
		Container(kftraining.PyTorchJobDefaultContainerName).
		PodAnnotation(cluster.PodRunTimeAnnotation, "1h").PodAnnotation(podDeleteDelayAnnotation, podGrace.String()).Obj())
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		pods, err := operatorPods(ctx, ns, kind, name)
		if err != nil {
			return err
		}
		if n := countLive(pods, true); n < 3 {
			return fmt.Errorf("%d of the 3 pods of %s run", n, name)
		}
		return nil
	})

	// The tenant grows the running job's workers, then deletes them.
	var job kftraining.PyTorchJob
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &job); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(job.DeepCopy())
	worker := job.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker]
	worker.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("7")
	if err := k8sClient.Patch(context.Background(), &job, patch); err != nil {
		t.Fatal(err)
	}
	pods, err := operatorPods(context.Background(), ns, kind, name)
	if err != nil {
		t.Fatal(err)
	}
	deleted := map[types.UID]bool{} // the operator makes them again by the same names
	for i := range pods {
		if pods[i].Labels[kftraining.ReplicaTypeLabel] == "worker" {
			deleted[pods[i].UID] = true
			if err := k8sClient.Delete(context.Background(), &pods[i]); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
	}
	if len(deleted) != 2 {
		t.Fatalf("deleted %d worker pods of %s, want 2", len(deleted), name)
	}

	// Until the deleted workers are gone and either the job waits at its
	// new size or its workers run again (at 7 CPU, past the quota: seen
	// here, in case the monitor's last sample came before).
	var seen resource.Quantity
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		pods, err := operatorPods(ctx, ns, kind, name)
		if err != nil {
			return err
		}
		seen = maxQuantity(seen, heldCPU(pods))
		for _, p := range pods {
			if deleted[p.UID] {
				return fmt.Errorf("deleted worker %s is still there", p.Name)
			}
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Labels[kftraining.ReplicaTypeLabel] == "worker" {
				return nil // grown workers run
			}
		}
		u, err := unitPhase(ctx, ns, integ.UnitName(name))
		if err != nil {
			return fmt.Errorf("the unit of %s: %w", name, err)
		}
		if queueunit.HoldsQuota(u) || u.EffectivePhase() != schedulingv1alpha1.Enqueued || u.Status.Message == "" {
			return fmt.Errorf("the unit of %s: phase %s, holds quota %v, message %q; want it queued again at its new size, waiting with a reason",
				name, u.EffectivePhase(), queueunit.HoldsQuota(u), u.Status.Message)
		}
		return nil
	})
	if peak := maxQuantity(monitor.Peak(), seen); peak.Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("the pods of %s held %s cpu on nodes at their peak, over its quota's max of 4", name, peak.String())
	}
	eventOn(t, ns, name, corev1.EventTypeWarning, "ExceedsAdmission")
}

// testJobUnderAWorkflow: a tenant's Workflow admitted for
// koord-queue/min-resources "cpu: 100m", and a labelled 8-pod Job of 1 CPU
// a pod submitted running with a controller reference to it: the Workflow
// covers only what it was admitted with, so the Job is queued by itself
// (the webhook suspends it at creation) and waits, since its 8 CPU do not
// fit the 4-CPU quota. No workflow-controller runs here: the Workflow's
// admission is what covers, whatever runs it.
func testJobUnderAWorkflow(t *testing.T) {
	tenantRoles(t)
	ns, quota := "hostile-excess-workflow", "excess-workflow"
	create(t, withWebhook(namespaceObj(ns)))
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	tn := newTenant(t, ns)
	wf := extensionstest.MakeWorkflow("owner", ns).Quota(quota).QueueTemplate().Suspend(true).MinResources("cpu: 100m").Obj()
	tn.create(t, wf)
	waitAdmitted(t, ns, integration(t, "workflow").UnitName(wf.Name))

	const name = "child"
	monitor := monitorPodsMatching(ns, func(p *corev1.Pod) bool { return p.Labels[batchv1.JobNameLabel] == name })
	child := extensionstest.MakeJob(name, ns).Quota(quota).Request("cpu", "1").Parallelism(8).Completions(8).Suspend(false).
		OwnedBy(metav1.OwnerReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: wf.Name, UID: wf.UID, Controller: ptr.To(true)}).Obj()
	child.Spec.Template.Annotations = map[string]string{cluster.PodRunTimeAnnotation: "1h", podDeleteDelayAnnotation: podGrace.String()}
	tn.create(t, child)

	// Until the Job waits in its queue with a reason (by then a covered
	// Job would have run), or its pods run past the quota.
	var seen resource.Quantity
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: name}); err != nil {
			return err
		}
		if held := heldCPU(pods.Items); !held.IsZero() {
			seen = maxQuantity(seen, held)
			if held.Cmp(resource.MustParse("4")) > 0 {
				return nil // past the quota
			}
			return fmt.Errorf("pods of %s hold %s cpu", name, held.String())
		}
		u, err := unitPhase(ctx, ns, name)
		if err != nil {
			return fmt.Errorf("the unit of %s: %w", name, err)
		}
		if queueunit.HoldsQuota(u) {
			t.Fatalf("%s's unit holds quota: 8 CPU in a 4-CPU quota", name)
		}
		if u.EffectivePhase() != schedulingv1alpha1.Enqueued || u.Status.Message == "" {
			return fmt.Errorf("the unit of %s: phase %s, message %q; want it waiting in its queue with a reason", name, u.EffectivePhase(), u.Status.Message)
		}
		return nil
	})
	if peak := maxQuantity(monitor.Peak(), seen); peak.Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("the pods of %s held %s cpu on nodes at their peak, over its quota's max of 4", name, peak.String())
	}
	tenantEvent(t, tn, name, corev1.EventTypeWarning, "OwnerNotAdmitted", "was admitted with cpu=100m and covers only that")
}

// heldCPU is the cpu pods hold on nodes: bound, not finished, Terminating
// included.
func heldCPU(pods []corev1.Pod) resource.Quantity {
	var held resource.Quantity
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			held.Add(resources.PodRequests(&p.Spec)[corev1.ResourceCPU])
		}
	}
	return held
}

// maxQuantity is the larger of a and b.
func maxQuantity(a, b resource.Quantity) resource.Quantity {
	if b.Cmp(a) > 0 {
		return b
	}
	return a
}
