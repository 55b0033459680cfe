package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/seeds"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// The tests in this file run the real Argo Workflows workflow-controller
// (the release whose API go.mod pins, built by `make tools`) on the local
// cluster: koord-queue releases a Workflow, the controller creates its
// step's pod, kwok runs the pod to success (its wait and main containers
// exit 0), and the controller marks the workflow Succeeded. Argo's executor
// never runs (kwok starts no container): no task result, artifact, output or
// log is made; the controller goes by the pod's status alone.

// argoNamespace is the only namespace whose workflows the workflow-controller
// manages; elsewhere (TestFrameworksAreQueuedAndReleased,
// TestSeedArgoWorkflow) no controller runs them.
const argoNamespace = "argo-workflows"

var workflowController operator

// needWorkflowController starts the workflow-controller for argoNamespace
// the first time a test needs it.
func needWorkflowController(t *testing.T) {
	t.Helper()
	workflowController.need(t, "the Argo workflow-controller", argoNamespace, func(ctx context.Context) error {
		_, err := localCluster.StartWorkflowController(ctx, cluster.WorkflowControllerOptions{Namespace: argoNamespace})
		return err
	})
}

func getWorkflow(ctx context.Context, ns, name string) (*wfv1.Workflow, error) {
	wf := &wfv1.Workflow{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, wf); err != nil {
		return nil, fmt.Errorf("workflow %s/%s: %w", ns, name, err)
	}
	return wf, nil
}

// setQuotaCPU sets an ElasticQuota's max cpu.
func setQuotaCPU(t *testing.T, quota *elasticquotav1alpha1.ElasticQuota, cpu string) {
	t.Helper()
	patch := client.MergeFrom(quota.DeepCopy())
	quota.Spec.Max[corev1.ResourceCPU] = resource.MustParse(cpu)
	if err := k8sClient.Patch(context.Background(), quota, patch); err != nil {
		t.Fatalf("setting quota %s's max cpu to %s: %v", quota.Name, cpu, err)
	}
}

// waitWorkflowHeld waits, while name's quota is too small for it, until the
// workflow-controller has taken up the workflow (its phase is Running, or
// Pending) and the workflow is held (spec.suspend or a running
// koord-queue-suspend step), and its unit waits in the queue with a
// reason. No pod of it may exist meanwhile: the quota cannot admit it, so
// any pod would have been started before admission. It returns the
// workflow as last seen.
func waitWorkflowHeld(t *testing.T, ns, name string) *wfv1.Workflow {
	t.Helper()
	integ := integration(t, "workflow")
	var wf *wfv1.Workflow
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		pods, err := operatorPods(ctx, ns, "Workflow", name)
		if err != nil {
			return err
		}
		if len(pods) > 0 {
			t.Fatalf("%d pods of workflow %s exist before its unit is admitted", len(pods), name)
		}
		job, err := getJob(ctx, integ, ns, name)
		if err != nil {
			return err
		}
		wf = job.Object().(*wfv1.Workflow)
		view, err := unitView(ctx, ns, integ.UnitName(name))
		if err != nil {
			return err
		}
		// Taken up: Running, or Pending when the controller's first pass
		// came before its throttler admitted the workflow (it postpones
		// it, and a suspended workflow stays Pending until resumed).
		takenUp := wf.Status.Phase == wfv1.WorkflowRunning || wf.Status.Phase == wfv1.WorkflowPending
		if !takenUp || !job.IsSuspended() || view.Phase != schedulingv1alpha1.Enqueued || view.Reason == "" {
			return fmt.Errorf("workflow %s: phase %q, held %v; its unit %s (%q); want the controller to have taken it up, the workflow held, its unit waiting with a reason",
				name, wf.Status.Phase, job.IsSuspended(), view.Phase, view.Reason)
		}
		return nil
	})
	return wf
}

// checkWorkflowRan checks that the workflow's main step ran as one pod,
// bound to a node, with Argo's wait and main containers, that succeeded
// (kwok's stage terminated both with exit code 0), and that the step's node
// Succeeded.
func checkWorkflowRan(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	wf, err := getWorkflow(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	var podNodes []string
	for _, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod {
			podNodes = append(podNodes, fmt.Sprintf("%s %s", n.TemplateName, n.Phase))
		}
	}
	if want := []string{"main Succeeded"}; !slices.Equal(podNodes, want) {
		t.Errorf("workflow %s's pod nodes: %q, want %q", name, podNodes, want)
	}
	pods, err := operatorPods(ctx, ns, "Workflow", name)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 {
		t.Fatalf("workflow %s has %d pods, want 1", name, len(pods))
	}
	p := pods[0]
	var containers []string
	for _, c := range p.Spec.Containers {
		containers = append(containers, c.Name)
	}
	slices.Sort(containers)
	if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodSucceeded || !slices.Equal(containers, []string{"main", "wait"}) {
		t.Errorf("pod %s of workflow %s: node %q, phase %s, containers %q; want bound, Succeeded, containers main and wait",
			p.Name, name, p.Spec.NodeName, p.Status.Phase, containers)
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Terminated == nil || c.State.Terminated.ExitCode != 0 {
			t.Errorf("pod %s of workflow %s: container %s state %+v, want terminated with exit code 0", p.Name, name, c.Name, c.State)
		}
	}
}

