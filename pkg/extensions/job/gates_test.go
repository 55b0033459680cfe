package job

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestReconcileOpensGates: once its unit is admitted and the Job released,
// its pods waiting at koord-queue's gate are let through up to what the
// admission covers, a pod still holding its node counting; the others wait,
// and are let through as the pods before them go; a pod larger than its
// admission stays gated and the Job says why.
func TestReconcileOpensGates(t *testing.T) {
	ctx := context.Background()
	j := extensionstest.MakeJob("j", "ns").Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
	j.UID = "uid-now"
	c := frameworktest.ClientBuilder(t, testScheme(t)).WithObjects(j).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	recorder := record.NewFakeRecorder(100)
	r := framework.NewJobReconciler(c, c, recorder, Integration(), framework.WithStatusDelay(0))
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	jobGVK := batchv1.SchemeGroupVersion.WithKind("Job")
	gated := func(name, cpu string) *corev1.Pod {
		p := wrappers.MakePod(name, "ns").ControlledBy(j, jobGVK).Requests("cpu", cpu).Obj()
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/other"}, {Name: schedulingv1alpha1.SchedulingGateAdmission}}
		return p
	}
	// Gated pods of the Job, made while its unit waited, and a pod of an
	// earlier run still on its node.
	leaving := wrappers.MakePod("j-leaving", "ns").ControlledBy(j, jobGVK).Node("n1").Phase(corev1.PodRunning).Requests("cpu", "1").Obj()
	leaving.Finalizers = []string{"example.com/keep"}
	for _, p := range []*corev1.Pod{gated("j-a", "1"), gated("j-b", "1"), gated("j-c", "1"), gated("j-big", "4"), leaving} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, leaving); err != nil {
		t.Fatal(err)
	}
	stillGated := func() []string {
		t.Helper()
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace("ns")); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pods.Items {
			for _, g := range p.Spec.SchedulingGates {
				if g.Name == schedulingv1alpha1.SchedulingGateAdmission {
					out = append(out, p.Name)
				}
			}
			if len(p.Spec.SchedulingGates) > 0 && p.Spec.SchedulingGates[0].Name != "example.com/other" {
				t.Errorf("pod %s lost another's gate: %v", p.Name, p.Spec.SchedulingGates)
			}
		}
		return out
	}

	reconcile() // creates the unit
	reconcile()
	if diff := cmp.Diff([]string{"j-a", "j-b", "j-big", "j-c"}, stillGated()); diff != "" {
		t.Errorf("while the unit waits (-want +got):\n%s", diff)
	}
	admitUnit(t, c, req.NamespacedName)
	reconcile() // releases the Job
	reconcile()
	if diff := cmp.Diff([]string{"j-b", "j-big", "j-c"}, stillGated()); diff != "" {
		t.Errorf("released, a pod of the earlier run still on its node (-want +got):\n%s", diff)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(leaving), leaving); err != nil {
		t.Fatal(err)
	}
	leaving.Finalizers = nil
	if err := c.Update(ctx, leaving); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if diff := cmp.Diff([]string{"j-big", "j-c"}, stillGated()); diff != "" {
		t.Errorf("the earlier pod gone (-want +got):\n%s", diff)
	}
	var warned bool
	for len(recorder.Events) > 0 {
		e := <-recorder.Events
		warned = warned || strings.Contains(e, framework.ReasonPodGated) && strings.Contains(e, "Pod j-big waits") && strings.Contains(e, "asks for cpu=4")
	}
	if !warned {
		t.Errorf("no Warning %s names the pod larger than its admission", framework.ReasonPodGated)
	}
}

