package integrations

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/koord-queue/koord-queue/apis"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/extensions/ray"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// v18Job is a job of each framework as Koord-Queue v1.8 leaves it: labelled
// with a quota and carrying its enqueue annotations.
func v18Job(integ framework.Integration) client.Object {
	cluster := extensionstest.MakeRayClusterSpec("cpu", "1").WorkerGroup("workers", 2, "cpu", "1").Obj()
	var obj client.Object
	switch integ.Name {
	case "job":
		obj = extensionstest.MakeJob("train", "ns").Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
	case "tfjob":
		obj = extensionstest.MakeTFJob("train", "ns").Quota("team-a").Replica(kftraining.TFJobReplicaTypePS, 1, "cpu", "1").
			Replica(kftraining.TFJobReplicaTypeWorker, 2, "cpu", "1").Obj()
	case "pytorchjob":
		obj = extensionstest.MakePyTorchJob("train", "ns").Quota("team-a").Replica(kftraining.PyTorchJobReplicaTypeMaster, 1, "cpu", "1").
			Replica(kftraining.PyTorchJobReplicaTypeWorker, 2, "cpu", "1").Obj()
	case "mpijob":
		obj = extensionstest.MakeMPIJob("train", "ns").Quota("team-a").Replica(kftraining.MPIJobReplicaTypeLauncher, 1, "cpu", "1").
			Replica(kftraining.MPIJobReplicaTypeWorker, 2, "cpu", "1").Obj()
	case "workflow":
		obj = extensionstest.MakeWorkflow("train", "ns").QueueTemplate().Quota("team-a").MinResources("cpu: 2").Obj()
	case "rayjob":
		obj = extensionstest.MakeRayJob("train", "ns", cluster).Quota("team-a").Obj()
	case "raycluster":
		obj = extensionstest.MakeRayCluster("train", "ns", cluster).Quota("team-a").Obj()
	case "sparkapplication":
		obj = extensionstest.MakeSparkApplication("train", "ns").Quota("team-a").Driver(1, "1g").Executors(2, 1, "1g").Obj()
	default:
		panic("no v1.8 job for " + integ.Name)
	}
	obj.SetUID(types.UID("uid-of-" + integ.Name))
	obj.SetAnnotations(map[string]string{"koord-queue/job-has-enqueued": "true", "koord-queue/job-enqueue-timestamp": "2025-01-02 03:04:05 +0000 UTC"})
	return obj
}

// v18Unit is the unit Koord-Queue v1.8 makes for job: named with the
// framework's suffix, an owner reference without controller: true, the job's
// labels and annotations, a consumerRef without UID, the job's pod sets (a
// batch Job's one set named after the job), and the status given.
func v18Unit(t *testing.T, integ framework.Integration, job client.Object, phase schedulingv1alpha1.QueueUnitPhase, withAdmissions bool) *schedulingv1alpha1.QueueUnit {
	t.Helper()
	g := integ.NewJob()
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, g.Object()); err != nil {
		t.Fatal(err)
	}
	sets, err := g.PodSets()
	if err != nil {
		t.Fatal(err)
	}
	var podSets []schedulingv1alpha1.PodSet
	var admissions []schedulingv1alpha1.Admission
	for _, s := range sets {
		name := s.Name
		if integ.Name == "job" {
			name = job.GetName() // Koord-Queue v1.8 names a Job's pod set after the Job
		}
		ps := schedulingv1alpha1.PodSet{Name: name, Count: s.Count, Template: *s.Template.DeepCopy()}
		podSets = append(podSets, ps)
		admissions = append(admissions, schedulingv1alpha1.Admission{Name: name, Replicas: int64(s.Count),
			Resources: resources.PodSetsRequests([]schedulingv1alpha1.PodSet{ps})})
	}
	request := resources.PodSetsRequests(podSets)
	gvk := integ.GVK
	u := &schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{
			Name: integ.UnitName(job.GetName()), Namespace: job.GetNamespace(),
			Labels: job.GetLabels(), Annotations: job.GetAnnotations(),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: job.GetName(), UID: job.GetUID()}},
		},
		Spec: schedulingv1alpha1.QueueUnitSpec{
			ConsumerRef: &corev1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: job.GetName(), Namespace: job.GetNamespace()},
			Resource:    request, Request: request.DeepCopy(), PodSets: podSets,
		},
		Status: schedulingv1alpha1.QueueUnitStatus{Phase: phase, Message: string(phase)},
	}
	if phase != schedulingv1alpha1.Enqueued {
		u.Spec.Queue = "team-a"
	}
	if withAdmissions {
		u.Status.Admissions = admissions
	}
	return u
}

