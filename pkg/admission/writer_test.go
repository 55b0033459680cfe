package admission

import (
	"context"
	"errors"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/koord-queue/koord-queue/apis"
	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// writerWorld is a Writer and its Cache over controller-runtime's fake
// client, holding one unit "ns/victim" as the API server has it.
type writerWorld struct {
	client   client.Client
	cache    *Cache
	writer   *Writer
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
}

func newWriterWorld(t *testing.T, inAPI *schedulingv1alpha1.QueueUnit) writerWorld {
	return newWriterWorldWith(t, inAPI, interceptor.Funcs{})
}

// newWriterWorldWith is newWriterWorld whose writer's client fails as
// faults says; ww.client stays the plain one.
func newWriterWorldWith(t *testing.T, inAPI *schedulingv1alpha1.QueueUnit, faults interceptor.Funcs) writerWorld {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(inAPI).WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}).Build()
	faulty := interceptor.NewClient(c, faults)
	cache := NewCache()
	recorder := record.NewFakeRecorder(100)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	w := NewWriter(faulty, faulty, recorder, cache, clk, WriterOptions{})
	return writerWorld{client: c, cache: cache, writer: w, recorder: recorder, clock: clk}
}

func victim() *schedulingv1alpha1.QueueUnit {
	return &schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "victim"},
		Spec:       schedulingv1alpha1.QueueUnitSpec{Resource: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		Status:     schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Enqueued},
	}
}

// admitInAPI writes the unit's admission as writeAdmission does.
func (ww writerWorld) admitInAPI(t *testing.T) *schedulingv1alpha1.QueueUnit {
	t.Helper()
	u := &schedulingv1alpha1.QueueUnit{}
	if err := ww.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "victim"}, u); err != nil {
		t.Fatal(err)
	}
	queueunit.Admit(u, "q", u.Spec.Resource, nil, nil, metav1.Now())
	if err := ww.client.Status().Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// serveQuota serves quota q (max 4 cpu) by Queue q.
func (ww writerWorld) serveQuota() {
	ww.cache.UpsertElasticQuota(&elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"},
		Spec: elasticquotav1alpha1.ElasticQuotaSpec{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}})
	ww.cache.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "q"}})
}

// admitInCore serves quota q (serveQuota), and has the core admit u in a
// cycle: the admission is decided, not written.
func (ww writerWorld) admitInCore(t *testing.T, u *schedulingv1alpha1.QueueUnit) {
	t.Helper()
	ww.serveQuota()
	ww.cache.UpsertUnit(u)
	if res := ww.cache.cycle(time.Unix(1000, 0), -1); len(res.Admissions) != 1 {
		t.Fatalf("first cycle admitted %v, want the unit", res.Admissions)
	}
}

// assume records in the cache that the core admitted key (decided, not
// written), as a cycle does.
func (ww writerWorld) assume(key string) *admission {
	r := ww.cache.units[key]
	r.admission = &admission{unit: r.unit, queue: "q", request: r.request}
	ww.cache.decisions.unwritten++
	return r.admission
}

// recordEviction records in the cache that key is to be evicted, as a
// cycle does for a victim.
func (ww writerWorld) recordEviction(key string, e eviction) {
	ww.cache.units[key].eviction = &e
	ww.writer.evict(key)
}

// change changes the unit in the API server, and then in the cache, as the
// informer would show it.
func (ww writerWorld) change(t *testing.T, change func(*schedulingv1alpha1.QueueUnit)) {
	t.Helper()
	u := ww.inAPI(t)
	change(u)
	if err := ww.client.Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	ww.cache.UpsertUnit(ww.inAPI(t))
}

func (ww writerWorld) inAPI(t *testing.T) *schedulingv1alpha1.QueueUnit {
	t.Helper()
	return ww.unitInAPI(t, "victim")
}