// TestReconcileSuspendsAJobResumedBeforeItsRelease: a Job resumed by hand
// after its unit's admission, before the reconciler released it, is
// suspended and then released as a release does, so that its pods, gated
// meanwhile, are let through.
func TestReconcileSuspendsAJobResumedBeforeItsRelease(t *testing.T) {
	ctx := context.Background()
	j := extensionstest.MakeJob("j", "ns").Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
	j.UID = "uid-now"
	c := frameworktest.ClientBuilder(t, testScheme(t)).WithObjects(j).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	r := framework.NewJobReconciler(c, c, record.NewFakeRecorder(100), Integration(), framework.WithStatusDelay(0))
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
	reconcile := func() *batchv1.Job {
		t.Helper()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		got := &batchv1.Job{}
		if err := c.Get(ctx, req.NamespacedName, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	reconcile() // creates the unit
	u := admitUnit(t, c, req.NamespacedName)
	if err := c.Get(ctx, req.NamespacedName, j); err != nil {
		t.Fatal(err)
	}
	j.Spec.Suspend = ptr.To(false) // kubectl patch, before the release
	if err := c.Update(ctx, j); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Suspended  bool
		ReleasedBy string
	}
	look := func(j *batchv1.Job) seen {
		return seen{Suspended: ptr.Deref(j.Spec.Suspend, false), ReleasedBy: j.Annotations[schedulingv1alpha1.AnnotationReleasedBy]}
	}
	if diff := cmp.Diff(seen{Suspended: true}, look(reconcile())); diff != "" {
		t.Errorf("resumed before its release (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(seen{ReleasedBy: string(u.UID)}, look(reconcile())); diff != "" {
		t.Errorf("the next pass (-want +got):\n%s", diff)
	}
}

// TestReconcileCountsTheGatesItOpenedBeforeTheCacheShowsThem: a pod whose
// gate the reconciler opened still looks gated in the cache for a moment.
// Meanwhile it keeps its slot: a pod gated after it is not let through in
// its place (the reconciler goes through gated pods in name order, and the
// new one comes first), and the pod webhook, sharing what is expected,
// gates a new pod too.
func TestReconcileCountsTheGatesItOpenedBeforeTheCacheShowsThem(t *testing.T) {
	ctx := context.Background()
	j := extensionstest.MakeJob("j", "ns").Quota("team-a").Parallelism(1).Request("cpu", "1").Obj()
	j.UID = "uid-now"
	scheme := testScheme(t)
	base := frameworktest.ClientBuilder(t, scheme).WithObjects(j).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	// The cache lags the pods' patches: a patched pod is listed as it was
	// until the test lets the cache catch up.
	stale := map[string]*corev1.Pod{}
	c := interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if p, ok := obj.(*corev1.Pod); ok {
				stale[p.Name] = p.DeepCopy()
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if pods, ok := list.(*corev1.PodList); ok {
				for i, p := range pods.Items {
					if old, ok := stale[p.Name]; ok {
						pods.Items[i] = *old
					}
				}
			}
			return nil
		},
	})
	slots := framework.NewSlotExpectations(clock.RealClock{})
	r := framework.NewJobReconciler(c, c, record.NewFakeRecorder(100), Integration(), framework.WithStatusDelay(0), framework.WithSlotExpectations(slots))
	gate := framework.NewPodGate(c, c, scheme, []framework.Integration{Integration()}, framework.Scope{}, slots)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
	reconcile := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		return res
	}
	jobGVK := batchv1.SchemeGroupVersion.WithKind("Job")
	gated := func(name string) *corev1.Pod {
		p := wrappers.MakePod(name, "ns").ControlledBy(j, jobGVK).Requests("cpu", "1").Obj()
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: schedulingv1alpha1.SchedulingGateAdmission}}
		return p
	}
	open := func() []string {
		t.Helper()
		var pods corev1.PodList
		if err := base.List(ctx, &pods, client.InNamespace("ns")); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pods.Items {
			if len(p.Spec.SchedulingGates) == 0 {
				out = append(out, p.Name)
			}
		}
		return out
	}

	if err := c.Create(ctx, gated("j-x")); err != nil {
		t.Fatal(err)
	}
	reconcile() // creates the unit
	admitUnit(t, c, req.NamespacedName)
	reconcile() // releases the Job
	reconcile() // opens j-x's gate; the cache still shows it gated
	if diff := cmp.Diff([]string{"j-x"}, open()); diff != "" {
		t.Fatalf("released (-want +got):\n%s", diff)
	}
	if err := c.Create(ctx, gated("j-a")); err != nil {
		t.Fatal(err)
	}
	// It looks again when j-x would be forgotten unseen.
	if res := reconcile(); res.RequeueAfter <= 0 || res.RequeueAfter > 10*time.Second {
		t.Errorf("held back by a pod expected, the reconciler looks again after %s, want (0, 10s]", res.RequeueAfter)
	}
	if diff := cmp.Diff([]string{"j-x"}, open()); diff != "" {
		t.Errorf("a pod gated after the one let through (-want +got):\n%s", diff)
	}
	v, err := gate.Decide(ctx, wrappers.MakePod("", "ns").ControlledBy(j, jobGVK).Requests("cpu", "1").Obj())
	if err != nil {
		t.Fatal(err)
	}
	if !v.Gate {
		t.Errorf("the webhook let a new pod in beside the one whose gate was opened: %+v", v)
	}
	clear(stale) // the cache catches up
	reconcile()
	if diff := cmp.Diff([]string{"j-x"}, open()); diff != "" {
		t.Errorf("the cache caught up (-want +got):\n%s", diff)
	}
}