// TestArgoSeedWorkflowRunsWithTheWorkflowController applies seed 004's
// Argo Workflow (5 CPU, spec.suspend) unchanged but for its namespace,
// where it is queued to the quota named after the namespace. While that
// quota is too small (4 CPU) the workflow-controller takes the workflow up
// but starts no pod of it. Once the quota has room, koord-queue admits it
// and the extension resumes it as `argo resume` does; the controller runs
// its step's pod, kwok runs the pod to success, the controller marks the
// workflow Succeeded and its unit turns Succeed. A second workflow of the
// same quota, submitted meanwhile, waits with a reason and has no pod while
// the first holds the quota, then runs to success in turn.
func TestArgoSeedWorkflowRunsWithTheWorkflowController(t *testing.T) {
	needWorkflowController(t)
	ns := argoNamespace
	integ := integration(t, "workflow")
	quota := wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "4").Max(corev1.ResourceMemory, "20Gi").Obj()
	create(t, quota)
	monitor := monitorUsage(ns, ns)
	objs, err := seeds.Objects("004-argo-workflow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs[0].SetNamespace(ns) // as kubectl apply -n does
	create(t, objs[0])
	first := objs[0].GetName()

	wf := waitWorkflowHeld(t, ns, first)
	if len(wf.Status.Nodes) > 0 {
		t.Errorf("workflow %s has %d nodes while suspended, want none", first, len(wf.Status.Nodes))
	}

	setQuotaCPU(t, quota, "5")
	waitReleased(t, integ, ns, first)
	const second = "second-workflow"
	create(t, extensionstest.MakeWorkflow(second, ns).Command("true").QueueTemplate().Suspend(true).MinResources("cpu: 5\nmemory: 5Gi").Obj())

	// The second waits, with a reason, and has no pod while the first holds
	// the quota. Its pods are listed before the first's unit is read: a pod
	// seen then existed while the first held it.
	var sawFirstRun, sawSecondWait bool
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		secondPods, err := operatorPods(ctx, ns, "Workflow", second)
		if err != nil {
			return err
		}
		u, err := unitPhase(ctx, ns, integ.UnitName(first))
		if err != nil {
			return err
		}
		if queueunit.HoldsQuota(u) && len(secondPods) > 0 {
			t.Fatalf("%d pods of %s exist while %s holds the quota", len(secondPods), second, first)
		}
		firstPods, err := operatorPods(ctx, ns, "Workflow", first)
		if err != nil {
			return err
		}
		sawFirstRun = sawFirstRun || countLive(firstPods, true) == 1
		if u.Status.Phase != schedulingv1alpha1.Succeed {
			if view, err := unitView(ctx, ns, integ.UnitName(second)); err == nil {
				sawSecondWait = sawSecondWait || view.Phase == schedulingv1alpha1.Enqueued && view.Reason != ""
			}
			return fmt.Errorf("%s: unit phase %s, %d pods of it made by the controller (%d live); waiting for it to succeed",
				first, u.EffectivePhase(), len(firstPods), countLive(firstPods, true))
		}
		return nil
	})
	if !sawFirstRun {
		t.Errorf("never saw the pod of %s run", first)
	}
	if !sawSecondWait {
		t.Errorf("never saw %s wait in the queue with a reason while %s ran", second, first)
	}
	waitSucceeded(t, integ, ns, first)
	waitReleased(t, integ, ns, second)
	waitSucceeded(t, integ, ns, second)
	checkWorkflowRan(t, ns, first)
	checkWorkflowRan(t, ns, second)
	if peak := monitor.Peak(); peak.Cmp(resource.MustParse("5")) > 0 {
		t.Errorf("%s held %s cpu at its peak, over its max of 5", ns, peak.String())
	}
}

// TestArgoWorkflowSubmittedRunningWaitsAtItsQueueStep: a workflow submitted
// running (no spec.suspend) whose first step is the koord-queue-suspend
// template, in a quota too small for it. The workflow-controller takes it
// up and the workflow is held (at its queue step, or by spec.suspend if the
// extension set it before the controller got there), and no pod of its
// main step exists. Once the quota has room, the unit is admitted, the
// extension completes the queue step, and the controller runs main to
// success.
func TestArgoWorkflowSubmittedRunningWaitsAtItsQueueStep(t *testing.T) {
	needWorkflowController(t)
	ns, quotaName := argoNamespace, "argo-running"
	integ := integration(t, "workflow")
	quota := wrappers.MakeElasticQuota(quotaName, ns).Max(corev1.ResourceCPU, "4").Max(corev1.ResourceMemory, "20Gi").Obj()
	create(t, quota)
	const name = "submitted-running"
	create(t, extensionstest.MakeWorkflow(name, ns).Command("true").Quota(quotaName).QueueStepFirst().MinResources("cpu: 5").Obj())

	wf := waitWorkflowHeld(t, ns, name)
	var queueNode *wfv1.NodeStatus
	for _, n := range wf.Status.Nodes {
		if n.TemplateName == schedulingv1alpha1.ArgoSuspendTemplate {
			queueNode = &n
		}
	}
	// Which of the two came first is a race the test does not control; say which.
	if queueNode != nil {
		t.Logf("the controller reached the queue step first: node %s %s; spec.suspend %v", queueNode.Name, queueNode.Phase, wf.Spec.Suspend)
	} else {
		t.Logf("the extension set spec.suspend before the controller reached the queue step")
	}

	setQuotaCPU(t, quota, "5")
	waitReleased(t, integ, ns, name)
	waitSucceeded(t, integ, ns, name)
	checkWorkflowRan(t, ns, name)
	wf, err := getWorkflow(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypeSuspend || n.Type == wfv1.NodeTypePod {
			steps = append(steps, fmt.Sprintf("%s %s %s", n.TemplateName, n.Type, n.Phase))
		}
	}
	slices.Sort(steps)
	if want := []string{"koord-queue-suspend Suspend Succeeded", "main Pod Succeeded"}; !slices.Equal(steps, want) {
		t.Errorf("workflow %s's steps: %q, want %q", name, steps, want)
	}
}
