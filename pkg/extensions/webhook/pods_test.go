package webhook

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/koord-queue/koord-queue/apis"
	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/extensions/spark"
	sparkv1beta2 "github.com/koord-queue/koord-queue/pkg/extensions/spark/v1beta2"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestPodGater: the pod webhook creates a queued job's pod at koord-queue's
// gate unless its unit's admission covers it, leaves an honest released
// job's pod and any pod of no queued job as it is, and refuses a bare pod
// that names a quota.
func TestPodGater(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apis.AddToScheme, sparkv1beta2.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	jobGVK := batchv1.SchemeGroupVersion.WithKind("Job")
	// unitOf is the unit of job, in phase, admitted with admitted pods
	// when it is admitted.
	unitOf := func(obj client.Object, gvk schema.GroupVersionKind, name string, phase schedulingv1alpha1.QueueUnitPhase, admitted int64) *schedulingv1alpha1.QueueUnit {
		u := wrappers.MakeQueueUnit(name, obj.GetNamespace()).PodSet("main", 2, "cpu", "1").Phase(phase).Obj()
		if admitted > 0 {
			u.Status.Admissions = []schedulingv1alpha1.Admission{{Name: "main", Replicas: admitted}}
		}
		u.UID = types.UID(name + "-uid")
		u.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(obj, gvk)}
		return u
	}
	newJob := func(name string, suspended bool) *batchv1.Job {
		j := extensionstest.MakeJob(name, "ns").Quota("team-a").Parallelism(2).Request("cpu", "1").Suspend(suspended).Obj()
		j.UID = types.UID(name + "-job-uid")
		return j
	}
	waiting := newJob("waiting", false) // un-suspended by hand while its unit waits
	released := newJob("released", false)
	released.Annotations = map[string]string{schedulingv1alpha1.AnnotationReleasedBy: "released-uid"}
	full := newJob("full", false)
	full.Annotations = map[string]string{schedulingv1alpha1.AnnotationReleasedBy: "full-uid"}
	early := newJob("early", false) // resumed by hand after its admission, before its release
	noUnit := newJob("no-unit", false)
	unlabelled := extensionstest.MakeJob("unlabelled", "ns").Suspend(false).Request("cpu", "1").Obj()
	unlabelled.UID = "unlabelled-uid"
	app := extensionstest.MakeSparkApplication("app", "ns").Quota("team-a").Obj()
	app.UID = "app-uid"
	objs := []client.Object{waiting, released, full, early, noUnit, unlabelled, app,
		unitOf(waiting, jobGVK, "waiting", schedulingv1alpha1.Enqueued, 0),
		unitOf(released, jobGVK, "released", schedulingv1alpha1.Running, 2),
		unitOf(full, jobGVK, "full", schedulingv1alpha1.Running, 2),
		unitOf(early, jobGVK, "early", schedulingv1alpha1.Dequeued, 2),
		unitOf(app, sparkv1beta2.GroupVersion.WithKind("SparkApplication"), "app-spark-qu", schedulingv1alpha1.Enqueued, 0),
		// One pod of "released" runs; both of "full" do, one of them
		// being deleted; a pod of "full" at the gate takes no slot.
		wrappers.MakePod("released-0", "ns").ControlledBy(released, jobGVK).Node("n1").Phase(corev1.PodRunning).Obj(),
		wrappers.MakePod("full-0", "ns").ControlledBy(full, jobGVK).Node("n1").Phase(corev1.PodRunning).Obj(),
		withFinalizer(wrappers.MakePod("full-1", "ns").ControlledBy(full, jobGVK).Node("n1").Phase(corev1.PodRunning).Deleting().Obj()),
		wrappers.MakePod("full-done", "ns").ControlledBy(full, jobGVK).Node("n1").Phase(corev1.PodSucceeded).Obj(),
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, framework.IndexQuotaNamespaces, framework.QuotaNamespacesIndex).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, framework.IndexQuotaName, framework.QuotaNameIndex).
		WithIndex(&corev1.Pod{}, framework.IndexPodOwner, framework.PodOwnerIndex).
		WithIndex(&sparkv1beta2.SparkApplication{}, framework.IndexJobPodOwners, spark.Integration().JobPodOwnersIndex).Build()
	integs := []framework.Integration{job.Integration(), spark.Integration()}

	gate := []jsonpatch.Operation{{Operation: "add", Path: "/spec/schedulingGates", Value: []any{map[string]any{"name": schedulingv1alpha1.SchedulingGateAdmission}}}}
	podOf := func(owner client.Object) *wrappers.PodWrapper {
		return wrappers.MakePod("", "ns").ControlledBy(owner, jobGVK).Requests("cpu", "1")
	}
	cases := map[string]struct {
		pod       *corev1.Pod
		operation admissionv1.Operation
		wantPatch []jsonpatch.Operation
		wantDeny  bool
	}{
		"a pod of a released Job that its admission covers is created as it is": {
			pod: podOf(released).Obj(),
		},
		"a pod of a Job un-suspended by hand while its unit waits is gated": {
			pod: podOf(waiting).Obj(), wantPatch: gate,
		},
		"a pod of a labelled Job that has no unit yet (the job webhook was down) is gated": {
			pod: podOf(noUnit).Obj(), wantPatch: gate,
		},
		"a pod of a Job resumed by hand after its admission but before its release is gated": {
			pod: podOf(early).Obj(), wantPatch: gate,
		},
		"a pod beyond what its pod set was admitted with is gated, a pod being deleted still counting": {
			pod: podOf(full).Obj(), wantPatch: gate,
		},
		"a pod asking for more than each pod was admitted with is gated": {
			pod: podOf(released).Requests("cpu", "2").Obj(), wantPatch: gate,
		},
		"a gate is added beside the pod's own": {
			pod: func() *corev1.Pod {
				p := podOf(waiting).Obj()
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/other"}}
				return p
			}(),
			wantPatch: []jsonpatch.Operation{{Operation: "add", Path: "/spec/schedulingGates/-", Value: map[string]any{"name": schedulingv1alpha1.SchedulingGateAdmission}}},
		},
		"a pod of a Job the queue does not manage is left alone": {
			pod: podOf(unlabelled).Obj(),
		},
		"a bare pod that names no quota is left alone": {
			pod: wrappers.MakePod("debug", "ns").Requests("cpu", "1").Obj(),
		},
		"a bare pod that names a quota is refused": {
			pod: wrappers.MakePod("bare", "ns").Quota("team-a").Requests("cpu", "8").Obj(), wantDeny: true,
		},
		"a bare pod that names a unit is refused": {
			pod: wrappers.MakePod("bare", "ns").OfUnit("released", "main").Requests("cpu", "8").Obj(), wantDeny: true,
		},
		"a Spark driver, made bare and labelled as its application, is gated while the application waits": {
			pod: wrappers.MakePod("app-driver", "ns").Quota("team-a").Label("spark-role", "driver").Requests("cpu", "1").Obj(), wantPatch: gate,
		},
		"a pod of a waiting Job created bound to a node is refused": {
			pod: podOf(waiting).Node("n1").Obj(), wantDeny: true,
		},
		"an update is left alone": {
			pod: podOf(waiting).Obj(), operation: admissionv1.Update,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			op := tc.operation
			if op == "" {
				op = admissionv1.Create
			}
			raw, err := json.Marshal(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			g := &podGater{gate: framework.NewPodGate(reader, reader, scheme, integs, framework.Scope{}, framework.NewSlotExpectations(clock.RealClock{})), decoder: admission.NewDecoder(scheme)}
			resp := g.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: op, Namespace: "ns", Object: runtime.RawExtension{Raw: raw},
			}})
			if resp.Allowed == tc.wantDeny {
				t.Fatalf("allowed %v, want %v: %v", resp.Allowed, !tc.wantDeny, resp.Result)
			}
			if diff := cmp.Diff(tc.wantPatch, normalize(t, resp.Patches)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

// normalize turns the patch values into what JSON decodes them to.
func normalize(t *testing.T, ops []jsonpatch.Operation) []jsonpatch.Operation {
	t.Helper()
	if ops == nil {
		return nil
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	var out []jsonpatch.Operation
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func withFinalizer(p *corev1.Pod) *corev1.Pod {
	p.Finalizers = []string{"example.com/keep"}
	return p
}

// TestPodGaterCountsThePodsItLetThroughBeforeTheCacheShowsThem: the Job
// controller makes a released Job's pods in a burst, each asked for before
// the manager's cache shows the one before. The webhook counts the pods it
// let in until the cache shows them, so the burst gets the pods the Job
// was admitted with and no more; a pod it let in and never sees (refused
// by a later admission step) gives its slot back after a while.
func TestPodGaterCountsThePodsItLetThroughBeforeTheCacheShowsThem(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apis.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	jobGVK := batchv1.SchemeGroupVersion.WithKind("Job")
	j := extensionstest.MakeJob("burst", "ns").Quota("team-a").Parallelism(3).Request("cpu", "1").Suspend(false).Obj()
	j.UID = "burst-job-uid"
	j.Annotations = map[string]string{schedulingv1alpha1.AnnotationReleasedBy: "burst-uid"}
	u := wrappers.MakeQueueUnit("burst", "ns").PodSet("main", 3, "cpu", "1").Phase(schedulingv1alpha1.Running).Obj()
	u.Status.Admissions = []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2}}
	u.UID = "burst-uid"
	u.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(j, jobGVK)}
	cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(j, u).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, framework.IndexQuotaNamespaces, framework.QuotaNamespacesIndex).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, framework.IndexQuotaName, framework.QuotaNameIndex).
		WithIndex(&corev1.Pod{}, framework.IndexPodOwner, framework.PodOwnerIndex).Build()
	now := clocktesting.NewFakeClock(time.Now())
	g := &podGater{
		gate:    framework.NewPodGate(cache, cache, scheme, []framework.Integration{job.Integration()}, framework.Scope{}, framework.NewSlotExpectations(now)),
		decoder: admission.NewDecoder(scheme),
	}
	// create asks the webhook for a new pod of the Job and reports whether
	// it is gated.
	create := func() bool {
		t.Helper()
		raw, err := json.Marshal(wrappers.MakePod("", "ns").ControlledBy(j, jobGVK).Requests("cpu", "1").Obj())
		if err != nil {
			t.Fatal(err)
		}
		resp := g.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: raw},
		}})
		if !resp.Allowed {
			t.Fatalf("refused: %v", resp.Result)
		}
		return len(resp.Patches) > 0
	}
	// cached makes the cache show a pod of the Job.
	cached := func(name string, gated bool) {
		t.Helper()
		p := wrappers.MakePod(name, "ns").ControlledBy(j, jobGVK).Requests("cpu", "1").Obj()
		p.UID = types.UID(name + "-uid")
		if gated {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: schedulingv1alpha1.SchedulingGateAdmission}}
		}
		if err := cache.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	var got []bool
	got = append(got, create(), create(), create()) // a burst: the cache shows none of them
	cached("burst-a", false)                        // the first let in shows
	cached("burst-c", true)                         // the third, gated, shows: it takes no slot
	got = append(got, create())                     // one shown, one expected
	now.Step(10 * time.Second)                      // the second never shows: refused after the webhook
	got = append(got, create())                     // one shown
	got = append(got, create())                     // one shown, one expected
	if diff := cmp.Diff([]bool{false, false, true, true, false, true}, got); diff != "" {
		t.Errorf("gated, pod by pod (-want +got):\n%s", diff)
	}
}
