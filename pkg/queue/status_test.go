package queue

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/koord-queue/koord-queue/apis"
	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// testScheme is a scheme of koord-queue's API types.
func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// informedClient is builder's client, whose every Queue status patch is
// then upserted into cache, as koord-queue's informer would, and handed to
// written when it is not nil.
func informedClient(builder *fake.ClientBuilder, cache *admission.Cache, written func(client.Object)) client.Client {
	return interceptor.NewClient(builder.Build(), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			if written != nil {
				written(obj)
			}
			cache.UpsertQueue(obj.(*schedulingv1alpha1.Queue).DeepCopy())
			return nil
		}})
}

// reporter is a StatusWriter reading source, before Start: enough for
// reportQuotas and desiredStatus.
func reporter(source StatusSource, recorder record.EventRecorder) *StatusWriter {
	return &StatusWriter{cache: source, recorder: recorder, lastQuotaErrs: map[string]string{}, warnedDuplicates: map[types.UID]bool{}}
}

// TestQuotaMetricsGoWithTheirQuota: a deleted ElasticQuota's
// koord_queue_quota_resource series are deleted too, as its queue's gauges
// are, so dashboards do not chart a quota that is gone.
func TestQuotaMetricsGoWithTheirQuota(t *testing.T) {
	c := admission.NewCache()
	c.UpsertElasticQuota(&elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"},
		Spec: elasticquotav1alpha1.ElasticQuotaSpec{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}})
	reporter(c, nil).reportQuotas()
	before := testutil.CollectAndCount(metrics.QuotaResource)
	if before == 0 {
		t.Fatal("no quota_resource series for quota gone")
	}
	c.DeleteElasticQuota("ns", "gone")
	if after := testutil.CollectAndCount(metrics.QuotaResource); after != 0 {
		t.Errorf("%d quota_resource series left after the quota was deleted (%d before)", after, before)
	}
}

