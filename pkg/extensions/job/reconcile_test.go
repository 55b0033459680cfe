package job

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/koord-queue/koord-queue/apis"
	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestReconcileRunningJobs: which jobs that run without a unit the
// reconciler takes in (a unit, and the job suspended until it is admitted),
// and which it leaves alone.
func TestReconcileRunningJobs(t *testing.T) {
	scheme := testScheme(t)
	cases := map[string]struct {
		job        *batchv1.Job
		scope      framework.Scope
		wantQueued bool
		// wantEvent starts the first Warning event recorded, if any.
		wantEvent string
	}{
		"--manage-all-jobs takes in an unlabelled Job submitted running": {
			job:        extensionstest.MakeJob("j", "ns").Suspend(false).Request("cpu", "1").Obj(),
			scope:      framework.Scope{ManageAllJobs: true},
			wantQueued: true,
			wantEvent:  "Warning SubmittedRunning Submitted running: suspended until its QueueUnit j is admitted",
		},
		"a labelled Job submitted running is taken in": {
			job:        extensionstest.MakeJob("j", "ns").Quota("team-a").Suspend(false).Request("cpu", "1").Obj(),
			wantQueued: true,
			wantEvent:  "Warning SubmittedRunning Submitted running: suspended until quota team-a admits it",
		},
		"a Job submitted running in a namespace an ElasticQuota serves is taken in": {
			job:        extensionstest.MakeJob("j", "served").Suspend(false).Request("cpu", "1").Obj(),
			wantQueued: true,
			wantEvent:  "Warning SubmittedRunning Submitted running: suspended until quota team-b admits it",
		},
		"an unlabelled Job submitted running elsewhere is left alone": {
			job: extensionstest.MakeJob("j", "ns").Suspend(false).Request("cpu", "1").Obj(),
		},
		"with --leave-jobs-submitted-running a labelled Job submitted running is left alone (Koord-Queue v1.8)": {
			job:   extensionstest.MakeJob("j", "ns").Quota("team-a").Suspend(false).Request("cpu", "1").Obj(),
			scope: framework.Scope{LeaveJobsSubmittedRunning: true},
		},
		"with --leave-jobs-submitted-running a labelled Job submitted suspended is queued": {
			job:        extensionstest.MakeJob("j", "ns").Quota("team-a").Request("cpu", "1").Obj(),
			scope:      framework.Scope{LeaveJobsSubmittedRunning: true},
			wantQueued: true,
		},
		"a released Job that runs without its unit lost it, and is taken in": {
			job: extensionstest.MakeJob("j", "ns").Quota("team-a").Suspend(false).Request("cpu", "1").
				Annotation(schedulingv1alpha1.AnnotationReleasedBy, "uid-of-a-deleted-unit").Obj(),
			wantQueued: true,
			wantEvent:  "Warning QueueUnitDeleted The job's QueueUnit was deleted while the job ran",
		},
	}
	served := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Namespace: "quotas",
		Annotations: map[string]string{elasticquotav1alpha1.AnnotationQuotaNamespaces: `["served"]`}}}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := frameworktest.ClientBuilder(t, scheme).WithObjects(tc.job, served).
				WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
			recorder := record.NewFakeRecorder(100)
			r := framework.NewJobReconciler(c, c, recorder, Integration(), framework.WithScope(tc.scope))
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.job)}
			// One pass creates the unit and suspends the job.
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			var unit schedulingv1alpha1.QueueUnit
			err := c.Get(ctx, req.NamespacedName, &unit)
			if queued := err == nil; queued != tc.wantQueued {
				t.Errorf("unit exists %v (get: %v), want %v", queued, err, tc.wantQueued)
			} else if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			var got batchv1.Job
			if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
				t.Fatal(err)
			}
			if suspended := (*Job)(&got).IsSuspended(); suspended != tc.wantQueued {
				t.Errorf("job suspended %v, want %v", suspended, tc.wantQueued)
			}
			if got := firstWarning(recorder); !strings.HasPrefix(got, tc.wantEvent) || (tc.wantEvent == "") != (got == "") {
				t.Errorf("first Warning event %q, want one starting %q", got, tc.wantEvent)
			}
			if tc.wantEvent != "" && !strings.Contains(unit.Status.Message, strings.SplitN(tc.wantEvent, " ", 3)[2]) {
				t.Errorf("unit message %q, want it to say what the event says", unit.Status.Message)
			}
		})
	}
}

// firstWarning is the first Warning event recorded, empty if none.
func firstWarning(r *record.FakeRecorder) string {
	for {
		select {
		case e := <-r.Events:
			if strings.HasPrefix(e, "Warning ") {
				return e
			}
		default:
			return ""
		}
	}
}

