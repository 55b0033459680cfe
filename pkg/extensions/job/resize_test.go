package job

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
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

// resizeWorld is a Job of parallelism 2 and its reconciler, over a fake
// client that can admit the Job's unit just before the reconciler's next
// write of the unit lands (so that write conflicts and is retried on the
// admitted unit), and that counts the writes of the unit's spec.
type resizeWorld struct {
	t          *testing.T
	c          client.Client
	r          *framework.JobReconciler
	recorder   *record.FakeRecorder
	req        ctrl.Request
	admitFirst bool // admit the unit at its size before the next unit write
	unitWrites int
}

func newResizeWorld(t *testing.T) *resizeWorld {
	w := &resizeWorld{t: t, recorder: record.NewFakeRecorder(100)}
	j := extensionstest.MakeJob("j", "ns").Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
	w.req = ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
	base := frameworktest.ClientBuilder(t, testScheme(t)).WithObjects(j).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	w.c = interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*schedulingv1alpha1.QueueUnit); ok {
				w.unitWrites++
				if w.admitFirst {
					w.admitFirst = false
					w.setUnit(func(u *schedulingv1alpha1.QueueUnit) {
						queueunit.Admit(u, "team-a", queueunit.Request(u), nil, nil, metav1.Now())
					})
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	w.r = framework.NewJobReconciler(w.c, w.c, w.recorder, Integration(), framework.WithStatusDelay(0))
	return w
}

func (w *resizeWorld) reconcile() {
	w.t.Helper()
	if _, err := w.r.Reconcile(context.Background(), w.req); err != nil {
		w.t.Fatalf("Reconcile: %v", err)
	}
}

// unit is the Job's unit; nil when it has none.
func (w *resizeWorld) unit() *schedulingv1alpha1.QueueUnit {
	w.t.Helper()
	u := &schedulingv1alpha1.QueueUnit{}
	if err := w.c.Get(context.Background(), w.req.NamespacedName, u); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		w.t.Fatal(err)
	}
	return u
}

func (w *resizeWorld) setUnit(change func(*schedulingv1alpha1.QueueUnit)) {
	w.t.Helper()
	u := w.unit()
	change(u)
	if err := w.c.Status().Update(context.Background(), u); err != nil {
		w.t.Fatal(err)
	}
}

func (w *resizeWorld) setJob(change func(*batchv1.Job)) {
	w.t.Helper()
	j := w.job()
	change(j)
	if err := w.c.Update(context.Background(), j); err != nil {
		w.t.Fatal(err)
	}
}

func (w *resizeWorld) job() *batchv1.Job {
	w.t.Helper()
	j := &batchv1.Job{}
	if err := w.c.Get(context.Background(), w.req.NamespacedName, j); err != nil {
		w.t.Fatal(err)
	}
	return j
}

// state is what the test looks at: the Job, and the unit's size as its
// spec says and as it was admitted.
type resizeState struct {
	JobSuspended    bool
	JobParallelism  int32
	UnitExists      bool
	UnitPods        int32 // spec.podSet[main].count
	AdmittedPods    int64 // status.admissions[main].replicas; 0: none
	UnitHoldsQuota  bool
	UnitWritesSoFar int
}

func (w *resizeWorld) state() resizeState {
	w.t.Helper()
	j := w.job()
	s := resizeState{JobSuspended: (*Job)(j).IsSuspended(), JobParallelism: ptr.Deref(j.Spec.Parallelism, 1), UnitWritesSoFar: w.unitWrites}
	if u := w.unit(); u != nil {
		s.UnitExists, s.UnitPods, s.UnitHoldsQuota = true, u.Spec.PodSets[0].Count, queueunit.HoldsQuota(u)
		if len(u.Status.Admissions) > 0 {
			s.AdmittedPods = u.Status.Admissions[0].Replicas
		}
	}
	return s
}

func (w *resizeWorld) expect(step string, want resizeState) {
	w.t.Helper()
	if diff := cmp.Diff(want, w.state()); diff != "" {
		w.t.Errorf("%s (-want +got):\n%s", step, diff)
	}
}

