package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// The tests in this file run KubeRay's ray-operator (the release whose API
// go.mod pins, built by `make tools`) on the local cluster: koord-queue
// releases a RayCluster or RayJob, the operator creates the cluster's head
// and worker pods, and kwok runs them (they never end: only pods of a
// batch Job, a Kubeflow job or a Workflow do). Nothing serves a Ray
// dashboard on kwok, so a RayJob gets as far as its cluster and its
// submitter pod, then fails: see
// TestRayJobWithTheRayOperator.

// rayNamespace is the only namespace the ray-operator watches; elsewhere
// (TestFrameworksAreQueuedAndReleased) no operator runs Ray objects.
const rayNamespace = "kuberay"

var rayOperator operator

// needRayOperator starts the ray-operator for rayNamespace the first time a
// test needs it (see operator.need).
func needRayOperator(t *testing.T) {
	t.Helper()
	rayOperator.need(t, "KubeRay's ray-operator", rayNamespace, func(ctx context.Context) error {
		_, err := localCluster.StartRayOperator(ctx, cluster.RayOperatorOptions{Namespace: rayNamespace})
		return err
	})
}

// rayClusterSpec is a head and a worker group "workers" of n pods, each pod
// asking for 1 cpu.
func rayClusterSpec(n int32) *extensionstest.RayClusterSpecWrapper {
	return extensionstest.MakeRayClusterSpec("cpu", "1").WorkerGroup("workers", n, "cpu", "1")
}

// waitRayClusterReady waits until the operator runs the head and workers
// pods of the RayCluster name (its group "workers") on kwok's nodes, reports
// the cluster provisioned with its head and that many workers ready, and the
// RayCluster's unit
// is Running and counts those pods on nodes. Each round, during (when set)
// checks what must hold meanwhile.
func waitRayClusterReady(t *testing.T, ns, name, unit string, workers int, during func(context.Context)) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		if during != nil {
			during(ctx)
		}
		var c rayv1.RayCluster
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
			return fmt.Errorf("RayCluster %s: %w", name, err)
		}
		pods, err := operatorPods(ctx, ns, "RayCluster", name)
		if err != nil {
			return err
		}
		u, err := unitPhase(ctx, ns, unit)
		if err != nil {
			return err
		}
		onNodes := map[string]int64{}
		for _, a := range u.Status.Admissions {
			onNodes[a.Name] = a.Running
		}
		// Provisioned: every pod was ready once (the deprecated state
		// "ready" says the same).
		provisioned := apimeta.IsStatusConditionTrue(c.Status.Conditions, string(rayv1.RayClusterProvisioned))
		headReady := apimeta.IsStatusConditionTrue(c.Status.Conditions, string(rayv1.HeadPodReady))
		if countLive(pods, true) != 1+workers || !provisioned || !headReady || c.Status.ReadyWorkerReplicas != int32(workers) ||
			u.Status.Phase != schedulingv1alpha1.Running || !maps.Equal(onNodes, map[string]int64{"head": 1, "workers": int64(workers)}) {
			return fmt.Errorf("RayCluster %s: %d of its pods run on nodes (want %d), provisioned %v, head ready %v, %d workers ready; its unit: phase %s, pods on nodes by pod set %v (%q); want the cluster ready, its unit Running and counting them",
				name, countLive(pods, true), 1+workers, provisioned, headReady, c.Status.ReadyWorkerReplicas, u.EffectivePhase(), onNodes, u.Status.Message)
		}
		return nil
	})
}

