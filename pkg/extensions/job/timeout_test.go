package job

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
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

// TestReconcileRunningTimeout: with a running timeout, a released Job
// none of whose pods takes a node within it is suspended, its unit backs
// off (TimeoutBackoff, Evicted BackoffTimeout) and gives its quota back
// once the pods are gone; after the backoff the unit is Enqueued again, and
// released anew once admitted. Each step says when to look again.
func TestReconcileRunningTimeout(t *testing.T) {
	const timeout, backoff = time.Minute, 5 * time.Minute
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	j := extensionstest.MakeJob("j", "ns").Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
	j.UID = "uid-j"
	c := frameworktest.ClientBuilder(t, testScheme(t)).WithObjects(j).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	recorder := record.NewFakeRecorder(100)
	r := framework.NewJobReconciler(c, c, recorder, Integration(), framework.WithClock(clk),
		framework.WithStatusDelay(0), framework.WithRunningTimeout(timeout, backoff))
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
	type seen struct {
		Phase        schedulingv1alpha1.QueueUnitPhase
		Evicted      string
		Admissions   int
		Suspended    bool
		RequeueAfter time.Duration
	}
	var u schedulingv1alpha1.QueueUnit
	look := func() seen {
		t.Helper()
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		var job batchv1.Job
		if err := c.Get(ctx, req.NamespacedName, &u); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, req.NamespacedName, &job); err != nil {
			t.Fatal(err)
		}
		s := seen{Phase: u.Status.Phase, Admissions: len(u.Status.Admissions), Suspended: (*Job)(&job).IsSuspended(), RequeueAfter: res.RequeueAfter}
		if cond := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitEvicted); cond != nil {
			s.Evicted = string(cond.Status) + " " + cond.Reason
		}
		return s
	}
	admit := func() {
		t.Helper()
		queueunit.Admit(&u, "team-a", queueunit.Request(&u), nil, nil, metav1.NewTime(clk.Now()))
		if err := c.Status().Update(ctx, &u); err != nil {
			t.Fatal(err)
		}
	}
	look() // creates the unit
	admit()
	if diff := cmp.Diff(seen{Phase: schedulingv1alpha1.Dequeued, Admissions: 1}, look()); diff != "" {
		t.Errorf("admitted: released (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(seen{Phase: schedulingv1alpha1.Dequeued, Admissions: 1, RequeueAfter: timeout}, look()); diff != "" {
		t.Errorf("released: looks again at the deadline (-want +got):\n%s", diff)
	}
	pending := wrappers.MakePod("j-pending", "ns").ControlledBy(j, batchv1.SchemeGroupVersion.WithKind("Job")).Obj()
	if err := c.Create(ctx, pending); err != nil {
		t.Fatal(err)
	}
	clk.Step(timeout - time.Second)
	if diff := cmp.Diff(seen{Phase: schedulingv1alpha1.Dequeued, Admissions: 1, RequeueAfter: time.Second}, look()); diff != "" {
		t.Errorf("a pod waiting for a node, before the deadline (-want +got):\n%s", diff)
	}
	clk.Step(time.Second)
	if diff := cmp.Diff(seen{Phase: schedulingv1alpha1.TimeoutBackoff, Evicted: "True BackoffTimeout", Admissions: 1, Suspended: true, RequeueAfter: backoff}, look()); diff != "" {
		t.Errorf("no pod on a node at the deadline: suspended, backing off (-want +got):\n%s", diff)
	}
	if e := lastEvent(recorder); e == "" {
		t.Error("no event says why the job was suspended")
	} else {
		t.Logf("event: %s", e)
	}
	if err := c.Delete(ctx, pending); err != nil { // the Job controller's part
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	if diff := cmp.Diff(seen{Phase: schedulingv1alpha1.TimeoutBackoff, Evicted: "True BackoffTimeout", Suspended: true, RequeueAfter: backoff - time.Minute}, look()); diff != "" {
		t.Errorf("its pods gone: quota given back, still backing off (-want +got):\n%s", diff)
	}
	clk.Step(backoff - time.Minute)
	if diff := cmp.Diff(seen{Phase: schedulingv1alpha1.Enqueued, Evicted: "True BackoffTimeout", Suspended: true}, look()); diff != "" {
		t.Errorf("after the backoff: queued again (-want +got):\n%s", diff)
	}
	admit()
	look() // released again
	if diff := cmp.Diff(seen{Phase: schedulingv1alpha1.Dequeued, Evicted: "False Readmitted", Admissions: 1, RequeueAfter: timeout}, look()); diff != "" {
		t.Errorf("admitted again: released again (-want +got):\n%s", diff)
	}
}

// TestReconcileRunningTimeoutCountsFromRelease: the running timeout counts
// from the Job's release, not from its admission: a Job released long after
// its unit was admitted (the extension was away, say) has its whole timeout
// to run a pod, and the release is recorded on the Job.
func TestReconcileRunningTimeoutCountsFromRelease(t *testing.T) {
	const timeout = time.Minute
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	j := extensionstest.MakeJob("j", "ns").Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
	c := frameworktest.ClientBuilder(t, testScheme(t)).WithObjects(j).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	r := framework.NewJobReconciler(c, c, record.NewFakeRecorder(100), Integration(), framework.WithClock(clk),
		framework.WithStatusDelay(0), framework.WithRunningTimeout(timeout, time.Hour))
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
	type seen struct {
		Phase            schedulingv1alpha1.QueueUnitPhase
		Suspended        bool
		DequeueTimestamp string
		RequeueAfter     time.Duration
	}
	look := func() seen {
		t.Helper()
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		var u schedulingv1alpha1.QueueUnit
		var job batchv1.Job
		if err := c.Get(ctx, req.NamespacedName, &u); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, req.NamespacedName, &job); err != nil {
			t.Fatal(err)
		}
		return seen{Phase: u.Status.Phase, Suspended: (*Job)(&job).IsSuspended(),
			DequeueTimestamp: job.Annotations[schedulingv1alpha1.AnnotationJobDequeueTimestamp], RequeueAfter: res.RequeueAfter}
	}
	look() // creates the unit
	var u schedulingv1alpha1.QueueUnit
	if err := c.Get(ctx, req.NamespacedName, &u); err != nil {
		t.Fatal(err)
	}
	queueunit.Admit(&u, "team-a", queueunit.Request(&u), nil, nil, metav1.NewTime(clk.Now()))
	if err := c.Status().Update(ctx, &u); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * timeout)
	const releasedAt = "2026-12-01 00:02:00 +0000 UTC"
	if diff := cmp.Diff(seen{Phase: schedulingv1alpha1.Dequeued, DequeueTimestamp: releasedAt}, look()); diff != "" {
		t.Errorf("released two timeouts after its admission: released, not backed off (-want +got):\n%s", diff)
	}
	clk.Step(timeout - time.Second)
	if diff := cmp.Diff(seen{Phase: schedulingv1alpha1.Dequeued, DequeueTimestamp: releasedAt, RequeueAfter: time.Second}, look()); diff != "" {
		t.Errorf("just before the timeout after its release (-want +got):\n%s", diff)
	}
	clk.Step(time.Second)
	if diff := cmp.Diff(seen{Phase: schedulingv1alpha1.TimeoutBackoff, Suspended: true, DequeueTimestamp: releasedAt, RequeueAfter: time.Hour}, look()); diff != "" {
		t.Errorf("the timeout after its release: backed off (-want +got):\n%s", diff)
	}
}

