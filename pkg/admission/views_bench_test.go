package admission

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// pageWorld is a Cache with one queue "team" of waiting units of one cpu,
// behind admitted ones that fill its quota (max admitted cpu): running
// units the API server shows admitted, and, after one cycle, admissions
// decided and not yet written (phase Dequeued in the views). Units come
// from ten namespaces; priorities and creation times vary, so the queue's
// order is not the order of creation.
func pageWorld(tb testing.TB, waiting, admitted int) *Cache {
	tb.Helper()
	c := NewCache()
	c.UpsertNode(wrappers.Node("n1", fmt.Sprint(10*(waiting+admitted)), "1000Ti"))
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "quotas").Max("cpu", fmt.Sprint(admitted)).Obj())
	c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
	t0 := time.Unix(1_000_000, 0)
	unit := func(i int) *wrappers.QueueUnitWrapper {
		u := wrappers.MakeQueueUnit(fmt.Sprintf("job-%06d", i), fmt.Sprintf("tenant-%d", i%10)).Quota("team").
			Request("cpu", "1").Priority(int32(i % 7))
		u.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(i*7919%100_000) * time.Millisecond))
		return u
	}
	running := admitted / 2
	for i := range running {
		c.UpsertUnit(unit(i).Phase(schedulingv1alpha1.Running).RunningAdmission(schedulingv1alpha1.DefaultPodSetName, 1, 1).Obj())
	}
	for i := running; i < running+waiting+admitted-running; i++ {
		c.UpsertUnit(unit(i).Obj())
	}
	c.cycle(t0.Add(time.Hour), -1) // admits admitted-running units; the head then waits for quota
	if pending, held := c.core.QueueCounts("team"); pending != waiting || held != admitted {
		tb.Fatalf("the world has %d units waiting and %d admitted, want %d and %d", pending, held, waiting, admitted)
	}
	return c
}

// BenchmarkQueueUnitsPage50000Waiting: one page (limit 100) of a queue
// of 50,000 waiting units and 1,000 admitted ones, as the visibility APIs
// and the dashboard ask for it: at the head, in the middle of the waiting
// units, among the admitted ones, and filtered by phase; then the
// dashboard's (the first 20 Enqueued), one of the APIs' default limit
// (api.DefaultLimit) and the largest page a caller can get (api.MaxLimit,
// or the whole queue when that is longer).
//
// Each op is QueueUnits' body, spelt out so that the admission lock's hold
// is timed: from before c.mu.Lock to after c.mu.Unlock, which includes
// waiting for the lock (nobody else takes it here). ns/op is the whole
// call, lock-ns/op the mean hold and lock-p99-ns its 99th percentile (of
// the first 65,536 calls). Not the longest: on a shared machine that is
// the time the process was not running, or a collection stopped it,
// whatever it was doing. TestQueueUnitsBenchmarkSpellsItOut checks that
// the body spelt out answers what QueueUnits answers. The world is built
// and collected before the timer starts, so that no garbage of its making
// is collected during the calls.
func BenchmarkQueueUnitsPage50000Waiting(b *testing.B) {
	c := pageWorld(b, 50_000, 1_000)
	for _, tc := range pageCases {
		b.Run(tc.name, func(b *testing.B) {
			runtime.GC()
			var held time.Duration
			holds := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			for b.Loop() {
				units, total, hold := queueUnitsTimed(c, tc.phase, tc.offset, tc.limit)
				held += hold
				if len(holds) < cap(holds) {
					holds = append(holds, hold)
				}
				if want := min(tc.limit, total-tc.offset); len(units) != want {
					b.Fatalf("%d units, want %d", len(units), want)
				}
			}
			slices.Sort(holds)
			b.ReportMetric(float64(held.Nanoseconds())/float64(b.N), "lock-ns/op")
			b.ReportMetric(float64(holds[len(holds)*99/100].Nanoseconds()), "lock-p99-ns")
		})
	}
}

// pageCases are the pages the benchmark asks pageWorld(50,000, 1,000) for.
var pageCases = []struct {
	name          string
	phase         schedulingv1alpha1.QueueUnitPhase
	offset, limit int
}{
	{name: "head", limit: 100},
	{name: "limit 1", limit: 1},
	{name: "middle", offset: 25_000, limit: 100},
	{name: "admitted", offset: 50_400, limit: 100},
	{name: "phase Enqueued", phase: schedulingv1alpha1.Enqueued, offset: 10_000, limit: 100},
	{name: "phase Running", phase: schedulingv1alpha1.Running, offset: 100, limit: 100},
	{name: "dashboard", phase: schedulingv1alpha1.Enqueued, limit: 20},
	{name: "default limit", limit: api.DefaultLimit},
	{name: "largest page", limit: api.MaxLimit},
}

// queueUnitsTimed is c.QueueUnits("team", ...), spelt out, and how long it
// held c.mu.
func queueUnitsTimed(c *Cache, phase schedulingv1alpha1.QueueUnitPhase, offset, limit int) ([]api.UnitView, int, time.Duration) {
	start := time.Now()
	c.mu.Lock()
	page, total := c.views.queueUnitsPage("team", phase, offset, limit)
	c.mu.Unlock()
	hold := time.Since(start)
	return page.views(), total, hold
}

// TestQueueUnitsBenchmarkSpellsItOut: the benchmark's QueueUnits, spelt
// out to time the lock, answers what QueueUnits answers.
func TestQueueUnitsBenchmarkSpellsItOut(t *testing.T) {
	c := pageWorld(t, 500, 20)
	for _, tc := range pageCases {
		offset := min(tc.offset, 510)
		want, wantTotal := c.QueueUnits("team", tc.phase, offset, 7)
		got, total, _ := queueUnitsTimed(c, tc.phase, offset, 7)
		if diff := cmp.Diff(want, got); diff != "" || total != wantTotal {
			t.Errorf("%s: total %d, QueueUnits' %d; (-QueueUnits +spelt out):\n%s", tc.name, total, wantTotal, diff)
		}
	}
}