// TestReconcileFollowsEveryPhase: a Job is released in every phase
// queueunit calls admitted (Koord-Queue's gang-scheduling phases included)
// and held in every phase it calls waiting.
func TestReconcileFollowsEveryPhase(t *testing.T) {
	scheme := testScheme(t)
	cases := map[schedulingv1alpha1.QueueUnitPhase]bool{ // phase: want released
		schedulingv1alpha1.Enqueued: false, schedulingv1alpha1.Reserved: false, schedulingv1alpha1.TimeoutBackoff: false,
		schedulingv1alpha1.Dequeued: true, schedulingv1alpha1.Running: true,
		schedulingv1alpha1.SchedReady: true, schedulingv1alpha1.SchedSucceed: true, schedulingv1alpha1.SchedFailed: true,
	}
	for phase, wantReleased := range cases {
		t.Run(string(phase), func(t *testing.T) {
			ctx := context.Background()
			j := extensionstest.MakeJob("j", "ns").Quota("team-a").Request("cpu", "1").Obj()
			c := frameworktest.ClientBuilder(t, scheme).WithObjects(j).
				WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
			r := framework.NewJobReconciler(c, c, record.NewFakeRecorder(100), Integration())
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
			if _, err := r.Reconcile(ctx, req); err != nil { // creates the unit
				t.Fatalf("Reconcile: %v", err)
			}
			unit := &schedulingv1alpha1.QueueUnit{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: Integration().UnitName("j")}, unit); err != nil {
				t.Fatal(err)
			}
			unit.Status.Phase = phase
			if err := c.Status().Update(ctx, unit); err != nil {
				t.Fatal(err)
			}
			// Suspended when it should run, running when it should wait.
			if err := c.Get(ctx, req.NamespacedName, j); err != nil {
				t.Fatal(err)
			}
			j.Spec.Suspend = ptr.To(wantReleased)
			if err := c.Update(ctx, j); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			var got batchv1.Job
			if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
				t.Fatal(err)
			}
			if released := !(*Job)(&got).IsSuspended(); released != wantReleased {
				t.Errorf("unit in phase %s: job released %v, want %v", phase, released, wantReleased)
			}
		})
	}
}

// testScheme knows koord-queue's types and batch Jobs.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// TestReconcilePartialAdmission: a Job whose unit is admitted with fewer
// pods runs that many, keeps doing so whatever its spec is changed to, and
// gets its own parallelism back when it is suspended again, its unit still
// asking for all of it.
func TestReconcilePartialAdmission(t *testing.T) {
	ctx := context.Background()
	scheme := testScheme(t)
	j := extensionstest.MakeJob("j", "ns").Quota("team-a").Parallelism(4).Request("cpu", "1").
		Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "2").Obj()
	c := frameworktest.ClientBuilder(t, scheme).WithObjects(j).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	recorder := record.NewFakeRecorder(100)
	r := framework.NewJobReconciler(c, c, recorder, Integration())
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	unitKey := client.ObjectKey{Namespace: "ns", Name: Integration().UnitName("j")}
	setUnit := func(change func(u *schedulingv1alpha1.QueueUnit)) {
		t.Helper()
		u := &schedulingv1alpha1.QueueUnit{}
		if err := c.Get(ctx, unitKey, u); err != nil {
			t.Fatal(err)
		}
		change(u)
		if err := c.Status().Update(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	type jobState struct {
		Suspended   bool
		Parallelism int32
		Original    string
	}
	job := func() jobState {
		t.Helper()
		var got batchv1.Job
		if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
			t.Fatal(err)
		}
		return jobState{(*Job)(&got).IsSuspended(), ptr.Deref(got.Spec.Parallelism, 1), got.Annotations[schedulingv1alpha1.AnnotationOriginalParallelism]}
	}
	expect := func(step string, want jobState) {
		t.Helper()
		if diff := cmp.Diff(want, job()); diff != "" {
			t.Errorf("%s: the Job (-want +got):\n%s", step, diff)
		}
	}
	now := metav1.Now()

	reconcile() // creates the unit
	var u schedulingv1alpha1.QueueUnit
	if err := c.Get(ctx, unitKey, &u); err != nil {
		t.Fatal(err)
	}
	if got := u.Spec.PodSets[0].MinCount; got == nil || *got != 2 {
		t.Fatalf("the unit's minCount is %v, want 2", got)
	}

	setUnit(func(u *schedulingv1alpha1.QueueUnit) {
		queueunit.Admit(u, "team-a", queueunit.Request(u), map[string]int32{"main": 2}, nil, now)
	})
	reconcile()
	expect("admitted with 2 of its 4 pods", jobState{Suspended: false, Parallelism: 2, Original: "4"})
	if e := lastEvent(recorder); !strings.Contains(e, "Started The QueueUnit was admitted by queue team-a with 2 of 4 pods of pod set main (partial admission); the job is released") {
		t.Errorf("last event %q, want it to say the job runs 2 of its 4 pods", e)
	}

	var running batchv1.Job
	if err := c.Get(ctx, req.NamespacedName, &running); err != nil {
		t.Fatal(err)
	}
	running.Spec.Parallelism = ptr.To[int32](3)
	if err := c.Update(ctx, &running); err != nil {
		t.Fatal(err)
	}
	reconcile()
	expect("its parallelism raised while it runs", jobState{Suspended: false, Parallelism: 2, Original: "4"})

	setUnit(func(u *schedulingv1alpha1.QueueUnit) {
		queueunit.Evict(u, schedulingv1alpha1.EvictedByPreemption, "preempted", now)
	})
	reconcile()
	expect("evicted: suspended first", jobState{Suspended: true, Parallelism: 2, Original: "4"})
	reconcile()
	expect("then given its own parallelism back", jobState{Suspended: true, Parallelism: 4})
	reconcile()
	if err := c.Get(ctx, unitKey, &u); err != nil {
		t.Fatal(err)
	}
	if got := u.Spec.PodSets[0].Count; got != 4 {
		t.Errorf("the waiting unit asks for %d pods, want the Job's 4", got)
	}
}