// TestRayClustersRunWithTheRayOperator: two RayClusters (a head and two
// workers of 1 cpu each) in a quota of 3 cpu, which fits one. koord-queue
// releases the first, the operator creates its head and workers, kwok runs
// them, the operator reports the cluster ready and its unit turns Running.
// The second waits, with a reason and without a pod, as long as the first
// exists; once the first is deleted it is admitted and gets ready in turn.
func TestRayClustersRunWithTheRayOperator(t *testing.T) {
	needRayOperator(t)
	ns, quota := rayNamespace, "raycluster-team"
	integ := integration(t, "raycluster")
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "3").Obj())
	monitor := monitorUsage(ns, quota)
	rayCluster := func(name string) *rayv1.RayCluster {
		return extensionstest.MakeRayCluster(name, ns, rayClusterSpec(2).Obj()).Quota(quota).Obj()
	}
	first, second := rayCluster("rc-first"), rayCluster("rc-second")
	create(t, first)
	waitReleased(t, integ, ns, first.Name)
	create(t, second)

	// Its pods are listed before the first's unit is read: a pod seen then
	// existed while the first held the quota.
	var sawSecondWait bool
	waitRayClusterReady(t, ns, first.Name, integ.UnitName(first.Name), 2, func(ctx context.Context) {
		pods, err := operatorPods(ctx, ns, "RayCluster", second.Name)
		if err != nil {
			return
		}
		if u, err := unitPhase(ctx, ns, integ.UnitName(first.Name)); err == nil && queueunit.HoldsQuota(u) && len(pods) > 0 {
			t.Fatalf("%d pods of %s exist while %s holds the quota", len(pods), second.Name, first.Name)
		}
		if view, err := unitView(ctx, ns, integ.UnitName(second.Name)); err == nil {
			sawSecondWait = sawSecondWait || view.Phase == schedulingv1alpha1.Enqueued && view.Reason != ""
		}
	})
	// The first is ready: the second still waits, suspended, without a pod.
	ctx := context.Background()
	if u, err := unitPhase(ctx, ns, integ.UnitName(first.Name)); err != nil || !queueunit.FullyRunning(u) {
		t.Errorf("unit of %s: fully running %v (%v); want every pod it was admitted for on a node", first.Name, err == nil && queueunit.FullyRunning(u), err)
	}
	u, err := unitPhase(ctx, ns, integ.UnitName(second.Name))
	if err != nil {
		t.Fatal(err)
	}
	job, err := getJob(ctx, integ, ns, second.Name)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := operatorPods(ctx, ns, "RayCluster", second.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Status.Admissions) > 0 || !job.IsSuspended() || len(pods) > 0 {
		t.Errorf("while %s runs, %s: unit phase %s with %d admissions, suspended %v, %d pods; want it waiting, suspended, without a pod",
			first.Name, second.Name, u.EffectivePhase(), len(u.Status.Admissions), job.IsSuspended(), len(pods))
	}
	if !sawSecondWait {
		t.Errorf("never saw %s wait in the queue with a reason while %s got ready", second.Name, first.Name)
	}

	// A RayCluster never finishes: deleting it gives its quota back.
	if err := k8sClient.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitReleased(t, integ, ns, second.Name)
	waitRayClusterReady(t, ns, second.Name, integ.UnitName(second.Name), 2, nil)
	if peak := monitor.Peak(); peak.Cmp(resource.MustParse("3")) > 0 {
		t.Errorf("%s held %s cpu at its peak, over its max of 3", quota, peak.String())
	}
}

