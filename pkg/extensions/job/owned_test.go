package job

import (
	"context"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/argo"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/extensions/ray"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
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

// TestReconcileASubmitterNamedAsItsRayJob: with unit names without suffix,
// KubeRay's submitter Job is called as its RayJob, and so would its unit
// be: the RayJob's unit is not a unit "taken" from the Job, and the Job
// gets none of its own. Within the RayJob's admission it runs, with no
// event and nothing to look at again; outside it, it is suspended once,
// saying why, and resumed once the RayJob is admitted again.
func TestReconcileASubmitterNamedAsItsRayJob(t *testing.T) {
	ctx := context.Background()
	scheme := testScheme(t)
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rayJobs := ray.RayJobIntegration()
	rayJobs.UnitSuffix = "" // --unit-names-without-suffix
	rayJob := extensionstest.MakeRayJob("rj", "ns", extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota("team-a").Obj()
	rayJob.UID = "rayjob-uid"
	unit := &schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{Name: "rj", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(rayJob, rayJobs.GVK),
		}},
		Status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Running},
	}
	job := extensionstest.MakeJob("rj", "ns").Quota("team-a").Suspend(false).Request("cpu", "1").
		OwnedBy(*metav1.NewControllerRef(rayJob, rayJobs.GVK)).Obj()
	c := frameworktest.ClientBuilder(t, scheme).WithObjects(rayJob, unit, job).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	recorder := record.NewFakeRecorder(100)
	r := framework.NewJobReconciler(c, c, recorder, Integration(), framework.WithScope(framework.Scope{Owners: []framework.Integration{rayJobs}}))
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)}
	type seen struct {
		Suspended    bool
		Events       []string
		RequeueAfter time.Duration
		UnitOwner    string
	}
	look := func() seen {
		t.Helper()
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		var got batchv1.Job
		if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
			t.Fatal(err)
		}
		var u schedulingv1alpha1.QueueUnit
		if err := c.Get(ctx, req.NamespacedName, &u); err != nil {
			t.Fatal(err)
		}
		s := seen{Suspended: (*Job)(&got).IsSuspended(), RequeueAfter: res.RequeueAfter, UnitOwner: metav1.GetControllerOf(&u).Kind}
		for {
			select {
			case e := <-recorder.Events:
				reason, _, _ := strings.Cut(e, ": ")
				s.Events = append(s.Events, reason)
				continue
			default:
			}
			break
		}
		return s
	}
	admitted := seen{UnitOwner: "RayJob"}
	for i := range 2 {
		if diff := cmp.Diff(admitted, look()); diff != "" {
			t.Errorf("pass %d, the RayJob admitted: runs, nothing said (-want +got):\n%s", i, diff)
		}
	}
	unit.Status.Phase = schedulingv1alpha1.Enqueued // evicted
	if err := c.Status().Update(ctx, unit); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seen{Suspended: true, Events: []string{"Warning OwnerNotAdmitted Not covered by an owner's admission"}, UnitOwner: "RayJob"}, look()); diff != "" {
		t.Errorf("the RayJob evicted: suspended, said once (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(seen{Suspended: true, UnitOwner: "RayJob"}, look()); diff != "" {
		t.Errorf("again: held, nothing said (-want +got):\n%s", diff)
	}
	unit.Status.Phase = schedulingv1alpha1.Dequeued // admitted again
	if err := c.Status().Update(ctx, unit); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(admitted, look()); diff != "" {
		t.Errorf("the RayJob admitted again: resumed (-want +got):\n%s", diff)
	}
}

// TestReconcileJobsAWorkflowMade: an Argo Workflow's unit asks only for its
// koord-queue/min-resources, so a labelled Job naming an admitted Workflow
// as its controller runs within the Workflow's admission only as far as it
// goes: a Job of 8 pods of 1 CPU under a Workflow admitted for 100m is
// queued by itself and suspended, saying why, and so is a second Job that
// would take the jobs the Workflow made past it; one that fits runs.
func TestReconcileJobsAWorkflowMade(t *testing.T) {
	scheme := testScheme(t)
	if err := wfv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	wf := extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().Quota("team-a").MinResources("cpu: 100m").Obj()
	wf.UID = "wf-uid"
	unit := &schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{Name: "wf", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(wf, argo.Integration().GVK),
		}},
		Spec: schedulingv1alpha1.QueueUnitSpec{Request: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
	}
	queueunit.Admit(unit, "team-a", queueunit.Request(unit), nil, nil, metav1.Now())
	child := func(name string, created int64, pods int32, cpu string) *batchv1.Job {
		j := extensionstest.MakeJob(name, "ns").Quota("team-a").Suspend(false).Parallelism(pods).Request("cpu", cpu).
			OwnedBy(*metav1.NewControllerRef(wf, argo.Integration().GVK)).Obj()
		j.CreationTimestamp = metav1.Unix(created, 0)
		return j
	}
	scope := framework.Scope{Owners: []framework.Integration{argo.Integration()}, Jobs: []framework.Integration{Integration()}}
	cases := map[string]struct {
		objs       []client.Object
		job        *batchv1.Job
		wantQueued bool
		wantEvent  string
	}{
		"a Job within the Workflow's admission runs within it": {
			job: child("small", 10, 1, "50m"),
		},
		"a Job of 8 pods under a Workflow admitted for 100m is queued by itself": {
			job:        child("forged", 10, 8, "1"),
			wantQueued: true,
			wantEvent:  "Warning OwnerNotAdmitted Not covered by an owner's admission: its owner Workflow wf was admitted with cpu=100m and covers only that; the job asks for cpu=8",
		},
		"a Job that would take the Workflow's jobs past its admission is queued by itself": {
			objs:       []client.Object{child("first", 5, 1, "50m")},
			job:        child("second", 10, 1, "80m"),
			wantQueued: true,
			wantEvent:  "Warning OwnerNotAdmitted Not covered by an owner's admission: its owner Workflow wf was admitted with cpu=100m and covers only that; the job asks for cpu=80m, beyond the cpu=50m of the jobs it made before",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := frameworktest.ClientBuilder(t, scheme).WithObjects(append(tc.objs, wf, unit.DeepCopy(), tc.job)...).
				WithIndex(&batchv1.Job{}, framework.IndexJobController, framework.PodOwnerIndex).
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
}