// unitInAPI is the unit ns/name as the API server has it.
func (ww writerWorld) unitInAPI(t *testing.T, name string) *schedulingv1alpha1.QueueUnit {
	t.Helper()
	u := &schedulingv1alpha1.QueueUnit{}
	if err := ww.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestEvictionOfAnAdmissionNotSeenYet: the core admitted a unit and, before
// the informer brought its admission back, chose it as a victim. The
// eviction must not be dropped on the cache's stale copy (still Enqueued):
// the unit would run on, and the unit owed its quota would wait for it.
func TestEvictionOfAnAdmissionNotSeenYet(t *testing.T) {
	ctx := context.Background()
	const key = "ns/victim"
	evict := eviction{reason: schedulingv1alpha1.EvictedByPreemption, message: "preempted to reclaim the min of quota owed"}

	t.Run("the admission landed, the cache has not seen it", func(t *testing.T) {
		ww := newWriterWorld(t, victim())
		ww.cache.UpsertUnit(victim())
		ww.assume(key)
		ww.admitInAPI(t)
		ww.recordEviction(key, evict)
		if err := ww.writer.writeEviction(ctx, key); err != nil {
			t.Fatalf("writeEviction: %v", err)
		}
		if u := ww.inAPI(t); u.Status.Phase != schedulingv1alpha1.Enqueued || !queueunit.Evicted(u) {
			t.Errorf("in the API server: phase %s, Evicted %v; want Enqueued and evicted", u.Status.Phase, queueunit.Evicted(u))
		}
	})

	t.Run("the admission is not written yet: the eviction waits for it", func(t *testing.T) {
		ww := newWriterWorld(t, victim())
		ww.cache.UpsertUnit(victim())
		ww.assume(key)
		ww.recordEviction(key, evict)
		if err := ww.writer.writeEviction(ctx, key); err == nil {
			t.Fatal("writeEviction = nil while the admission is still to be written; want an error, so that it is retried")
		}
		// The admission lands and the cache sees it: the retry evicts.
		written := ww.admitInAPI(t)
		ww.cache.UpsertUnit(written)
		if err := ww.writer.writeEviction(ctx, key); err != nil {
			t.Fatalf("writeEviction after the admission: %v", err)
		}
		u := ww.inAPI(t)
		if c := meta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitEvicted); u.Status.Phase != schedulingv1alpha1.Enqueued || c == nil || c.Reason != evict.reason {
			t.Errorf("in the API server: phase %s, Evicted %+v; want Enqueued, evicted by preemption", u.Status.Phase, c)
		}
	})

	t.Run("the admission was written and given back before the cache saw it: nothing to evict", func(t *testing.T) {
		u := victim()
		u.Labels = map[string]string{elasticquotav1alpha1.LabelQuotaName: "q"}
		ww := newWriterWorld(t, u)
		ww.admitInCore(t, u)
		if err := ww.writer.writeAdmission(ctx, key); err != nil {
			t.Fatalf("writeAdmission: %v", err)
		}
		released := ww.inAPI(t)
		queueunit.FollowJob(released, queueunit.JobState{Finished: true, Succeeded: true}, metav1.Now())
		if err := ww.client.Status().Update(ctx, released); err != nil {
			t.Fatal(err)
		}
		ww.recordEviction(key, evict)
		// Waiting for an admission that is written would wait until the
		// informer caught up, retried with backoff meanwhile.
		if err := ww.writer.writeEviction(ctx, key); err != nil {
			t.Fatalf("writeEviction: %v", err)
		}
		if u := ww.inAPI(t); u.Status.Phase != schedulingv1alpha1.Succeed || queueunit.Evicted(u) {
			t.Errorf("in the API server: phase %s, Evicted %v; want Succeed, not evicted", u.Status.Phase, queueunit.Evicted(u))
		}
	})

	t.Run("the admission was forgotten: nothing to evict", func(t *testing.T) {
		ww := newWriterWorld(t, victim())
		ww.cache.UpsertUnit(victim())
		ww.recordEviction(key, evict)
		if err := ww.writer.writeEviction(ctx, key); err != nil {
			t.Fatalf("writeEviction: %v", err)
		}
		if u := ww.inAPI(t); queueunit.Evicted(u) {
			t.Errorf("a unit that never held quota was marked evicted")
		}
	})
}