// TestDuplicateQuotaNameWarnedOnce: of two ElasticQuotas with one name in
// two namespaces, whatever order they arrive in, the one not used (the
// newer) gets one DuplicateQuotaName Warning event naming the one used, and
// only one however often the writer looks.
func TestDuplicateQuotaNameWarnedOnce(t *testing.T) {
	at := func(ns string, sec int64) *elasticquotav1alpha1.ElasticQuota {
		return &elasticquotav1alpha1.ElasticQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team", UID: types.UID(ns), CreationTimestamp: metav1.Unix(sec, 0)},
			Spec:       elasticquotav1alpha1.ElasticQuotaSpec{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
		}
	}
	older, newer := at("first", 100), at("second", 200)
	for name, order := range map[string][]*elasticquotav1alpha1.ElasticQuota{
		"older first": {older, newer},
		"newer first": {newer, older},
	} {
		t.Run(name, func(t *testing.T) {
			c := admission.NewCache()
			recorder := record.NewFakeRecorder(10)
			sw := reporter(c, recorder)
			for _, eq := range order {
				c.UpsertElasticQuota(eq)
				sw.reportQuotas()
			}
			sw.reportQuotas()
			var got []string
			for len(recorder.Events) > 0 {
				got = append(got, <-recorder.Events)
			}
			want := []string{"Warning DuplicateQuotaName Not used: ElasticQuota names are global in Koordinator and first/team, older, has this name; rename or delete this one"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusShowsTheTree: a Queue's status names its quota's tree (the
// pool, else the tree id; nothing for the classic tree) and its root, with
// what the quota and the whole tree hold and the tree's capacity, summed
// up for `kubectl get queues -o wide`, and what pods of no queued job hold
// in it.
func TestStatusShowsTheTree(t *testing.T) {
	type seen struct {
		Tree, TreeRoot, Used, TreeCapacity, TreeUsed, TreeUnqueued, TreeUsage string
	}
	pool := []*elasticquotav1alpha1.ElasticQuota{
		wrappers.MakeElasticQuota("a100", "kube-system").IsParent().
			Label(elasticquotav1alpha1.LabelQuotaTreeID, "t1").Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").
			Label(elasticquotav1alpha1.LabelQuotaProfile, "gpu-a100").
			Annotation(elasticquotav1alpha1.AnnotationTotalResource, `{"cpu":"8","nvidia.com/gpu":"4"}`).Obj(),
		wrappers.MakeElasticQuota("other", "other").Parent("a100").Label(elasticquotav1alpha1.LabelQuotaTreeID, "t1").Obj(),
		wrappers.MakeElasticQuota("team", "team").Parent("a100").Label(elasticquotav1alpha1.LabelQuotaTreeID, "t1").Obj(),
	}
	cases := map[string]struct {
		queue  string // default "team"
		quotas []*elasticquotav1alpha1.ElasticQuota
		want   seen
	}{
		"a queue of the classic tree": {
			quotas: []*elasticquotav1alpha1.ElasticQuota{wrappers.MakeElasticQuota("team", "team").Max(corev1.ResourceCPU, "10").Obj()},
			want:   seen{TreeRoot: elasticquotav1alpha1.RootQuotaName, Used: "cpu=6"},
		},
		"a queue of a pool's tree": {
			quotas: pool,
			want:   seen{Tree: "gpu-a100", TreeRoot: "a100", Used: "cpu=6"},
		},
		// Only the root's queue carries the tree's figures, which move with
		// every admission in the tree.
		"the queue of a pool's root": {
			queue:  "a100",
			quotas: pool,
			// A resource the root's total-resource does not name has none
			// in the tree. A bare pod of quota other holds 1 cpu.
			want: seen{Tree: "gpu-a100", TreeRoot: "a100", Used: "cpu=8", TreeCapacity: "cpu=8,memory=0,nvidia.com/gpu=4,pods=0", TreeUsed: "cpu=8",
				TreeUnqueued: "cpu=1", TreeUsage: "cpu 8/8, memory 0/0, nvidia.com/gpu 0/4, pods 0/0"},
		},
	}
	list := func(l corev1.ResourceList) string {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(l)) {
			q := l[name]
			parts = append(parts, string(name)+"="+q.String())
		}
		return strings.Join(parts, ",")
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := admission.NewCache()
			c.UpsertNode(wrappers.Node("n1", "32", "64Gi"))
			for _, eq := range tc.quotas {
				c.UpsertElasticQuota(eq)
			}
			name := tc.queue
			if name == "" {
				name = "team"
			}
			queue := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: name}}
			c.UpsertQueue(queue)
			admitted := func(name, quota, cpu string) *schedulingv1alpha1.QueueUnit {
				return wrappers.MakeQueueUnit(name, quota).Quota(quota).Request(corev1.ResourceCPU, cpu).
					Phase(schedulingv1alpha1.Running).RunningAdmission(schedulingv1alpha1.DefaultPodSetName, 1, 1).Obj()
			}
			c.UpsertUnit(admitted("mine", "team", "6"))
			if len(tc.quotas) > 1 {
				c.UpsertUnit(admitted("theirs", "other", "1"))
				c.UpsertPod(wrappers.MakePod("bare", "other").Quota("other").Requests("cpu", "1").Node("n1").Obj())
			}
			st := reporter(c, nil).desiredStatus(queue, metav1.Unix(10, 0))
			got := seen{Tree: st.Tree, TreeRoot: st.TreeRoot, Used: list(st.Used), TreeCapacity: list(st.TreeCapacity), TreeUsed: list(st.TreeUsed), TreeUnqueued: list(st.TreeUnqueued), TreeUsage: st.TreeUsage}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// admittingSource is a Cache whose admissions wait for their write at the
// ticks writing says.
type admittingSource struct {
	*admission.Cache
	writing func() bool
}

func (s admittingSource) WritingAdmissions() bool { return s.writing() }

// TestStatusLeavesTheBudgetToAdmissions: a Queue's status changes at every
// refresh while units arrive, and each write of it takes the client's
// budget from an admission. While admissions wait for their write it is
// written every four refresh intervals; otherwise at every interval. A
// backlog's admissions wait for their write at some ticks, not at all.
func TestStatusLeavesTheBudgetToAdmissions(t *testing.T) {
	tick := 0
	cases := map[string]struct {
		writing    func() bool
		wantWrites int
	}{
		"nothing to admit: a write every interval":                 {writing: func() bool { return false }, wantWrites: 5},
		"admissions to write: a write every 4 intervals":           {writing: func() bool { return true }, wantWrites: 2},
		"admissions to write at one tick in 3: every 4 intervals":  {writing: func() bool { return tick%3 == 1 }, wantWrites: 2},
		"admissions to write at one tick a minute: every interval": {writing: func() bool { return tick == 1 }, wantWrites: 4},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			scheme := testScheme(t)
			queue := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}}
			writes := 0
			c := interceptor.NewClient(
				fake.NewClientBuilder().WithScheme(scheme).WithObjects(queue.DeepCopy()).WithStatusSubresource(queue).Build(),
				interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					err := c.SubResource(sub).Patch(ctx, obj, patch, opts...)
					if err == nil { // the cache's copy is not updated: each write conflicts once first
						writes++
					}
					return err
				}})
			cache := admission.NewCache()
			cache.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "team").Max(corev1.ResourceCPU, "1").Obj())
			cache.UpsertQueue(queue)
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			sw := NewStatusWriter(c, c, record.NewFakeRecorder(10), admittingSource{Cache: cache, writing: tc.writing}, clk,
				StatusOptions{RefreshInterval: 15 * time.Second, TopN: 20})
			sw.lastWrite, sw.lastQuotaErrs, sw.warnedDuplicates = map[string]time.Time{}, map[string]string{}, map[types.UID]bool{}
			for i := range 61 { // a minute of ticks, a unit arriving at each
				tick = i
				cache.UpsertUnit(wrappers.MakeQueueUnit(fmt.Sprintf("u%d", i), "team").Quota("team").Request(corev1.ResourceCPU, "2").Obj())
				sw.refresh(ctx, logr.Discard())
				clk.Step(time.Second)
			}
			if writes != tc.wantWrites {
				t.Errorf("%d status writes in a minute, want %d", writes, tc.wantWrites)
			}
		})
	}
}