// setSuspended suspends or releases job as its framework does.
func setSuspended(integ framework.Integration, job client.Object, suspended bool) client.Object {
	g := integ.NewJob()
	raw, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, g.Object())
	if suspended {
		g.Suspend()
	} else {
		g.Resume()
	}
	return g.Object()
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, i := range All() {
		if err := i.AddToScheme(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// adopted is what a test sees after one pass of the reconciler.
type adopted struct {
	Controller    bool
	Suspended     bool
	Phase         schedulingv1alpha1.QueueUnitPhase
	PodSets       []string
	Admissions    []string
	AdoptedCond   metav1.ConditionStatus
	NameTakenSeen bool
}

// TestAdoptKoordQueueUnits: a unit in every shape Koord-Queue v1.8 leaves
// (each framework's suffix, every phase it writes, with and without
// admissions) is taken over by its job: its owner reference becomes the
// controller, a unit that holds quota keeps its phase and its running job
// runs on, a waiting one keeps its suspended job waiting.
func TestAdoptKoordQueueUnits(t *testing.T) {
	s := scheme(t)
	phases := map[schedulingv1alpha1.QueueUnitPhase]bool{ // phase: the job runs
		schedulingv1alpha1.Enqueued: false, schedulingv1alpha1.TimeoutBackoff: false, schedulingv1alpha1.Reserved: false,
		schedulingv1alpha1.Dequeued: true, schedulingv1alpha1.Running: true,
		schedulingv1alpha1.SchedReady: true, schedulingv1alpha1.SchedSucceed: true, schedulingv1alpha1.SchedFailed: true,
	}
	for _, integ := range All() {
		for phase, runs := range phases {
			for _, withAdmissions := range []bool{false, true} {
				if !runs && phase == schedulingv1alpha1.Enqueued && withAdmissions {
					continue // Koord-Queue never writes admissions on an Enqueued unit
				}
				name := fmt.Sprintf("%s/%s/admissions=%v", integ.Name, phase, withAdmissions)
				t.Run(name, func(t *testing.T) {
					ctx := context.Background()
					job := setSuspended(integ, v18Job(integ), !runs)
					unit := v18Unit(t, integ, job, phase, withAdmissions)
					c := frameworktest.WithJobIndexes(frameworktest.ClientBuilder(t, s), All()...).WithObjects(job, unit).
						WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, job).Build()
					recorder := record.NewFakeRecorder(100)
					r := framework.NewJobReconciler(c, c, recorder, integ, framework.WithStatusDelay(0))
					req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)}
					for range 2 { // a second pass finds nothing more to do
						if _, err := r.Reconcile(ctx, req); err != nil {
							t.Fatalf("Reconcile: %v", err)
						}
					}
					got := look(t, c, integ, job, unit, recorder)
					// Koord-Queue's names become the job's (a batch
					// Job's one set is "main").
					wantSets := []string{}
					for _, ps := range unit.Spec.PodSets {
						if integ.Name == "job" {
							ps.Name = schedulingv1alpha1.DefaultPodSetName
						}
						wantSets = append(wantSets, ps.Name)
					}
					// A unit backing off (TimeoutBackoff) whose backoff
					// ended (the default backoff is 0) is queued again.
					wantPhase := phase
					if phase == schedulingv1alpha1.TimeoutBackoff {
						wantPhase = schedulingv1alpha1.Enqueued
					}
					want := adopted{Controller: true, Suspended: !runs, Phase: wantPhase, PodSets: wantSets, AdoptedCond: metav1.ConditionTrue}
					if withAdmissions && queueHolds(phase) || phase == schedulingv1alpha1.Reserved && withAdmissions {
						want.Admissions = wantSets
					}
					// A waiting unit's admissions (TimeoutBackoff's) go
					// once its suspended job has no pods.
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("after adoption (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}

// TestAdoptionRenamesPodSetsOnTheWholeUnit: the extensions' cache keeps a
// unit's pod templates stripped to their requests (framework.StripUnit),
// and renaming a taken-over unit's pod sets writes them whole: they are
// renamed on the unit as the API server has it, also when the takeover's
// status part was written already (by a pass that failed after it), which
// leaves the cached copy as it was.
func TestAdoptionRenamesPodSetsOnTheWholeUnit(t *testing.T) {
	ctx := context.Background()
	integ := integrationNamed(t, "job")
	job := setSuspended(integ, v18Job(integ), false).(*batchv1.Job)
	job.Spec.Template.Spec.Containers[0].Image = "trainer:1"
	unit := v18Unit(t, integ, job, schedulingv1alpha1.Running, true)
	unit.Status.Admissions[0].Name = schedulingv1alpha1.DefaultPodSetName
	unit.Status.Conditions = []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitAdopted, Status: metav1.ConditionTrue,
		Reason: framework.ReasonAdopted, LastTransitionTime: metav1.Now()}}
	server := frameworktest.WithJobIndexes(frameworktest.ClientBuilder(t, scheme(t)), All()...).WithObjects(job, unit).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, job).Build()
	cached := interceptor.NewClient(server, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			_, err := framework.StripUnit(obj) // as the cache keeps a unit
			return err
		}})
	r := framework.NewJobReconciler(cached, server, record.NewFakeRecorder(100), integ, framework.WithStatusDelay(0))
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	var got schedulingv1alpha1.QueueUnit
	if err := server.Get(ctx, client.ObjectKeyFromObject(unit), &got); err != nil {
		t.Fatal(err)
	}
	if owner := metav1.GetControllerOf(&got); owner == nil || owner.UID != job.UID {
		t.Fatalf("unit not taken over: controller %v", owner)
	}
	want := []schedulingv1alpha1.PodSet{unit.Spec.PodSets[0]}
	want[0].Name = schedulingv1alpha1.DefaultPodSetName
	if diff := cmp.Diff(want, got.Spec.PodSets); diff != "" {
		t.Errorf("pod sets after the takeover (-want +got):\n%s", diff)
	}
}

// integrationNamed is the integration of All called name.
func integrationNamed(t *testing.T, name string) framework.Integration {
	t.Helper()
	for _, integ := range All() {
		if integ.Name == name {
			return integ
		}
	}
	t.Fatalf("no integration %q", name)
	return framework.Integration{}
}

// queueHolds: phases whose admissions stay while the job runs.
func queueHolds(p schedulingv1alpha1.QueueUnitPhase) bool {
	return p != schedulingv1alpha1.Enqueued && p != schedulingv1alpha1.TimeoutBackoff
}

func look(t *testing.T, c client.Client, integ framework.Integration, job client.Object, unit *schedulingv1alpha1.QueueUnit, recorder *record.FakeRecorder) adopted {
	t.Helper()
	ctx := context.Background()
	var u schedulingv1alpha1.QueueUnit
	if err := c.Get(ctx, client.ObjectKeyFromObject(unit), &u); err != nil {
		t.Fatal(err)
	}
	g := integ.NewJob()
	if err := c.Get(ctx, client.ObjectKeyFromObject(job), g.Object()); err != nil {
		t.Fatal(err)
	}
	got := adopted{Suspended: g.IsSuspended(), Phase: u.Status.Phase}
	if owner := metav1.GetControllerOf(&u); owner != nil && owner.UID == job.GetUID() {
		got.Controller = true
	}
	for _, ps := range u.Spec.PodSets {
		got.PodSets = append(got.PodSets, ps.Name)
	}
	for _, a := range u.Status.Admissions {
		got.Admissions = append(got.Admissions, a.Name)
	}
	if cond := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitAdopted); cond != nil {
		got.AdoptedCond = cond.Status
	}
	for len(recorder.Events) > 0 {
		if e := <-recorder.Events; strings.Contains(e, framework.ReasonUnitNameTaken) {
			got.NameTakenSeen = true
		}
	}
	return got
}