// TestNoWriteOnAFinishedUnit: koord-queue's cache keeps of a finished unit
// only FinishedStatus, so no status write may be based on that copy: its
// merge patch would write the conditions list without the ones dropped.
// Whatever was pending when the unit finished (its admission, an eviction,
// a verdict on its checks, a wait message, spec.queue), nothing is written.
func TestNoWriteOnAFinishedUnit(t *testing.T) {
	ctx := context.Background()
	const key = "ns/victim"
	finish := func(t *testing.T, ww writerWorld) *schedulingv1alpha1.QueueUnit {
		t.Helper()
		u := ww.inAPI(t)
		queueunit.FollowJob(u, queueunit.JobState{Finished: true, Succeeded: true}, metav1.Now())
		if err := ww.client.Status().Update(ctx, u); err != nil {
			t.Fatal(err)
		}
		finished := ww.inAPI(t)
		cut := finished.DeepCopy()
		cut.Status = FinishedStatus(&cut.Status)
		ww.cache.UpsertUnit(cut)
		return finished
	}
	scenarios := map[string]func(*testing.T, writerWorld){
		"admitted, then finished with an eviction pending": func(t *testing.T, ww writerWorld) {
			ww.cache.UpsertUnit(ww.admitInAPI(t))
			ww.recordEviction(key, eviction{reason: schedulingv1alpha1.EvictedByPreemption, message: "preempted"})
		},
		"admitted in the core, finished before the admission was written": func(t *testing.T, ww writerWorld) {
			u := ww.inAPI(t)
			ww.admitInCore(t, u)
		},
	}
	type write struct {
		what  string
		write func(writerWorld) error
	}
	writes := []write{
		{"admission", func(ww writerWorld) error { return ww.writer.writeAdmission(ctx, key) }},
		{"eviction", func(ww writerWorld) error { return ww.writer.writeEviction(ctx, key) }},
		{"verdict", func(ww writerWorld) error { return ww.writer.writeChecksVerdict(ctx, key) }},
		{"message", func(ww writerWorld) error { ww.writer.writeMessage(ctx, key); return nil }},
		{"queue", func(ww writerWorld) error { ww.writer.writeQueueName(ctx, key); return nil }},
	}
	// In the order the writer queues them, and backwards: the writer's
	// workers promise no order.
	backwards := slices.Clone(writes)
	slices.Reverse(backwards)
	for order, writes := range map[string][]write{"in order": writes, "backwards": backwards} {
		for name, tc := range scenarios {
			t.Run(order+"/"+name, func(t *testing.T) {
				u := victim()
				u.Labels = map[string]string{elasticquotav1alpha1.LabelQuotaName: "q"}
				ww := newWriterWorld(t, u)
				tc(t, ww)
				finished := finish(t, ww)
				for _, w := range writes {
					if err := w.write(ww); err != nil {
						t.Errorf("writing the %s: %v", w.what, err)
					}
				}
				if diff := cmp.Diff(finished, ww.inAPI(t)); diff != "" {
					t.Errorf("the finished unit was written (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestAdmissionOfAUnitDeactivatedMeanwhile: the core admitted a unit that
// was deactivated (or is being deleted) before the admission was written.
// The write is skipped, and the next cycle must not admit it again: that
// loop never ended.
func TestAdmissionOfAUnitDeactivatedMeanwhile(t *testing.T) {
	for name, change := range map[string]func(*testing.T, writerWorld){
		"deactivated": func(t *testing.T, ww writerWorld) {
			ww.change(t, func(u *schedulingv1alpha1.QueueUnit) { u.Spec.Active = ptr.To(false) })
		},
		"being deleted": func(t *testing.T, ww writerWorld) {
			ww.change(t, func(u *schedulingv1alpha1.QueueUnit) { u.Finalizers = []string{"example.com/keep"} })
			if err := ww.client.Delete(context.Background(), ww.inAPI(t)); err != nil {
				t.Fatal(err)
			}
			ww.cache.UpsertUnit(ww.inAPI(t))
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			u := victim()
			u.Labels = map[string]string{elasticquotav1alpha1.LabelQuotaName: "q"}
			ww := newWriterWorld(t, u)
			ww.admitInCore(t, u)
			// Changed before the admission is written, and the cache sees it.
			change(t, ww)
			if err := ww.writer.writeAdmission(ctx, "ns/victim"); err != nil {
				t.Fatalf("writeAdmission: %v", err)
			}
			if got := ww.inAPI(t); queueunit.HoldsQuota(got) {
				t.Fatalf("the admission of a unit %s was written", name)
			}
			if res := ww.cache.cycle(time.Unix(1001, 0), -1); len(res.Admissions) != 0 {
				t.Errorf("the next cycle admitted %v again", res.Admissions)
			}
		})
	}
}

// TestAdmissionOfAUnitResizedMeanwhile: a unit admitted at one size and
// resized (its job changed) before the admission was written must not be
// charged, and admitted, at its new size without the fit check: 6 cpu in a
// quota of 4 was.
func TestAdmissionOfAUnitResizedMeanwhile(t *testing.T) {
	ctx := context.Background()
	u := victim()
	u.Labels = map[string]string{elasticquotav1alpha1.LabelQuotaName: "q"}
	u.Spec.Resource = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	ww := newWriterWorld(t, u)
	ww.admitInCore(t, u)
	ww.change(t, func(u *schedulingv1alpha1.QueueUnit) {
		u.Spec.Resource = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")}
	})
	if err := ww.writer.writeAdmission(ctx, "ns/victim"); err != nil {
		t.Fatalf("writeAdmission: %v", err)
	}
	if got := ww.inAPI(t); queueunit.HoldsQuota(got) {
		t.Errorf("admitted at its new size, %v, without a fit check", got.Status.Admissions)
	}
	if used := ww.cache.core.Quotas().Used("q"); used.Cpu().Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("quota q charged %s cpu, over its max of 4", used.Cpu())
	}
	if res := ww.cache.cycle(time.Unix(1001, 0), -1); len(res.Admissions) != 0 {
		t.Errorf("6 cpu admitted into a quota of 4: %v", res.Admissions)
	}
}

// TestWholeAdmissionRecordsNoEvent: a whole admission is one write, the
// unit's status, which says it (phase, the Admitted condition and message);
// an event would be a second write per unit saying the same. A partial
// admission gets its Scheduled event (test/integration/admission).
func TestWholeAdmissionRecordsNoEvent(t *testing.T) {
	ctx := context.Background()
	u := victim()
	u.Labels = map[string]string{elasticquotav1alpha1.LabelQuotaName: "q"}
	ww := newWriterWorld(t, u)
	ww.admitInCore(t, u)
	if err := ww.writer.writeAdmission(ctx, "ns/victim"); err != nil {
		t.Fatalf("writeAdmission: %v", err)
	}
	if got := ww.inAPI(t); !queueunit.HoldsQuota(got) {
		t.Fatalf("not admitted: %+v", got.Status)
	}
	close(ww.recorder.Events)
	var events []string
	for e := range ww.recorder.Events {
		events = append(events, e)
	}
	if len(events) != 0 {
		t.Errorf("events %q, want none", events)
	}
}

func reserved(ww writerWorld) bool {
	used := ww.cache.core.Quotas().Used("q")
	return !used.Cpu().IsZero()
}

// TestAdmissionWriteFailures: what the writer does with its decision when
// the API server fails the write. Quota is never handed out twice: a write
// that may have landed keeps its reservation; only a refusal frees it.
func TestAdmissionWriteFailures(t *testing.T) {
	errTimeout := apierrors.NewTimeoutError("request timed out", 1)
	type outcome struct {
		WriteErr      bool
		Reserved      bool // the core still charges the unit
		Unwritten     int  // admissions counted against the writer's budget
		HoldsInAPI    bool
		Attempts      int64
		AdmittedAgain bool // by the next cycle
	}
	cases := map[string]struct {
		patch func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error
		get   func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
		want  outcome
	}{
		"written": {
			want: outcome{Reserved: true, HoldsInAPI: true, Attempts: 1},
		},
		"timed out after it landed: written once": {
			patch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				if err := c.SubResource(sub).Patch(ctx, obj, p, opts...); err != nil {
					return err
				}
				return errTimeout
			},
			want: outcome{Reserved: true, HoldsInAPI: true, Attempts: 1},
		},
		"timed out, and the unit cannot be read: the reservation is kept": {
			patch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
				return errTimeout
			},
			get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return errors.New("connection refused")
			},
			want: outcome{WriteErr: true, Reserved: true, Unwritten: 1},
		},
		"refused: forgotten, and decided again": {
			patch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "queueunits"}, "victim", errors.New("denied"))
			},
			want: outcome{WriteErr: true, AdmittedAgain: true, Unwritten: 1},
		},
		"the unit is gone: forgotten": {
			patch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "queueunits"}, "victim")
			},
			want: outcome{AdmittedAgain: true, Unwritten: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			u := victim()
			u.Labels = map[string]string{elasticquotav1alpha1.LabelQuotaName: "q"}
			ww := newWriterWorldWith(t, u, interceptor.Funcs{SubResourcePatch: tc.patch, Get: tc.get})
			ww.admitInCore(t, u)
			err := ww.writer.writeAdmission(ctx, "ns/victim")
			inAPI := ww.inAPI(t)
			got := outcome{
				WriteErr:   err != nil,
				Reserved:   reserved(ww),
				HoldsInAPI: queueunit.HoldsQuota(inAPI),
				Attempts:   inAPI.Status.Attempts,
			}
			got.AdmittedAgain = len(ww.cache.cycle(time.Unix(1001, 0), -1).Admissions) > 0
			got.Unwritten = ww.cache.decisions.unwrittenAdmissions()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("after writeAdmission (-want +got):\n%s\nerr: %v", diff, err)
			}
		})
	}
}