// TestReconcileRunningTimeoutSparesRunningJobs: a released Job one of whose
// pods took a node is left running past the timeout; without a timeout a
// released Job is never looked at again for it.
func TestReconcileRunningTimeoutSparesRunningJobs(t *testing.T) {
	for name, tc := range map[string]struct {
		timeout time.Duration
		onNode  bool
	}{
		"a pod on a node":          {timeout: time.Minute, onNode: true},
		"no timeout, no pod ready": {},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktesting.NewFakeClock(time.Now())
			c, j, reconcile := admittedJob(t, framework.WithClock(clk), framework.WithStatusDelay(0), framework.WithRunningTimeout(tc.timeout, time.Minute))
			p := wrappers.MakePod("j-0", "ns").ControlledBy(j, batchv1.SchemeGroupVersion.WithKind("Job"))
			if tc.onNode {
				p = p.Node("n1")
			}
			if err := c.Create(ctx, p.Obj()); err != nil {
				t.Fatal(err)
			}
			clk.Step(time.Hour)
			u, res := reconcile()
			want := schedulingv1alpha1.Dequeued
			if tc.onNode {
				want = schedulingv1alpha1.Running
			}
			if u.Status.Phase != want || res.RequeueAfter != 0 {
				t.Errorf("an hour on: phase %s, look again after %s; want %s, never", u.Status.Phase, res.RequeueAfter, want)
			}
		})
	}
}