// TestStatusWritesQueuesInTurnsWithinABudget: with many queues whose
// status changes at every tick, a tick writes at most statusWritesPerTick
// of them (busyStatusWritesPerTick while admissions wait for their write),
// the longest unwritten first, so every queue still gets its turn; a queue
// whose Ready condition changed goes first and over the bound.
func TestStatusWritesQueuesInTurnsWithinABudget(t *testing.T) {
	const queues = 12
	cases := map[string]struct {
		writing  bool
		interval time.Duration // the refresh interval, stretched while busy
		perTick  int
	}{
		"nothing to admit":    {interval: 15 * time.Second, perTick: statusWritesPerTick},
		"admissions to write": {writing: true, interval: busyIntervals * 15 * time.Second, perTick: busyStatusWritesPerTick},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			scheme := testScheme(t)
			cache := admission.NewCache()
			builder := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&schedulingv1alpha1.Queue{})
			var names []string
			for i := range queues {
				name := fmt.Sprintf("q%02d", i)
				names = append(names, name)
				q := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: name}}
				builder.WithObjects(q.DeepCopy())
				cache.UpsertElasticQuota(wrappers.MakeElasticQuota(name, name).Max(corev1.ResourceCPU, "1").Obj())
				cache.UpsertQueue(q)
			}
			tick := 0
			written := map[string][]int{} // each queue's writes, by tick
			perTick := map[int]int{}
			c := informedClient(builder, cache, func(obj client.Object) {
				written[obj.GetName()] = append(written[obj.GetName()], tick)
				perTick[tick]++
			})
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			sw := NewStatusWriter(c, c, record.NewFakeRecorder(100), admittingSource{Cache: cache, writing: func() bool { return tc.writing }}, clk,
				StatusOptions{RefreshInterval: 15 * time.Second, TopN: 20})
			sw.lastWrite, sw.lastQuotaErrs, sw.warnedDuplicates = map[string]time.Time{}, map[string]string{}, map[types.UID]bool{}
			end := int(3 * tc.interval / time.Second)
			lost := int(tc.interval/time.Second) + queues // a tick after the last's turn
			for tick = 0; tick <= end; tick++ {
				for _, name := range names { // every status changes at every tick
					cache.UpsertUnit(wrappers.MakeQueueUnit(fmt.Sprintf("%s-%d", name, tick), name).Quota(name).Request(corev1.ResourceCPU, "2").Obj())
				}
				if tick == lost {
					// q11's quota goes: its Ready condition changes.
					cache.DeleteElasticQuota("q11", "q11")
				}
				sw.refresh(ctx, logr.Discard())
				clk.Step(time.Second)
			}

			// Every queue is new: each is written at the first tick, to say it
			// is Ready, over the bound.
			if perTick[0] != queues {
				t.Errorf("%d writes at the first tick, want every queue's %d", perTick[0], queues)
			}
			for tick := 1; tick <= end; tick++ {
				want := tc.perTick
				if tick == lost {
					want++
				}
				if perTick[tick] > want {
					t.Errorf("%d writes at tick %d, want at most %d", perTick[tick], tick, want)
				}
			}
			turn := int(tc.interval/time.Second) + (queues+tc.perTick-1)/tc.perTick // the interval, then the queues' turns
			for _, name := range names {
				ticks := written[name]
				if len(ticks) < 3 {
					t.Errorf("%s written at ticks %v: want at least 3 over %d ticks", name, ticks, end+1)
					continue
				}
				for i := 1; i < len(ticks); i++ {
					if gap := ticks[i] - ticks[i-1]; gap > turn {
						t.Errorf("%s written at ticks %v: %d ticks between two writes, want at most %d", name, ticks, gap, turn)
					}
				}
			}
			if !slices.Contains(written["q11"], lost) {
				t.Errorf("q11 written at ticks %v: want at tick %d, when its quota went", written["q11"], lost)
			}
			q11 := &schedulingv1alpha1.Queue{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: schedulingv1alpha1.QueueNamespace, Name: "q11"}, q11); err != nil {
				t.Fatal(err)
			}
			if cond := meta.FindStatusCondition(q11.Status.Conditions, QueueConditionReady); cond == nil || cond.Reason != ReasonQuotaNotFound {
				t.Errorf("q11's Ready condition %+v, want reason %s", cond, ReasonQuotaNotFound)
			}
		})
	}
}