// TestAdmissionUndoneBeforeItIsSeen: an admission written, then undone (the
// unit evicted and its quota given back) before the informer showed
// it admitted, as a relist shows only the latest state. The Cache must not
// keep charging it: its quota would be lost until a restart. (Found by
// FuzzAdmissionWithTheWriter.)
func TestAdmissionUndoneBeforeItIsSeen(t *testing.T) {
	ctx := context.Background()
	u := victim()
	u.Labels = map[string]string{elasticquotav1alpha1.LabelQuotaName: "q"}
	ww := newWriterWorld(t, u)
	ww.admitInCore(t, u)
	if err := ww.writer.writeAdmission(ctx, "ns/victim"); err != nil {
		t.Fatalf("writeAdmission: %v", err)
	}
	// Evicted, its quota given back, before the informer brought the
	// admission back.
	evicted := ww.inAPI(t)
	queueunit.Evict(evicted, schedulingv1alpha1.EvictedByPreemption, "preempted", metav1.Now())
	if err := ww.client.Status().Update(ctx, evicted); err != nil {
		t.Fatal(err)
	}
	ww.cache.UpsertUnit(ww.inAPI(t))
	if used := ww.cache.core.Quotas().Used("q"); !used.Cpu().IsZero() {
		t.Errorf("quota q still charged %s cpu for a unit evicted and holding nothing", used.Cpu())
	}
}