// TestRayClusterAutoscaledWithinItsRange: a RayCluster with the Ray
// autoscaler on and a group of 1 to 2 workers asks for the head with the
// autoscaler KubeRay adds to it and 2 workers, which its quota of 3500m cpu
// fits. Released with 1 worker, it is
// scaled to 2 the way the autoscaler does it (nothing runs the autoscaler on
// kwok: the test writes replicas): the operator adds the worker and the
// cluster keeps its unit, admitted and Running, neither suspended nor queued
// again.
func TestRayClusterAutoscaledWithinItsRange(t *testing.T) {
	needRayOperator(t)
	ns, quota := rayNamespace, "autoscaled-team"
	integ := integration(t, "raycluster")
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "3500m").Obj())
	c := extensionstest.MakeRayCluster("autoscaled", ns, rayClusterSpec(1).Scale(1, 1, 2).Autoscaling().Obj()).Quota(quota).Obj()
	create(t, c)
	waitReleased(t, integ, ns, c.Name)
	unit := integ.UnitName(c.Name)
	waitRayClusterReady(t, ns, c.Name, unit, 1, nil)
	ctx := context.Background()
	admitted, err := unitPhase(ctx, ns, unit)
	if err != nil {
		t.Fatal(err)
	}
	if cpu := admitted.Spec.Request.Cpu().String(); cpu != "3500m" {
		t.Errorf("unit asks for %s cpu, want 3500m: the head, its autoscaler and the group's maxReplicas", cpu)
	}
	// Running below its maximum it is not fully running: a queue with
	// wait-for-pods-running would admit nothing else meanwhile.
	if got, want := queueunit.RunningShortfall(admitted), "pod set workers has 1 of 2 pods scheduled"; got != want {
		t.Errorf("running shortfall %q, want %q", got, want)
	}
	// The operator adds its autoscaler to the head pod: the unit counts it.
	pods, err := operatorPods(ctx, ns, "RayCluster", c.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Labels["ray.io/node-type"] != string(rayv1.HeadNode) {
			continue
		}
		if diff := cmp.Diff(qt.Res("cpu", "1500m", "memory", "512Mi"), resources.PodRequests(&p.Spec)); diff != "" {
			t.Errorf("head pod %s requests (-want +got): want the head's 1 cpu and the autoscaler's 500m and 512Mi\n%s", p.Name, diff)
		}
		if diff := cmp.Diff(resources.PodRequests(&admitted.Spec.PodSets[0].Template.Spec), resources.PodRequests(&p.Spec)); diff != "" {
			t.Errorf("head pod %s requests (-want the unit's head +got the pod's):\n%s", p.Name, diff)
		}
	}

	// The operator writes the cluster too: a conflict is tried again.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		c.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2)
		return k8sClient.Update(ctx, c)
	})
	if err != nil {
		t.Fatalf("scaling RayCluster %s: %v", c.Name, err)
	}
	waitRayClusterReady(t, ns, c.Name, unit, 2, nil)
	u, err := unitPhase(ctx, ns, unit)
	if err != nil {
		t.Fatal(err)
	}
	job, err := getJob(ctx, integ, ns, c.Name)
	if err != nil {
		t.Fatal(err)
	}
	if u.UID != admitted.UID || job.IsSuspended() {
		t.Errorf("scaled 1 → 2 (max 2): unit uid %s (admitted as %s), cluster suspended %v; want the same unit and the cluster running", u.UID, admitted.UID, job.IsSuspended())
	}
}