// TestReconcileAdmittedWholeBeforeItsCountsCameBack: a Job suspended with
// its parallelism still lowered, whose unit is admitted whole again, runs
// all its pods.
func TestReconcileAdmittedWholeBeforeItsCountsCameBack(t *testing.T) {
	ctx := context.Background()
	j := extensionstest.MakeJob("j", "ns").Quota("team-a").Parallelism(2).Request("cpu", "1").
		Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "2").
		Annotation(schedulingv1alpha1.AnnotationOriginalParallelism, "4").Obj()
	u := wrappers.MakeQueueUnit(Integration().UnitName("j"), "ns").PodSet("main", 4, "cpu", "1").MinCount(2).Obj()
	u.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(j, Integration().GVK)}
	queueunit.Admit(u, "team-a", queueunit.Request(u), nil, nil, metav1.Now())
	c := frameworktest.ClientBuilder(t, testScheme(t)).WithObjects(j, u).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	r := framework.NewJobReconciler(c, c, record.NewFakeRecorder(100), Integration())
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	var got batchv1.Job
	if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	if (*Job)(&got).IsSuspended() || ptr.Deref(got.Spec.Parallelism, 1) != 4 || got.Annotations[schedulingv1alpha1.AnnotationOriginalParallelism] != "" {
		t.Errorf("released with suspend %v, parallelism %d, annotations %v; want running all 4 pods", ptr.Deref(got.Spec.Suspend, false), ptr.Deref(got.Spec.Parallelism, 1), got.Annotations)
	}
}

// lastEvent is the last event recorded, empty if none.
func lastEvent(r *record.FakeRecorder) string {
	last := ""
	for {
		select {
		case e := <-r.Events:
			last = e
		default:
			return last
		}
	}
}

// TestReconcileLooksAgainForAUnitNotCachedYet: a unit of the job's name that
// the cache has not shown yet (so the reconciler's create is refused as
// AlreadyExists) wakes the job only if the job controls it; the reconciler
// looks again by itself, then says the name is taken and leaves the unit be.
func TestReconcileLooksAgainForAUnitNotCachedYet(t *testing.T) {
	ctx := context.Background()
	j := extensionstest.MakeJob("taken", "ns").Quota("team-a").Request("cpu", "1").Obj()
	taken := wrappers.MakeQueueUnit("taken", "ns").PodSet("main", 1, "cpu", "1").Obj()
	base := frameworktest.ClientBuilder(t, testScheme(t)).WithObjects(j, taken).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	cacheBehind := true
	c := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*schedulingv1alpha1.QueueUnit); ok && cacheBehind {
				return apierrors.NewNotFound(schedulingv1alpha1.GroupVersion.WithResource("queueunits").GroupResource(), key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	recorder := record.NewFakeRecorder(10)
	r := framework.NewJobReconciler(c, c, recorder, Integration())
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}

	res, err := r.Reconcile(ctx, req)
	if err != nil || res.RequeueAfter <= 0 {
		t.Fatalf("with the unit not cached: Reconcile = %+v, %v; want a requeue and no error", res, err)
	}
	cacheBehind = false
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if got, want := firstWarning(recorder), "Warning QueueUnitNameTaken QueueUnit taken exists and does not belong to this job"; !strings.HasPrefix(got, want) {
		t.Errorf("first Warning event %q, want one starting %q", got, want)
	}
	var u schedulingv1alpha1.QueueUnit
	if err := c.Get(ctx, client.ObjectKeyFromObject(taken), &u); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(taken.Spec, u.Spec); diff != "" || len(u.OwnerReferences) != 0 {
		t.Errorf("the user's unit was changed (-want +got):\n%s\nowners %v", diff, u.OwnerReferences)
	}
}