// TestStatusRetriesAFailedReadinessWriteAtItsInterval: a Ready condition
// not yet written makes a queue due at once, but a write that fails (RBAC
// taken away, a webhook refusing) is retried at the refresh interval, not
// at every tick.
func TestStatusRetriesAFailedReadinessWriteAtItsInterval(t *testing.T) {
	ctx := context.Background()
	scheme := testScheme(t)
	queue := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}}
	attempts := 0
	c := interceptor.NewClient(
		fake.NewClientBuilder().WithScheme(scheme).WithObjects(queue.DeepCopy()).WithStatusSubresource(queue).Build(),
		interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			attempts++
			return apierrors.NewForbidden(schedulingv1alpha1.GroupVersion.WithResource("queues").GroupResource(), "team", fmt.Errorf("RBAC"))
		}})
	cache := admission.NewCache()
	cache.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "team").Max(corev1.ResourceCPU, "1").Obj())
	cache.UpsertQueue(queue)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	sw := NewStatusWriter(c, c, record.NewFakeRecorder(10), cache, clk, StatusOptions{RefreshInterval: 15 * time.Second, TopN: 20})
	sw.lastWrite, sw.lastQuotaErrs, sw.warnedDuplicates = map[string]time.Time{}, map[string]string{}, map[types.UID]bool{}
	for range 60 {
		sw.refresh(ctx, logr.Discard())
		clk.Step(time.Second)
	}
	if attempts != 4 {
		t.Errorf("%d attempts to write in a minute, want 4 (one every 15 s)", attempts)
	}
}

// countingSource counts the reads of an admission Cache that build views
// of quotas: Queue (a quota view and a tree view) and Quotas (one of every
// quota).
type countingSource struct {
	*admission.Cache
	queueViews, quotaLists int
}

func (s *countingSource) Queue(name string) (api.QueueView, bool) {
	s.queueViews++
	return s.Cache.Queue(name)
}

func (s *countingSource) Quotas() []api.QuotaView {
	s.quotaLists++
	return s.Cache.Quotas()
}

// TestStatusBuildsQuotaViewsOnlyToWriteAndReport: each tick the writer
// checks every queue's counts and readiness, but builds a queue's view
// (its quota's figures) only when the queue is due for a write, and lists
// the quotas for their metrics once every quotaReportInterval: with a
// thousand queues, building them all every second was most of the
// writer's CPU.
func TestStatusBuildsQuotaViewsOnlyToWriteAndReport(t *testing.T) {
	const queues, ticks, interval = 50, 30, 15 * time.Second
	ctx := context.Background()
	cache := admission.NewCache()
	builder := fake.NewClientBuilder().WithScheme(testScheme(t)).WithStatusSubresource(&schedulingv1alpha1.Queue{})
	for i := range queues {
		name := fmt.Sprintf("q%02d", i)
		// The fake client's version of the objects it starts with, so that
		// the cache's copy is current.
		q := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: name, ResourceVersion: "999"}}
		builder.WithObjects(q.DeepCopy())
		cache.UpsertElasticQuota(wrappers.MakeElasticQuota(name, name).Max(corev1.ResourceCPU, "1").Obj())
		cache.UpsertQueue(q)
	}
	c := informedClient(builder, cache, nil)
	source := &countingSource{Cache: cache}
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	sw := NewStatusWriter(c, c, record.NewFakeRecorder(100), source, clk, StatusOptions{RefreshInterval: interval, TopN: 20})
	sw.lastWrite, sw.lastQuotaErrs, sw.warnedDuplicates = map[string]time.Time{}, map[string]string{}, map[types.UID]bool{}
	for range ticks {
		sw.refresh(ctx, logr.Discard())
		clk.Step(time.Second)
	}
	// Each queue is due at its first tick and once an interval after (its
	// status unchanged, then not written); this cache, current, meets no
	// conflict that would build a status again.
	if want := queues * int((ticks*time.Second+interval-1)/interval); source.queueViews > want {
		t.Errorf("%d queue views built in %d ticks, want at most %d (each of %d queues once every %v)", source.queueViews, ticks, want, queues, interval)
	}
	if want := int((ticks*time.Second + quotaReportInterval - 1) / quotaReportInterval); source.quotaLists > want {
		t.Errorf("the quotas listed %d times in %d ticks, want at most %d (once every %v)", source.quotaLists, ticks, want, quotaReportInterval)
	}
}