// admitUnit admits the unit called key, in c, whole, to quota team-a.
func admitUnit(t *testing.T, c client.Client, key client.ObjectKey) *schedulingv1alpha1.QueueUnit {
	t.Helper()
	u := &schedulingv1alpha1.QueueUnit{}
	if err := c.Get(context.Background(), key, u); err != nil {
		t.Fatal(err)
	}
	queueunit.Admit(u, "team-a", queueunit.Request(u), nil, nil, metav1.Now())
	if err := c.Status().Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestReconcileLooksAgainAtAGateItCouldNotOpen: the gate of a pod gone
// before it was opened frees the pod's slot at once, and the reconciler
// looks again once the cache has likely caught up; a pod whose gates
// changed keeps its slot until it is seen again, and the reconciler looks
// again when the slot would be given back.
func TestReconcileLooksAgainAtAGateItCouldNotOpen(t *testing.T) {
	for name, tc := range map[string]struct {
		patchErr        error
		wantRequeue     time.Duration
		wantNewPodGated bool
	}{
		"the pod is gone": {
			patchErr:    apierrors.NewNotFound(corev1.Resource("pods"), "j-x"),
			wantRequeue: time.Second,
		},
		"the pod's gates changed": {
			patchErr:        apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), "j-x", nil),
			wantRequeue:     10 * time.Second,
			wantNewPodGated: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			j := extensionstest.MakeJob("j", "ns").Quota("team-a").Parallelism(1).Request("cpu", "1").Obj()
			j.UID = "uid-now"
			scheme := testScheme(t)
			base := frameworktest.ClientBuilder(t, scheme).WithObjects(j).
				WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
			c := interceptor.NewClient(base, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if _, ok := obj.(*corev1.Pod); ok {
						return tc.patchErr
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			})
			slots := framework.NewSlotExpectations(clock.RealClock{})
			r := framework.NewJobReconciler(c, c, record.NewFakeRecorder(100), Integration(), framework.WithStatusDelay(0), framework.WithSlotExpectations(slots))
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
			reconcile := func() ctrl.Result {
				t.Helper()
				res, err := r.Reconcile(ctx, req)
				if err != nil {
					t.Fatalf("Reconcile: %v", err)
				}
				return res
			}
			jobGVK := batchv1.SchemeGroupVersion.WithKind("Job")
			x := wrappers.MakePod("j-x", "ns").ControlledBy(j, jobGVK).Requests("cpu", "1").Obj()
			x.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: schedulingv1alpha1.SchedulingGateAdmission}}
			if err := c.Create(ctx, x); err != nil {
				t.Fatal(err)
			}
			reconcile() // creates the unit
			admitUnit(t, c, req.NamespacedName)
			reconcile() // releases the Job
			if got := reconcile().RequeueAfter; got != tc.wantRequeue {
				t.Errorf("looks again after %s, want %s", got, tc.wantRequeue)
			}
			gate := framework.NewPodGate(c, c, scheme, []framework.Integration{Integration()}, framework.Scope{}, slots)
			v, err := gate.Decide(ctx, wrappers.MakePod("", "ns").ControlledBy(j, jobGVK).Requests("cpu", "1").Obj())
			if err != nil {
				t.Fatal(err)
			}
			if v.Gate != tc.wantNewPodGated {
				t.Errorf("a new pod gated: %t, want %t (%s)", v.Gate, tc.wantNewPodGated, v.Why)
			}
		})
	}
}