// TestAdoptedDequeuedUnitReleasesItsJob: a unit Koord-Queue admitted
// (Dequeued) whose job it had not resumed yet: once adopted, the job is
// released, its unit keeping its admission.
func TestAdoptedDequeuedUnitReleasesItsJob(t *testing.T) {
	ctx := context.Background()
	s := scheme(t)
	integ := All()[0]
	job := setSuspended(integ, v18Job(integ), true)
	unit := v18Unit(t, integ, job, schedulingv1alpha1.Dequeued, true)
	c := frameworktest.WithJobIndexes(frameworktest.ClientBuilder(t, s), All()...).WithObjects(job, unit).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, job).Build()
	recorder := record.NewFakeRecorder(100)
	r := framework.NewJobReconciler(c, c, recorder, integ, framework.WithStatusDelay(0))
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	want := adopted{Controller: true, Phase: schedulingv1alpha1.Dequeued, PodSets: []string{"main"}, Admissions: []string{"main"}, AdoptedCond: metav1.ConditionTrue}
	if diff := cmp.Diff(want, look(t, c, integ, job, unit, recorder)); diff != "" {
		t.Errorf("after adoption (-want +got):\n%s", diff)
	}
}

// TestAdoptedUnitFollowsItsJob: once adopted, a Koord-Queue unit follows its
// job like any other: the job's end finishes it and gives its quota back
// (before, it stayed Running and held the quota for ever).
func TestAdoptedUnitFollowsItsJob(t *testing.T) {
	ctx := context.Background()
	s := scheme(t)
	integ := All()[0]
	job := setSuspended(integ, v18Job(integ), false)
	unit := v18Unit(t, integ, job, schedulingv1alpha1.Running, true)
	finished := job.DeepCopyObject().(*batchv1.Job)
	finished.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	c := frameworktest.WithJobIndexes(frameworktest.ClientBuilder(t, s), All()...).WithObjects(finished, unit).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, finished).Build()
	r := framework.NewJobReconciler(c, c, record.NewFakeRecorder(100), integ, framework.WithStatusDelay(0))
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	var u schedulingv1alpha1.QueueUnit
	if err := c.Get(ctx, client.ObjectKeyFromObject(unit), &u); err != nil {
		t.Fatal(err)
	}
	if u.Status.Phase != schedulingv1alpha1.Succeed || len(u.Status.Admissions) != 0 || queueunit.HoldsQuota(&u) {
		t.Errorf("unit of the finished job: phase %s, admissions %v, holds quota %v; want Succeed, none, false",
			u.Status.Phase, u.Status.Admissions, queueunit.HoldsQuota(&u))
	}
}

