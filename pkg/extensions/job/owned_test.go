package job

import (
	"context"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/extensions/ray"
)

// TestReconcileJobsARayJobMade: a labelled Job that names a RayJob as its
// controller (KubeRay's submitter) runs unqueued only while that RayJob
// exists as named and is admitted; otherwise it is queued by itself and
// suspended, and it is judged again when the RayJob's unit changes.
func TestReconcileJobsARayJobMade(t *testing.T) {
	scheme := testScheme(t)
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	const rayJobUID = types.UID("rayjob-uid")
	rayJob := extensionstest.MakeRayJob("rj", "ns", extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota("team-a").Obj()
	rayJob.UID = rayJobUID
	rayJobUnit := func(phase schedulingv1alpha1.QueueUnitPhase) *schedulingv1alpha1.QueueUnit {
		return &schedulingv1alpha1.QueueUnit{
			ObjectMeta: metav1.ObjectMeta{Name: "rj-ray-qu", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(rayJob, ray.RayJobIntegration().GVK),
			}},
			Status: schedulingv1alpha1.QueueUnitStatus{Phase: phase},
		}
	}
	submitter := func(uid types.UID) *batchv1.Job {
		return extensionstest.MakeJob("rj", "ns").Quota("team-a").Suspend(false).Request("cpu", "1").
			OwnedBy(metav1.OwnerReference{APIVersion: "ray.io/v1", Kind: "RayJob", Name: "rj", UID: uid, Controller: ptr.To(true)}).Obj()
	}
	scope := framework.Scope{Owners: []framework.Integration{ray.RayJobIntegration()}}

	cases := map[string]struct {
		objs       []client.Object
		job        *batchv1.Job
		wantQueued bool
		wantEvent  string
	}{
		"a submitter of an admitted RayJob runs within the RayJob's admission": {
			objs: []client.Object{rayJob, rayJobUnit(schedulingv1alpha1.Running)},
			job:  submitter(rayJobUID),
		},
		"a Job naming a RayJob that waits in the queue is queued by itself": {
			objs:       []client.Object{rayJob, rayJobUnit(schedulingv1alpha1.Enqueued)},
			job:        submitter(rayJobUID),
			wantQueued: true,
			wantEvent:  "Warning OwnerNotAdmitted Not covered by an owner's admission: its owner RayJob rj is not admitted (QueueUnit rj-ray-qu is Enqueued)",
		},
		"a Job naming a RayJob that does not exist is queued by itself": {
			job:        submitter(rayJobUID),
			wantQueued: true,
			wantEvent:  "Warning OwnerNotAdmitted Not covered by an owner's admission: its owner RayJob rj does not exist",
		},
		"a Job naming an admitted RayJob by another UID is queued by itself": {
			objs:       []client.Object{rayJob, rayJobUnit(schedulingv1alpha1.Running)},
			job:        submitter("a-uid-of-my-choosing"),
			wantQueued: true,
			wantEvent:  "Warning OwnerNotAdmitted Not covered by an owner's admission: its owner RayJob rj is not the object",
		},
		"a Job naming an unqueued RayJob is queued by itself": {
			objs:       []client.Object{rayJob},
			job:        submitter(rayJobUID),
			wantQueued: true,
			wantEvent:  "Warning OwnerNotAdmitted Not covered by an owner's admission: its owner RayJob rj is not queued",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := frameworktest.ClientBuilder(t, scheme).WithObjects(append(tc.objs, tc.job)...).
				WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
			recorder := record.NewFakeRecorder(100)
			r := framework.NewJobReconciler(c, c, recorder, Integration(), framework.WithScope(scope))
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.job)}
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			checkQueued(t, c, req.NamespacedName, tc.wantQueued)
			if got := firstWarning(recorder); !strings.HasPrefix(got, tc.wantEvent) || (tc.wantEvent == "") != (got == "") {
				t.Errorf("first Warning event %q, want one starting %q", got, tc.wantEvent)
			}
		})
	}

	t.Run("a submitter is suspended and queued once its RayJob is evicted", func(t *testing.T) {
		ctx := context.Background()
		unit := rayJobUnit(schedulingv1alpha1.Running)
		job := submitter(rayJobUID)
		c := frameworktest.ClientBuilder(t, scheme).WithObjects(rayJob, unit, job).
			WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
		r := framework.NewJobReconciler(c, c, record.NewFakeRecorder(100), Integration(), framework.WithScope(scope))
		req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)}
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		checkQueued(t, c, req.NamespacedName, false)
		unit.Status.Phase = schedulingv1alpha1.Enqueued
		if err := c.Status().Update(ctx, unit); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		checkQueued(t, c, req.NamespacedName, true)
	})
}

// checkQueued checks that the Job at key has a unit and is suspended, or
// has none and runs.
func checkQueued(t *testing.T, c client.Client, key client.ObjectKey, want bool) {
	t.Helper()
	var unit schedulingv1alpha1.QueueUnit
	err := c.Get(context.Background(), key, &unit)
	if queued := err == nil; queued != want {
		t.Errorf("unit exists %v (get: %v), want %v", queued, err, want)
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	var got batchv1.Job
	if err := c.Get(context.Background(), key, &got); err != nil {
		t.Fatal(err)
	}
	if suspended := (*Job)(&got).IsSuspended(); suspended != want {
		t.Errorf("job suspended %v, want %v", suspended, want)
	}
}