// TestRayJobWithTheRayOperator runs a RayJob (a head and two workers of 1
// cpu, KubeRay's default submitter of 500m) as far as KubeRay v1.5 goes on
// kwok, where no Ray runs and nothing answers the Ray dashboard's API:
//
//   - waiting for a full quota, it is suspended: the operator keeps it
//     Suspended and creates nothing for it;
//   - released, the operator creates its RayCluster (the unit's head and
//     worker pods), kwok runs the pods, the operator sees the cluster ready,
//     creates the submitter Job, whose pod runs too (every pod the unit asks
//     for, sized as the unit measured them), and marks the job Running;
//     its unit turns Running;
//   - the submitter's pod succeeds on kwok (it is a batch Job's), but the
//     operator never learns the Ray job's state: it cannot reach the
//     dashboard. 30 seconds after the submitter finished it fails the
//     RayJob (TransitionGracePeriodExceeded), the unit turns Failed and gives
//     its quota back, and the operator deletes the cluster
//     (shutdownAfterJobFinishes).
//
// Not exercised: a Ray job that runs and succeeds, and the RayJob's copy of
// its cluster's status (KubeRay writes it only with an answer from the
// dashboard); the unit counts the pods themselves, so it does not need it.
func TestRayJobWithTheRayOperator(t *testing.T) {
	needRayOperator(t)
	ns, quota := rayNamespace, "rayjob-team"
	integ := integration(t, "rayjob")
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	ctx := context.Background()

	// A batch Job fills the quota until it is deleted (the operator
	// leaves Jobs it did not create alone).
	blocker := fillQuota(t, ns, quota, time.Hour)
	rj := extensionstest.MakeRayJob("rj", ns, rayClusterSpec(2).Obj()).Quota(quota).Obj()
	create(t, rj)
	unit := integ.UnitName(rj.Name)
	// The operator has handled it suspended once its status says Suspended:
	// nothing was made for it then.
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		var j rayv1.RayJob
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(rj), &j); err != nil {
			return err
		}
		view, err := unitView(ctx, ns, unit)
		if err != nil {
			return err
		}
		if j.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusSuspended || view.Phase != schedulingv1alpha1.Enqueued || view.Reason == "" {
			return fmt.Errorf("RayJob %s: deployment %q; its unit %s (%q); want it Suspended, its unit waiting with a reason",
				rj.Name, j.Status.JobDeploymentStatus, view.Phase, view.Reason)
		}
		return nil
	})
	if made := madeForRayJob(t, ns, rj); made != "" {
		t.Errorf("while RayJob %s waits, the operator made %s for it; want nothing", rj.Name, made)
	}

	if err := k8sClient.Delete(ctx, blocker, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	waitReleased(t, integ, ns, rj.Name)
	released := time.Now()
	var j rayv1.RayJob
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(rj), &j); err != nil {
			return err
		}
		clusterPods, err := operatorPods(ctx, ns, "RayCluster", j.Status.RayClusterName)
		if err != nil {
			return err
		}
		submitter, err := operatorPods(ctx, ns, "Job", rj.Name)
		if err != nil {
			return err
		}
		u, err := unitPhase(ctx, ns, unit)
		if err != nil {
			return err
		}
		if j.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusRunning || j.Status.RayClusterName == "" || countLive(clusterPods, true) != 3 ||
			len(submitter) != 1 || submitter[0].Spec.NodeName == "" || u.Status.Phase != schedulingv1alpha1.Running || !queueunit.FullyRunning(u) {
			return fmt.Errorf("RayJob %s: deployment %q, cluster %q with %d of its 3 pods on nodes, %d submitter pods; its unit: phase %s, %s; want it Running with every pod on a node, its unit Running",
				rj.Name, j.Status.JobDeploymentStatus, j.Status.RayClusterName, countLive(clusterPods, true), len(submitter), u.EffectivePhase(), queueunit.RunningShortfall(u))
		}
		// The pods KubeRay made ask for what the unit does, the init
		// container it adds to each worker (wait-gcs-ready, 200m and 256Mi)
		// included, which weighs here for memory only: the workers'
		// containers ask for more cpu and no memory.
		var cpu, memory resource.Quantity
		for _, p := range append(clusterPods, submitter...) {
			r := resources.PodRequests(&p.Spec)
			cpu.Add(*r.Cpu())
			memory.Add(*r.Memory())
		}
		if cpu.Cmp(*u.Spec.Request.Cpu()) != 0 || memory.Cmp(*u.Spec.Request.Memory()) != 0 {
			t.Errorf("the pods KubeRay made ask for cpu %s, memory %s; want the unit's cpu %s and memory %s",
				&cpu, &memory, u.Spec.Request.Cpu(), u.Spec.Request.Memory())
		}
		if diff := cmp.Diff(qt.Res("cpu", "500m", "memory", "200Mi"), resources.PodRequests(&submitter[0].Spec)); diff != "" {
			t.Errorf("submitter pod requests (-want +got):\n%s", diff)
		}
		// KubeRay copies the cluster's status into the RayJob only with an
		// answer from the dashboard; the unit counts the pods themselves:
		// the head, the workers and the submitter, all on nodes.
		if diff := cmp.Diff(schedulingv1alpha1.PodState{Running: 4}, u.Status.PodState); diff != "" {
			t.Errorf("unit podState (-want +got):\n%s", diff)
		}
		return nil
	})
	clusterName := j.Status.RayClusterName
	t.Logf("released, RayJob %s Running on cluster %s with its submitter %v later", rj.Name, clusterName, time.Since(released).Round(time.Second))

	// No dashboard answers: KubeRay fails the job 30s after its submitter
	// finished; its requeues back off, so that can take a few minutes more.
	testenv.Eventually(t, 5*time.Minute, func(ctx context.Context) error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(rj), &j); err != nil {
			return err
		}
		u, err := unitPhase(ctx, ns, unit)
		if err != nil {
			return err
		}
		if j.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusFailed || u.Status.Phase != schedulingv1alpha1.Failed || len(u.Status.Admissions) > 0 {
			return fmt.Errorf("RayJob %s: deployment %q (%s: %s); its unit: phase %s with %d admissions; want it Failed, its unit Failed with its quota given back",
				rj.Name, j.Status.JobDeploymentStatus, j.Status.Reason, j.Status.Message, u.EffectivePhase(), len(u.Status.Admissions))
		}
		if !strings.Contains(u.Status.Message, "did not reach terminal state") {
			t.Errorf("unit message %q, want KubeRay's reason (the Ray job did not reach a terminal state)", u.Status.Message)
		}
		return nil
	})
	t.Logf("RayJob %s Failed %v after its release: %s: %s", rj.Name, time.Since(released).Round(time.Second), j.Status.Reason, j.Status.Message)
	if j.Status.Reason != rayv1.JobDeploymentStatusTransitionGracePeriodExceeded {
		t.Errorf("RayJob failed with reason %q, want %q", j.Status.Reason, rayv1.JobDeploymentStatusTransitionGracePeriodExceeded)
	}
	var job batchv1.Job
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: rj.Name}, &job); err != nil {
		t.Fatal(err)
	}
	if job.Status.Succeeded != 1 {
		t.Errorf("submitter Job: %d pods succeeded, want 1", job.Status.Succeeded)
	}
	// shutdownAfterJobFinishes: the operator deletes the cluster.
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: clusterName}, &rayv1.RayCluster{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("RayCluster %s: %v; want it deleted", clusterName, err)
		}
		pods, err := operatorPods(ctx, ns, "RayCluster", clusterName)
		if err != nil {
			return err
		}
		if len(pods) > 0 {
			return fmt.Errorf("%d pods of RayCluster %s left", len(pods), clusterName)
		}
		return nil
	})
}