// TestAdoptionRefused: a unit at the job's unit name is adopted only by the
// job its owner reference names by UID, and only when that is safe;
// otherwise the job is left as it is (never suspended, never released) and
// the unit says why.
func TestAdoptionRefused(t *testing.T) {
	s := scheme(t)
	integ := All()[0]
	running := func() client.Object { return setSuspended(integ, v18Job(integ), false) }
	cases := map[string]struct {
		job  client.Object
		unit func(job client.Object) *schedulingv1alpha1.QueueUnit
		// wantEvent starts the first Warning event; wantCond the unit's
		// Adopted condition ("" none).
		wantEvent string
		wantCond  metav1.ConditionStatus
	}{
		"a Running unit whose owner reference names another job is not this job's": {
			job: running(),
			unit: func(job client.Object) *schedulingv1alpha1.QueueUnit {
				u := v18Unit(t, integ, job, schedulingv1alpha1.Running, true)
				u.OwnerReferences[0].UID, u.OwnerReferences[0].Name = "uid-of-another-job", "other"
				return u
			},
			wantEvent: "Warning QueueUnitNameTaken",
		},
		"a Running unit with no owner reference is not this job's": {
			job: running(),
			unit: func(job client.Object) *schedulingv1alpha1.QueueUnit {
				u := v18Unit(t, integ, job, schedulingv1alpha1.Running, true)
				u.OwnerReferences = nil
				return u
			},
			wantEvent: "Warning QueueUnitNameTaken",
		},
		"a unit whose consumerRef names another job is not adopted": {
			job: running(),
			unit: func(job client.Object) *schedulingv1alpha1.QueueUnit {
				u := v18Unit(t, integ, job, schedulingv1alpha1.Running, true)
				u.Spec.ConsumerRef.Name = "other"
				return u
			},
			wantEvent: "Warning QueueUnitNotAdoptable QueueUnit train was made by Koord-Queue for this job and cannot be taken over: its spec.consumerRef names Job ns/other, not Job train",
			wantCond:  metav1.ConditionFalse,
		},
		"a unit whose owner reference with the job's UID names another kind is not adopted": {
			job: running(),
			unit: func(job client.Object) *schedulingv1alpha1.QueueUnit {
				u := v18Unit(t, integ, job, schedulingv1alpha1.Running, true)
				u.OwnerReferences[0].Kind = "CronJob"
				return u
			},
			wantEvent: "Warning QueueUnitNotAdoptable QueueUnit train was made by Koord-Queue for this job and cannot be taken over: its owner reference with the job's UID names CronJob train",
			wantCond:  metav1.ConditionFalse,
		},
		"an admitted unit holding fewer pods than its job runs is not adopted (it would be suspended)": {
			job: running(),
			unit: func(job client.Object) *schedulingv1alpha1.QueueUnit {
				u := v18Unit(t, integ, job, schedulingv1alpha1.Running, true)
				u.Spec.PodSets[0].Count = 1
				return u
			},
			wantEvent: "Warning QueueUnitNotAdoptable QueueUnit train was made by Koord-Queue for this job and cannot be taken over: the job runs more pods than it holds quota for (pod sets [train 1], the job's [main 2])",
			wantCond:  metav1.ConditionFalse,
		},
		"an admitted unit whose pod sets match none of the job's is not adopted": {
			job: running(),
			unit: func(job client.Object) *schedulingv1alpha1.QueueUnit {
				u := v18Unit(t, integ, job, schedulingv1alpha1.Running, true)
				u.Spec.PodSets = append(u.Spec.PodSets, *u.Spec.PodSets[0].DeepCopy())
				u.Spec.PodSets[1].Name = "extra"
				return u
			},
			wantEvent: "Warning QueueUnitNotAdoptable QueueUnit train was made by Koord-Queue for this job and cannot be taken over: it holds quota for pod sets [train extra], which do not match the job's [main]",
			wantCond:  metav1.ConditionFalse,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			unit := tc.unit(tc.job)
			c := frameworktest.WithJobIndexes(frameworktest.ClientBuilder(t, s), All()...).WithObjects(tc.job, unit).
				WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, tc.job).Build()
			recorder := record.NewFakeRecorder(100)
			r := framework.NewJobReconciler(c, c, recorder, integ, framework.WithStatusDelay(0))
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.job)}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			var u schedulingv1alpha1.QueueUnit
			if err := c.Get(ctx, client.ObjectKeyFromObject(unit), &u); err != nil {
				t.Fatal(err)
			}
			g := integ.NewJob()
			if err := c.Get(ctx, client.ObjectKeyFromObject(tc.job), g.Object()); err != nil {
				t.Fatal(err)
			}
			if g.IsSuspended() {
				t.Error("the job was suspended")
			}
			if metav1.GetControllerOf(&u) != nil || u.Status.Phase != schedulingv1alpha1.Running || len(u.Status.Admissions) == 0 {
				t.Errorf("the unit was changed: controller %v, phase %s, admissions %v", metav1.GetControllerOf(&u), u.Status.Phase, u.Status.Admissions)
			}
			var gotCond metav1.ConditionStatus
			if cond := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitAdopted); cond != nil {
				gotCond = cond.Status
			}
			if gotCond != tc.wantCond {
				t.Errorf("Adopted condition %q, want %q", gotCond, tc.wantCond)
			}
			if got := firstWarning(recorder); !strings.HasPrefix(got, tc.wantEvent) {
				t.Errorf("first Warning event %q, want one starting %q", got, tc.wantEvent)
			}
		})
	}
}