// TestReconcileResizeRacingAnAdmission: a waiting Job resized from 2 to 6
// pods while koord-queue admits its unit at 2 never runs 6 pods on the
// quota of 2. The resize's write conflicts with the admission and is
// refused on the admitted unit; the Job is then queued again at 6. A unit
// whose spec says 6 while it was admitted at 2, however it came to, does not
// release its Job either; and an evicted unit whose Job's pods still run
// is not resized until they are gone.
func TestReconcileResizeRacingAnAdmission(t *testing.T) {
	t.Run("the resize conflicts with the admission at 2", func(t *testing.T) {
		w := newResizeWorld(t)
		w.reconcile() // creates the unit
		w.expect("queued", resizeState{JobSuspended: true, JobParallelism: 2, UnitExists: true, UnitPods: 2})
		w.setJob(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](6) })
		w.admitFirst = true
		w.reconcile() // resizes the unit, which koord-queue admits first
		w.expect("the resize met the admission", resizeState{JobSuspended: true, JobParallelism: 6,
			UnitExists: true, UnitPods: 2, AdmittedPods: 2, UnitHoldsQuota: true, UnitWritesSoFar: 1})
		w.reconcile() // the admitted unit's event: the Job is 6, its unit admitted at 2
		w.expect("admitted at 2, the Job asks for 6: not released, its unit let go", resizeState{
			JobSuspended: true, JobParallelism: 6, UnitWritesSoFar: 2}) // the resize's conflicted write, and the outgrown mark
		w.reconcile()
		w.expect("queued again at 6", resizeState{JobSuspended: true, JobParallelism: 6, UnitExists: true, UnitPods: 6, UnitWritesSoFar: 2})
	})

	t.Run("a unit admitted at 2 whose spec says 6 does not release 6 pods", func(t *testing.T) {
		w := newResizeWorld(t)
		w.reconcile() // creates the unit
		w.setUnit(func(u *schedulingv1alpha1.QueueUnit) {
			queueunit.Admit(u, "team-a", queueunit.Request(u), nil, nil, metav1.Now())
		})
		u := w.unit()
		u.Spec.PodSets[0].Count = 6 // written by a writer other than Patch
		if err := w.c.Update(context.Background(), u); err != nil {
			t.Fatal(err)
		}
		w.setJob(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](6) })
		w.reconcile()
		// One write: the unit marked outgrown before it goes.
		w.expect("not released at 6, its unit let go", resizeState{JobSuspended: true, JobParallelism: 6, UnitWritesSoFar: 1})
	})

	t.Run("evicted while its pods run: resized once they are gone", func(t *testing.T) {
		w := newResizeWorld(t)
		ctx := context.Background()
		w.reconcile() // creates the unit
		w.setUnit(func(u *schedulingv1alpha1.QueueUnit) {
			queueunit.Admit(u, "team-a", queueunit.Request(u), nil, nil, metav1.Now())
		})
		w.reconcile() // releases the Job
		var pods []*corev1.Pod
		for _, name := range []string{"j-a", "j-b"} {
			p := wrappers.MakePod(name, "ns").ControlledBy(w.job(), batchv1.SchemeGroupVersion.WithKind("Job")).
				Node("n1").Phase(corev1.PodRunning).Obj()
			if err := w.c.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			pods = append(pods, p)
		}
		w.setUnit(func(u *schedulingv1alpha1.QueueUnit) {
			queueunit.Evict(u, schedulingv1alpha1.EvictedByPreemption, "preempted", metav1.Now())
		})
		w.reconcile() // suspends the Job
		w.setJob(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](6) })
		writes := w.unitWrites
		w.reconcile()
		w.reconcile()
		w.expect("its pods still run", resizeState{JobSuspended: true, JobParallelism: 6,
			UnitExists: true, UnitPods: 2, AdmittedPods: 2, UnitHoldsQuota: true, UnitWritesSoFar: writes})
		for _, p := range pods {
			if err := w.c.Delete(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		w.reconcile()
		w.expect("its pods gone: it gives its quota back and asks for 6", resizeState{JobSuspended: true, JobParallelism: 6,
			UnitExists: true, UnitPods: 6, UnitWritesSoFar: writes + 1})
	})
}

// TestJobGrownPerPodAfterItsAdmissionIsQueuedAgain: a suspended Job's
// template may change (Kubernetes lets a suspended Job's pod resources
// change under MutablePodResourcesForSuspendedJobs); one raised from 1 to 3
// CPU per pod after its unit was admitted at 1 is not released at 3: its
// unit is let go, with a Warning naming the pod set and the resource, and
// the Job queued again at its new size.
func TestJobGrownPerPodAfterItsAdmissionIsQueuedAgain(t *testing.T) {
	w := newResizeWorld(t)
	w.reconcile() // creates the unit
	w.setUnit(func(u *schedulingv1alpha1.QueueUnit) {
		queueunit.Admit(u, "team-a", queueunit.Request(u), nil, nil, metav1.Now())
	})
	w.setJob(func(j *batchv1.Job) {
		j.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
	})
	w.reconcile()
	// One write: the unit marked outgrown before it goes.
	w.expect("not released at 3 CPU per pod, its unit let go", resizeState{JobSuspended: true, JobParallelism: 2, UnitWritesSoFar: 1})
	var events []string
	for len(w.recorder.Events) > 0 {
		events = append(events, <-w.recorder.Events)
	}
	want := "Warning Requeued The job grew past what its QueueUnit was admitted with (pod set main: cpu per pod 1 -> 3)"
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, want) }) {
		t.Errorf("events %q, want one starting %q", events, want)
	}
	w.reconcile()
	u := w.unit()
	if got := u.Spec.Request[corev1.ResourceCPU]; got.Cmp(resource.MustParse("6")) != 0 || queueunit.HoldsQuota(u) {
		t.Errorf("queued again asking for %s CPU, holding quota %v; want 6, waiting", got.String(), queueunit.HoldsQuota(u))
	}
}