// TestPinOfAFallbackUnitIsRepaired: a unit charged through its namespace's
// quota whose spec.queue pin did not land after its admission gets it at
// its next event, so that a koord-queue restarted after the quota is
// deleted still counts what its pods use.
func TestPinOfAFallbackUnitIsRepaired(t *testing.T) {
	ctx := context.Background()
	quota := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ns"},
		Spec: elasticquotav1alpha1.ElasticQuotaSpec{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	running := victim()
	running.Spec.Resource = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	queueunit.Admit(running, "ns", running.Spec.Resource, nil, nil, metav1.Now())
	running.Status.Phase = schedulingv1alpha1.Running
	ww := newWriterWorld(t, running)
	ww.cache.UpsertElasticQuota(quota)
	ww.cache.UpsertUnit(ww.inAPI(t))
	for _, key := range ww.cache.takeDirty().pin {
		ww.writer.writeQueueName(ctx, key)
	}
	if got := ww.inAPI(t).Spec.Queue; got != "ns" {
		t.Errorf("spec.queue is %q, want the queue it is charged in, ns", got)
	}
	restarted := NewCache()
	restarted.UpsertUnit(ww.inAPI(t))                       // its quota deleted meanwhile
	restarted.UpsertNode(wrappers.Node("n1", "32", "64Gi")) // after it: its charge counts the cpu the node names
	used := restarted.core.Quotas().Used(elasticquotav1alpha1.RootQuotaName)
	if got := used.Cpu().String(); got != "3" {
		t.Errorf("restarted after its quota was deleted, the cluster uses %s cpu, want its 3", got)
	}
}

// TestWaitMessageEvents: a waiting unit's status says why it waits; a
// Warning FailedScheduling event says it too only when the unit was tried
// and did not fit (or has a problem). A unit waiting its turn behind others
// in its queue is a queue at work, not a failure: its status says where it
// waits, and an event would be a second write per waiting unit.
func TestWaitMessageEvents(t *testing.T) {
	ctx := context.Background()
	unit := func(name, cpu string) *schedulingv1alpha1.QueueUnit {
		return wrappers.MakeQueueUnit(name, "ns").Quota("q").Request(corev1.ResourceCPU, cpu).Obj()
	}
	cases := []struct {
		name       string
		explain    string
		wantReason string
		wantEvents []string
	}{
		{
			name:       "the head of the queue does not fit: status and event",
			explain:    "ns/head",
			wantReason: "q: cpu 4 used of max 4, request 4",
			wantEvents: []string{"Warning FailedScheduling q: cpu 4 used of max 4, request 4"},
		},
		{
			name:       "waiting behind the head: status only",
			explain:    "ns/behind",
			wantReason: "waiting in queue q at position 2 of 2, behind ns/head",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			holder := unit("holder", "4")
			ww := newWriterWorld(t, holder)
			ww.cache.UpsertElasticQuota(&elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"},
				Spec: elasticquotav1alpha1.ElasticQuotaSpec{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}})
			ww.cache.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "q"}})
			ww.cache.UpsertUnit(holder)
			if res := ww.cache.cycle(time.Unix(1000, 0), -1); len(res.Admissions) != 1 {
				t.Fatalf("first cycle admitted %v, want the holder", res.Admissions)
			}
			for _, u := range []*schedulingv1alpha1.QueueUnit{unit("head", "4"), unit("behind", "4")} {
				u.CreationTimestamp = metav1.NewTime(ww.clock.Now())
				ww.clock.Step(time.Second)
				if err := ww.client.Create(ctx, u); err != nil {
					t.Fatal(err)
				}
				ww.cache.UpsertUnit(u)
			}
			if res := ww.cache.cycle(ww.clock.Now(), -1); len(res.Admissions) != 0 {
				t.Fatalf("second cycle admitted %v, want none", res.Admissions)
			}

			ww.writer.writeMessage(ctx, tc.explain)

			ns, name, _ := strings.Cut(tc.explain, "/")
			got := &schedulingv1alpha1.QueueUnit{}
			if err := ww.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
				t.Fatal(err)
			}
			if got.Status.Message != tc.wantReason {
				t.Errorf("status.message %q, want %q", got.Status.Message, tc.wantReason)
			}
			close(ww.recorder.Events)
			var events []string
			for e := range ww.recorder.Events {
				events = append(events, e)
			}
			if diff := cmp.Diff(tc.wantEvents, events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWaitMessagesWaitForAQuietMoment: why a unit waits is written only
// once no admission has been written for quietAfterUrgent: while
// admissions flow, each such write is one admission fewer.
func TestWaitMessagesWaitForAQuietMoment(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder := wrappers.MakeQueueUnit("holder", "ns").Quota("q").Request(corev1.ResourceCPU, "4").Obj()
	ww := newWriterWorld(t, holder)
	ww.admitInCore(t, holder)
	// The holder's admission is written now.
	ww.writer.admit("ns/holder")
	if !ww.writer.processUrgent(ctx) {
		t.Fatal("the urgent queue shut down")
	}
	waiting := wrappers.MakeQueueUnit("waiting", "ns").Quota("q").Request(corev1.ResourceCPU, "4").Obj()
	if err := ww.client.Create(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	ww.cache.UpsertUnit(waiting)
	ww.cache.cycle(ww.clock.Now(), -1)

	delays := deferredWriteDelays(t)
	ww.writer.explain("ns/waiting")
	written := make(chan struct{})
	go func() {
		// The holder's spec.queue first, then the message.
		for ww.cache.owedWrites.owesWrites() && ww.writer.processDeferred(ctx) {
		}
		close(written)
	}()
	message := func() string {
		u := &schedulingv1alpha1.QueueUnit{}
		if err := ww.client.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "waiting"}, u); err != nil {
			t.Fatal(err)
		}
		return u.Status.Message
	}
	// Step the clock to just short of quiet, one retry at a time.
	for range quietAfterUrgent/deferredRetry - 1 {
		waitForWaiter(t, ww.clock, written)
		ww.clock.Step(deferredRetry)
	}
	waitForWaiter(t, ww.clock, written)
	if got := message(); got != "" {
		t.Fatalf("status.message %q written %v after an admission, want nothing before %v", got, quietAfterUrgent-deferredRetry, quietAfterUrgent)
	}
	ww.clock.Step(deferredRetry)
	select {
	case <-written:
	case <-time.After(testTimeout):
		t.Fatalf("no message written %v after the last admission", quietAfterUrgent)
	}
	if got, want := message(), "q: cpu 4 used of max 4, request 4"; got != want {
		t.Errorf("status.message %q, want %q", got, want)
	}
	// The holder's spec.queue and the message, each owed since the
	// admission, a quiet moment before.
	if got, want := deferredWriteDelays(t).Sub(delays), (sampleSum{2, 2 * quietAfterUrgent.Seconds()}); got != want {
		t.Errorf("koord_queue_deferred_write_delay_seconds grew by %+v, want %+v", got, want)
	}
}

