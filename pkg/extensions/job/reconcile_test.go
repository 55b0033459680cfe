package job

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/koord-queue/koord-queue/apis"
	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
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
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.job, served).
				WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).
				WithIndex(&elasticquotav1alpha1.ElasticQuota{}, framework.IndexQuotaNamespaces, framework.QuotaNamespacesIndex).Build()
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
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(j).
				WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).
				WithIndex(&elasticquotav1alpha1.ElasticQuota{}, framework.IndexQuotaNamespaces, framework.QuotaNamespacesIndex).Build()
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