// madeForRayJob says what the operator made for a RayJob: a RayCluster or a
// submitter Job it controls; empty when nothing.
func madeForRayJob(t *testing.T, ns string, rj *rayv1.RayJob) string {
	t.Helper()
	ctx := context.Background()
	var clusters rayv1.RayClusterList
	if err := k8sClient.List(ctx, &clusters, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, c := range clusters.Items {
		if metav1.IsControlledBy(&c, rj) {
			return "RayCluster " + c.Name
		}
	}
	var job batchv1.Job
	switch err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: rj.Name}, &job); {
	case err == nil:
		return "Job " + job.Name
	case !apierrors.IsNotFound(err):
		t.Fatal(err)
	}
	return ""
}

// TestRayJobSuspendedWithoutShutdownFails: KubeRay refuses a suspended RayJob
// that would keep its cluster after it ends (shutdownAfterJobFinishes
// false): it marks it ValidationFailed, and its unit turns Failed saying
// why.
func TestRayJobSuspendedWithoutShutdownFails(t *testing.T) {
	needRayOperator(t)
	ns, quota := rayNamespace, "rayjob-invalid-team"
	integ := integration(t, "rayjob")
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	rj := extensionstest.MakeRayJob("rj-keeps-cluster", ns, rayClusterSpec(1).Obj()).Quota(quota).ShutdownAfterJobFinishes(false).Obj()
	create(t, rj)
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitPhase(ctx, ns, integ.UnitName(rj.Name))
		if err != nil {
			return err
		}
		if u.Status.Phase != schedulingv1alpha1.Failed || !strings.Contains(u.Status.Message, "ValidationFailed") || !strings.Contains(u.Status.Message, "shutdownAfterJobFinishes") {
			return fmt.Errorf("unit phase %s (%q); want Failed, saying why", u.EffectivePhase(), u.Status.Message)
		}
		return nil
	})
	if made := madeForRayJob(t, ns, rj); made != "" {
		t.Errorf("the operator made %s for the refused RayJob %s", made, rj.Name)
	}
}
