package job

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// admittedJob is a Job of parallelism 2 whose unit its reconciler, made
// with opts, created and then released once the unit was admitted, and the
// function that reconciles it again and returns its unit.
func admittedJob(t *testing.T, opts ...framework.Option) (client.Client, *batchv1.Job, func() (*schedulingv1alpha1.QueueUnit, ctrl.Result)) {
	t.Helper()
	ctx := context.Background()
	j := extensionstest.MakeJob("j", "ns").Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
	j.UID = "uid-now"
	c := frameworktest.ClientBuilder(t, testScheme(t)).WithObjects(j).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	r := framework.NewJobReconciler(c, c, record.NewFakeRecorder(100), Integration(), opts...)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
	reconcile := func() (*schedulingv1alpha1.QueueUnit, ctrl.Result) {
		t.Helper()
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		u := &schedulingv1alpha1.QueueUnit{}
		if err := c.Get(ctx, req.NamespacedName, u); err != nil {
			t.Fatal(err)
		}
		return u, res
	}
	u, _ := reconcile() // creates the unit
	queueunit.Admit(u, "team-a", queueunit.Request(u), nil, nil, metav1.Now())
	if err := c.Status().Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	reconcile() // releases the Job
	return c, j, reconcile
}

// TestReconcileCountsPodsOnNodes: an admitted Job's admissions[].running
// counts its pods that a node took, not those still pending nor an earlier
// Job's of the same name, and PodsReady waits for all of them.
func TestReconcileCountsPodsOnNodes(t *testing.T) {
	ctx := context.Background()
	c, j, reconcileJob := admittedJob(t, framework.WithStatusDelay(0))
	reconcile := func() *schedulingv1alpha1.QueueUnit {
		t.Helper()
		u, _ := reconcileJob()
		return u
	}
	jobGVK := batchv1.SchemeGroupVersion.WithKind("Job")
	earlier := j.DeepCopy()
	earlier.UID = "uid-earlier"
	pending := wrappers.MakePod("j-pending", "ns").ControlledBy(j, jobGVK).Obj()
	for _, p := range []*corev1.Pod{
		wrappers.MakePod("j-bound", "ns").ControlledBy(j, jobGVK).Node("n1").Phase(corev1.PodRunning).Obj(),
		pending,
		wrappers.MakePod("j-of-an-earlier-job", "ns").ControlledBy(earlier, jobGVK).Node("n1").Phase(corev1.PodRunning).Obj(),
	} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	type seen struct {
		Running   int64
		PodsReady string
	}
	look := func(u *schedulingv1alpha1.QueueUnit) seen {
		s := seen{Running: u.Status.Admissions[0].Running}
		if cond := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitPodsReady); cond != nil {
			s.PodsReady = string(cond.Status) + ": " + cond.Message
		}
		return s
	}
	if diff := cmp.Diff(seen{Running: 1, PodsReady: "False: pod set main has 1 of 2 pods scheduled"}, look(reconcile())); diff != "" {
		t.Errorf("one pod on a node (-want +got):\n%s", diff)
	}
	pending.Spec.NodeName = "n2"
	if err := c.Update(ctx, pending); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seen{Running: 2, PodsReady: "True: All 2 pods of the job are scheduled"}, look(reconcile())); diff != "" {
		t.Errorf("both pods on nodes (-want +got):\n%s", diff)
	}
}

// TestReconcileDelaysCountChanges: a change of pod counts alone, the phase
// Running with it, waits up to the status delay to be written, and goes at
// once with a change a reader needs now (every pod on a node: PodsReady).
func TestReconcileDelaysCountChanges(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	c, j, reconcile := admittedJob(t, framework.WithClock(clk), framework.WithStatusDelay(time.Second))
	bound := wrappers.MakePod("j-bound", "ns").ControlledBy(j, batchv1.SchemeGroupVersion.WithKind("Job")).Node("n1").Obj()
	if err := c.Create(ctx, bound); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Running      int64
		Phase        schedulingv1alpha1.QueueUnitPhase
		RequeueAfter time.Duration
	}
	look := func() seen {
		t.Helper()
		u, res := reconcile()
		return seen{Running: u.Status.Admissions[0].Running, Phase: u.Status.Phase, RequeueAfter: res.RequeueAfter}
	}
	if diff := cmp.Diff(seen{Running: 0, Phase: schedulingv1alpha1.Dequeued, RequeueAfter: time.Second}, look()); diff != "" {
		t.Errorf("a pod on a node, just seen: deferred (-want +got):\n%s", diff)
	}
	clk.Step(400 * time.Millisecond)
	if diff := cmp.Diff(seen{Running: 0, Phase: schedulingv1alpha1.Dequeued, RequeueAfter: 600 * time.Millisecond}, look()); diff != "" {
		t.Errorf("0.4s later: still deferred, for what is left of the delay (-want +got):\n%s", diff)
	}
	clk.Step(600 * time.Millisecond)
	if diff := cmp.Diff(seen{Running: 1, Phase: schedulingv1alpha1.Running}, look()); diff != "" {
		t.Errorf("the delay over: written (-want +got):\n%s", diff)
	}

	// The second pod on a node: all are, which goes at once.
	second := wrappers.MakePod("j-second", "ns").ControlledBy(j, batchv1.SchemeGroupVersion.WithKind("Job")).Node("n2").Obj()
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seen{Running: 2, Phase: schedulingv1alpha1.Running}, look()); diff != "" {
		t.Errorf("all pods on nodes: written at once (-want +got):\n%s", diff)
	}
}
