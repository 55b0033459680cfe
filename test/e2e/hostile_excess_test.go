package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
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
	t.Run("a child under an admitted RayJob", testClusterUnderARayJobScaled)
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

// testClusterUnderARayJobScaled: a RayJob (a head and 2 workers of 1 CPU,
// KubeRay's submitter of 500m) of a 4-CPU quota is admitted, and KubeRay
// runs the RayCluster it makes for it; the tenant then scales that
// cluster's workers (replicas and maxReplicas) to 4 (5.5 CPU in all),
// which the RayJob's unit was not admitted with. The extension suspends
// the RayJob (Warning ExceedsAdmission) and queues it again; KubeRay
// deletes the cluster, whose pods stay Terminating for podGrace. The
// namespace has the pod gate on, as a namespace a quota serves should: the
// workers past the admission are made at the gate meanwhile. The CPU the
// RayJob's pods hold on nodes never passes 4, the cluster's Terminating
// pods included. The cluster is scaled as soon as it runs: on kwok KubeRay
// fails the RayJob 30s after its submitter ends (TestRayJobWithTheRayOperator).
func testClusterUnderARayJobScaled(t *testing.T) {
	needRayOperator(t)
	ns, quota, name := rayNamespace, "excess-rayjob", "rj-scaled"
	integ := integration(t, "rayjob")
	gatePods(t, ns)
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	// The RayJob's pods: its clusters' (named after it) and its submitter's.
	ofRayJob := func(p *corev1.Pod) bool {
		return strings.HasPrefix(p.Labels[rayClusterLabel], name+"-") || p.Labels[batchv1.JobNameLabel] == name
	}
	monitor := monitorPodsMatching(ns, ofRayJob)
	spec := rayClusterSpec(2).Obj()
	for _, tpl := range []*corev1.PodTemplateSpec{&spec.HeadGroupSpec.Template, &spec.WorkerGroupSpecs[0].Template} {
		tpl.Annotations = map[string]string{podDeleteDelayAnnotation: podGrace.String()}
	}
	rj := extensionstest.MakeRayJob(name, ns, spec).Quota(quota).Obj()
	create(t, rj)
	unit := integ.UnitName(name)
	var clusterName string
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		var j rayv1.RayJob
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(rj), &j); err != nil {
			return err
		}
		pods, err := operatorPods(ctx, ns, "RayCluster", j.Status.RayClusterName)
		if err != nil {
			return err
		}
		u, err := unitPhase(ctx, ns, unit)
		if err != nil {
			return err
		}
		if j.Status.RayClusterName == "" || countLive(pods, true) != 3 || u.Status.Phase != schedulingv1alpha1.Running {
			return fmt.Errorf("RayJob %s: deployment %q, cluster %q with %d of its 3 pods on nodes; its unit %s; want its cluster running, its unit Running",
				name, j.Status.JobDeploymentStatus, j.Status.RayClusterName, countLive(pods, true), u.EffectivePhase())
		}
		clusterName = j.Status.RayClusterName
		return nil
	})

	// The tenant scales the cluster KubeRay made, its maxReplicas with its
	// replicas: KubeRay keeps a group within them. KubeRay writes the
	// cluster too: a conflict is tried again.
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var c rayv1.RayCluster
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: clusterName}, &c); err != nil {
			return err
		}
		g := &c.Spec.WorkerGroupSpecs[0]
		g.Replicas, g.MaxReplicas = ptr.To[int32](4), ptr.To[int32](4)
		return k8sClient.Update(ctx, &c)
	})
	if err != nil {
		t.Fatalf("scaling RayCluster %s: %v", clusterName, err)
	}

	// Until the RayJob was suspended and queued again (seen waiting, or
	// running on a cluster KubeRay made afresh, which it does only after a
	// suspension) and the scaled cluster's pods are gone. The peak is
	// reported however that ends; seen is the RayJob's pods sampled here,
	// in case the monitor's last sample came before.
	var seen resource.Quantity
	defer func() {
		if peak := maxQuantity(monitor.Peak(), seen); peak.Cmp(resource.MustParse("4")) > 0 {
			t.Errorf("the pods of RayJob %s held %s cpu on nodes at their peak, over its quota's max of 4", name, peak.String())
		}
	}()
	var requeued bool
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		var all corev1.PodList
		if err := k8sClient.List(ctx, &all, client.InNamespace(ns)); err != nil {
			return err
		}
		var ours []corev1.Pod
		for i := range all.Items {
			if ofRayJob(&all.Items[i]) {
				ours = append(ours, all.Items[i])
			}
		}
		seen = maxQuantity(seen, heldCPU(ours))
		pods, err := operatorPods(ctx, ns, "RayCluster", clusterName)
		if err != nil {
			return err
		}
		var j rayv1.RayJob
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(rj), &j); err != nil {
			return err
		}
		u, err := unitPhase(ctx, ns, unit)
		if err != nil {
			return err
		}
		requeued = requeued || j.Spec.Suspend && !queueunit.HoldsQuota(u) && u.EffectivePhase() == schedulingv1alpha1.Enqueued ||
			j.Status.RayClusterName != "" && j.Status.RayClusterName != clusterName
		if !requeued {
			return fmt.Errorf("RayJob %s: suspended %v, deployment %q, %d of its cluster's pods on nodes; its unit: phase %s, holds quota %v (%q); want it suspended and queued again",
				name, j.Spec.Suspend, j.Status.JobDeploymentStatus, countLive(pods, true), u.EffectivePhase(), queueunit.HoldsQuota(u), u.Status.Message)
		}
		if len(pods) > 0 {
			return fmt.Errorf("%d pods of the scaled RayCluster %s left", len(pods), clusterName)
		}
		return nil
	})
	eventOn(t, ns, name, corev1.EventTypeWarning, "ExceedsAdmission")
}

// rayClusterLabel names the RayCluster a pod KubeRay made is of.
const rayClusterLabel = "ray.io/cluster"

// gatePods has the API server call the pod webhook (the pod gate) for the
// pods of ns until the test ends.
func gatePods(t *testing.T, ns string) {
	t.Helper()
	label := func(on bool) error {
		var n corev1.Namespace
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: ns}, &n); err != nil {
			return err
		}
		patch := client.MergeFrom(n.DeepCopy())
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		if on {
			n.Labels[podGateLabel] = "on"
		} else {
			delete(n.Labels, podGateLabel)
		}
		return k8sClient.Patch(context.Background(), &n, patch)
	}
	if err := label(true); err != nil {
		t.Fatalf("gating the pods of %s: %v", ns, err)
	}
	t.Cleanup(func() {
		if err := label(false); err != nil {
			t.Errorf("ungating the pods of %s: %v", ns, err)
		}
	})
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