// firstWarning is the first Warning event recorded, empty if none.
func firstWarning(r *record.FakeRecorder) string {
	for len(r.Events) > 0 {
		if e := <-r.Events; strings.HasPrefix(e, "Warning ") {
			return e
		}
	}
	return ""
}

// TestAdoptKoordQueueUnitsNamedWithoutSuffix: Koord-Queue's extensions run
// with the environment variable PAI_ENV set name every unit after its job
// with no suffix (QueueUnitSuffix returns "" for TFJob, PyTorchJob, MPIJob,
// RayJob, RayCluster and SparkApplication alike). With
// WithoutUnitSuffixes, such a unit, Enqueued or holding quota, is adopted by
// its job and no second unit is made.
func TestAdoptKoordQueueUnitsNamedWithoutSuffix(t *testing.T) {
	s := scheme(t)
	for _, integ := range WithoutUnitSuffixes(All()) {
		for _, phase := range []schedulingv1alpha1.QueueUnitPhase{schedulingv1alpha1.Enqueued, schedulingv1alpha1.Running} {
			t.Run(integ.Name+"/"+string(phase), func(t *testing.T) {
				ctx := context.Background()
				runs := phase == schedulingv1alpha1.Running
				job := setSuspended(integ, v18Job(integ), !runs)
				unit := v18Unit(t, integ, job, phase, runs)
				unit.Name = job.GetName() // as Koord-Queue with PAI_ENV names it
				c, recorder := adoptOnce(t, s, integ, job, unit)
				got := look(t, c, integ, job, unit, recorder)
				if !got.Controller || got.Suspended == runs || got.Phase != phase || got.NameTakenSeen {
					t.Errorf("after adoption: %+v; want the job's controller reference, the job suspended %v, phase %s", got, !runs, phase)
				}
				var units schedulingv1alpha1.QueueUnitList
				if err := c.List(ctx, &units); err != nil {
					t.Fatal(err)
				}
				if len(units.Items) != 1 {
					names := []string{}
					for _, u := range units.Items {
						names = append(names, u.Name)
					}
					t.Errorf("units %v; want only the adopted %s", names, unit.Name)
				}
			})
		}
	}
}