// sampleSum is a histogram's count and sum.
type sampleSum struct {
	count uint64
	sum   float64
}

func (a sampleSum) Sub(b sampleSum) sampleSum { return sampleSum{a.count - b.count, a.sum - b.sum} }

// deferredWriteDelays reads koord_queue_deferred_write_delay_seconds.
func deferredWriteDelays(t *testing.T) sampleSum {
	t.Helper()
	var pb dto.Metric
	if err := metrics.DeferredWriteDelay.Write(&pb); err != nil {
		t.Fatal(err)
	}
	return sampleSum{pb.Histogram.GetSampleCount(), pb.Histogram.GetSampleSum()}
}

// testTimeout bounds a wait for another goroutine: reaching it fails the test.
const testTimeout = 30 * time.Second

// waitForWaiter waits until something waits on clk, failing if done
// closes first.
func waitForWaiter(t *testing.T, clk *clocktesting.FakeClock, done <-chan struct{}) {
	t.Helper()
	deadline := time.After(testTimeout)
	for !clk.HasWaiters() {
		select {
		case <-done:
			t.Fatal("the deferred write did not wait")
		case <-deadline:
			t.Fatal("nothing waits on the clock")
		default:
			goruntime.Gosched()
		}
	}
}

// TestASentAdmissionIsChargedUntilItIsAnswered: once the writer has sent an
// admission, it may land whatever happens meanwhile (its optimistic lock is
// on a unit nothing changed), so the room it takes is not handed to another
// unit until the API server answers: neither a shrink of the room elsewhere
// nor the unit's quota being resolved anew withdraws it.
func TestASentAdmissionIsChargedUntilItIsAnswered(t *testing.T) {
	ctx := context.Background()
	other := func(max string) *elasticquotav1alpha1.ElasticQuota {
		return wrappers.MakeElasticQuota("other", "quotas").Max(corev1.ResourceCPU, max).Obj()
	}
	cases := map[string]func(c *Cache){
		"another quota's max is lowered": func(c *Cache) { c.UpsertElasticQuota(other("2")) },
		"a node is lost":                 func(c *Cache) { c.DeleteNode("n2") },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			low := wrappers.MakeQueueUnit("low", "ns").Quota("team").Request(corev1.ResourceCPU, "4").Obj()
			sent, release := make(chan struct{}), make(chan struct{})
			ww := newWriterWorldWith(t, low, interceptor.Funcs{
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
					close(sent)
					<-release // on its way: the API server has not answered yet
					return c.SubResource(sub).Patch(ctx, obj, p, opts...)
				},
			})
			c := ww.cache
			c.UpsertNode(wrappers.Node("n1", "16", "64Gi"))
			c.UpsertNode(wrappers.Node("n2", "16", "64Gi"))
			c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "quotas").Max(corev1.ResourceCPU, "4").Obj())
			c.UpsertElasticQuota(other("4"))
			c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
			c.UpsertUnit(ww.unitInAPI(t, "low"))
			if res := c.cycle(ww.clock.Now(), -1); len(res.Admissions) != 1 {
				t.Fatalf("first cycle admitted %v, want low", res.Admissions)
			}
			written := make(chan error, 1)
			go func() { written <- ww.writer.writeAdmission(ctx, "ns/low") }()
			<-sent

			high := wrappers.MakeQueueUnit("high", "ns").Quota("team").Priority(5).Request(corev1.ResourceCPU, "4").Obj()
			if err := ww.client.Create(ctx, high); err != nil {
				t.Fatal(err)
			}
			c.UpsertUnit(ww.unitInAPI(t, "high"))
			change(c)
			res := c.cycle(ww.clock.Now(), -1)
			close(release)
			if err := <-written; err != nil {
				t.Fatalf("writeAdmission: %v", err)
			}
			if len(res.Admissions) != 0 {
				t.Errorf("admitted %v while low's admission, sent, could land", res.Admissions)
			}
			var held []string
			for _, key := range []string{"low", "high"} {
				if queueunit.HoldsQuota(ww.unitInAPI(t, key)) {
					held = append(held, key)
				}
			}
			if diff := cmp.Diff([]string{"low"}, held); diff != "" {
				t.Errorf("units holding team's 4 cpu (-want +got):\n%s", diff)
			}
		})
	}
}