// TestAdoptKoordQueueUnitsInTheirOwnPodSets: units holding quota in the
// pod sets Koord-Queue's extensions give them (pkg/jobext/handles): a
// RayJob's and a RayCluster's "head" and one per worker group named after
// it in lower case, with no set for a RayJob's submitter; an Argo
// Workflow's one set "default"; a SparkApplication's "driver" and
// "executor". Each is adopted and its running job runs on.
func TestAdoptKoordQueueUnitsInTheirOwnPodSets(t *testing.T) {
	s := scheme(t)
	koordQueueSets := map[string][]string{
		"rayjob":           {"head", "workers"},
		"raycluster":       {"head", "workers"},
		"workflow":         {"default"},
		"sparkapplication": {"driver", "executor"},
	}
	for _, integ := range All() {
		names, ok := koordQueueSets[integ.Name]
		if !ok {
			continue
		}
		t.Run(integ.Name, func(t *testing.T) {
			job := setSuspended(integ, v18Job(integ), false)
			unit := v18Unit(t, integ, job, schedulingv1alpha1.Running, true)
			// Koord-Queue's sets: the job's own, by Koord-Queue's names, in
			// its order, those it does not make left out.
			byName := map[string]schedulingv1alpha1.PodSet{}
			for _, ps := range unit.Spec.PodSets {
				byName[ps.Name] = ps
			}
			var sets []schedulingv1alpha1.PodSet
			var admissions []schedulingv1alpha1.Admission
			for _, name := range names {
				ps, ok := byName[name]
				if !ok {
					ps = unit.Spec.PodSets[0] // the Workflow's one made-up set
				}
				ps.Name = name
				sets = append(sets, ps)
				admissions = append(admissions, schedulingv1alpha1.Admission{Name: name, Replicas: int64(ps.Count),
					Resources: resources.PodSetsRequests([]schedulingv1alpha1.PodSet{ps})})
			}
			unit.Spec.PodSets, unit.Status.Admissions = sets, admissions
			unit.Spec.Resource = resources.PodSetsRequests(sets)
			unit.Spec.Request = unit.Spec.Resource.DeepCopy()
			c, recorder := adoptOnce(t, s, integ, job, unit)
			got := look(t, c, integ, job, unit, recorder)
			if !got.Controller || got.Suspended || got.Phase != schedulingv1alpha1.Running || got.AdoptedCond != metav1.ConditionTrue {
				var events []string
				for len(recorder.Events) > 0 {
					events = append(events, <-recorder.Events)
				}
				t.Errorf("after adoption: %+v, events %v; want adopted, the job running", got, events)
			}
		})
	}
}

// adoptOnce runs two passes of integ's reconciler over job and its unit,
// Koord-Queue's, in a fake client of scheme s, and returns the client and
// the events recorded.
func adoptOnce(t *testing.T, s *runtime.Scheme, integ framework.Integration, job client.Object, unit *schedulingv1alpha1.QueueUnit) (client.Client, *record.FakeRecorder) {
	t.Helper()
	c := frameworktest.WithJobIndexes(frameworktest.ClientBuilder(t, s), All()...).WithObjects(job, unit).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, job).Build()
	recorder := record.NewFakeRecorder(100)
	r := framework.NewJobReconciler(c, c, recorder, integ, framework.WithStatusDelay(0))
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)}
	for range 2 {
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	return c, recorder
}

// TestAdoptedJobGrownPerPodIsQueuedAgain: a running RayJob taken over with
// the unit Koord-Queue admitted it with (whose templates lack what KubeRay
// adds to each worker) runs on as it was, but once its workers are patched
// to ask more per pod than when it was taken over, it is suspended to be
// queued again.
func TestAdoptedJobGrownPerPodIsQueuedAgain(t *testing.T) {
	ctx := context.Background()
	integ := ray.RayJobIntegration()
	job := setSuspended(integ, v18Job(integ), false)
	unit := v18Unit(t, integ, job, schedulingv1alpha1.Running, true)
	c, _ := adoptOnce(t, scheme(t), integ, job, unit)
	var rj rayv1.RayJob
	if err := c.Get(ctx, client.ObjectKeyFromObject(job), &rj); err != nil {
		t.Fatal(err)
	}
	if rj.Spec.Suspend {
		t.Fatal("the adopted RayJob was suspended as it was taken over")
	}
	rj.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
	if err := c.Update(ctx, &rj); err != nil {
		t.Fatal(err)
	}
	r := framework.NewJobReconciler(c, c, record.NewFakeRecorder(100), integ, framework.WithStatusDelay(0))
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(job), &rj); err != nil {
		t.Fatal(err)
	}
	if !rj.Spec.Suspend {
		t.Error("the adopted RayJob whose workers grew from 1 to 3 CPU each runs on")
	}
}
