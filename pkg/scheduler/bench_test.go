package scheduler_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// Each benchmark op is one admission decision as the controller drives it:
// an admitted unit finishes (DeleteUnit), a new unit arrives (UpsertUnit),
// and Cycle admits exactly one unit. ns/op and allocs/op are per decision.

type benchWorld struct {
	s        *scheduler.Scheduler
	queues   []string
	admitted [][]string // per queue, FIFO of admitted keys
	next     int
	now      time.Time
}

// newBenchWorld builds queues × pending units of 1 cpu each; each quota has
// max perQuota cpu. With clusterCPU 0 the cluster is large and each queue is
// held by its own max; otherwise queues compete for the cluster.
func newBenchWorld(b *testing.B, queues, pending, perQuota, clusterCPU int) *benchWorld {
	b.Helper()
	w := &benchWorld{s: scheduler.New(), now: st.T0}
	if clusterCPU == 0 {
		clusterCPU = queues*perQuota + 1000
	}
	w.s.SetClusterCapacity(qt.Res("cpu", fmt.Sprint(clusterCPU), "memory", "100Ti"))
	specs := make([]quota.Spec, queues)
	for i := range specs {
		specs[i] = quota.Spec{Name: fmt.Sprintf("team-%05d", i), Max: qt.Res("cpu", fmt.Sprint(perQuota))}
	}
	w.s.UpsertQuotas(specs)
	for _, sp := range specs {
		w.s.UpsertQueue(st.MakeQueue(sp.Name).Obj())
		w.queues = append(w.queues, sp.Name)
	}
	w.admitted = make([][]string, queues)
	for i := 0; i < queues; i++ {
		for j := 0; j < pending+perQuota; j++ {
			w.add(i)
		}
	}
	w.record(w.s.Cycle(w.now))
	return w
}

func (w *benchWorld) add(q int) {
	w.next++
	u := st.MakeUnit(fmt.Sprintf("ns/u%07d", w.next), w.queues[q]).Request("cpu", "1", "memory", "1Gi").Obj()
	u.EnqueueTime = st.T0.Add(time.Duration(w.next) * time.Millisecond)
	if err := w.s.UpsertUnit(u); err != nil {
		panic(err)
	}
}

func (w *benchWorld) record(r scheduler.Result) int {
	idx := map[string]int{}
	for i, q := range w.queues {
		idx[q] = i
	}
	for _, a := range r.Admissions {
		i := idx[a.Queue]
		w.admitted[i] = append(w.admitted[i], a.Unit)
	}
	return len(r.Admissions)
}

// decide: a unit of queue q finishes, a new one arrives, one cycle runs.
func (w *benchWorld) decide(b *testing.B, q int, refill bool) {
	key := w.admitted[q][0]
	w.admitted[q] = w.admitted[q][1:]
	w.s.DeleteUnit(key)
	if refill {
		w.add(q)
	}
	w.now = w.now.Add(time.Second)
	r := w.s.Cycle(w.now)
	if len(r.Admissions) != 1 {
		b.Fatalf("cycle admitted %d units, want 1", len(r.Admissions))
	}
	w.admitted[q] = append(w.admitted[q], r.Admissions[0].Unit)
}

// BenchmarkAdmission1000Queues100Pending: 1,000 queues of 100 pending units.
// "own-max": each queue is held by its quota's max, so a release wakes one
// queue. "contended": all queues compete for the cluster, so a release wakes
// every queue and the one furthest below its fair share wins.
func BenchmarkAdmission1000Queues100Pending(b *testing.B) {
	for _, tc := range []struct {
		name    string
		cluster int
	}{{"own-max", 0}, {"contended", 1000 * 5}} {
		b.Run(tc.name, func(b *testing.B) {
			w := newBenchWorld(b, 1000, 100, 10, tc.cluster)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := i % len(w.queues)
				if len(w.admitted[q]) == 0 {
					b.Fatalf("queue %d has nothing admitted", q)
				}
				w.decide(b, q, true)
			}
		})
	}
}

// BenchmarkContendedQueues: 1,000 and 10,000 queues of 5 pending units
// compete for a cluster that holds 5 units of each: every release wakes them
// all, and the one furthest below its fair share takes the freed unit. A
// decision must stay O(log queues): each of those queues would replay its
// last turn unchanged (parked.go).
func BenchmarkContendedQueues(b *testing.B) {
	for _, queues := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("queues=%d", queues), func(b *testing.B) {
			w := newBenchWorld(b, queues, 5, 10, queues*5)
			runtime.GC() // the setup's garbage is not the decisions' cost
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w.decide(b, i%len(w.queues), true)
			}
		})
	}
}

// BenchmarkDrain10000Deep: one queue 10,000 deep drains as quota frees, one
// unit at a time; refilled (untimed) when empty.
func BenchmarkDrain10000Deep(b *testing.B) {
	w := newBenchWorld(b, 1, 10000, 1, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n, _ := w.s.QueueCounts(w.queues[0]); n == 0 {
			b.StopTimer()
			for j := 0; j < 10000; j++ {
				w.add(0)
			}
			b.StartTimer()
		}
		w.decide(b, 0, false)
	}
}

// BenchmarkDecisionByPending shows how one decision's cost grows with the
// number of pending units (10 queues sharing them): it should grow at most
// logarithmically.
func BenchmarkDecisionByPending(b *testing.B) {
	for _, pending := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			w := newBenchWorld(b, 10, pending/10, 10, 0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w.decide(b, i%10, true)
			}
		})
	}
}

// BenchmarkAdmissionBesidePreemptionsInFlight: the decisions of 1,000
// own-max queues while preemptions are in flight in other quotas, their
// victims never leaving: every queue's turn holds room for each of them
// (preemptions.holdRoom), as a cycle does at scale while victims' Jobs
// stop.
func BenchmarkAdmissionBesidePreemptionsInFlight(b *testing.B) {
	for _, inFlight := range []int{10, 100} {
		b.Run(fmt.Sprintf("in-flight=%d", inFlight), func(b *testing.B) {
			w := newBenchWorld(b, 1000, 20, 10, 0)
			w.preemptInFlight(b, inFlight)
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w.decide(b, i%len(w.queues), true)
			}
		})
	}
}

// preemptInFlight adds n trees of two quotas under a parent with a max of 8
// cpu, each with a borrower holding 8 and an owner owed its min of 4, and
// runs the cycle in which each owner preempts a borrower's unit. The
// victims are never reported gone, so the n preemptions stay in flight.
func (w *benchWorld) preemptInFlight(b *testing.B, n int) {
	b.Helper()
	specs := make([]quota.Spec, 0, 3*n)
	for i := range n {
		tree := fmt.Sprintf("tree-%03d", i)
		specs = append(specs,
			qt.MakeSpec(tree).IsParent().Min("cpu", "8").Max("cpu", "8").Obj(),
			qt.MakeSpec("owner-"+tree).Parent(tree).Min("cpu", "4").Max("cpu", "8").Obj(),
			qt.MakeSpec("borrower-"+tree).Parent(tree).Min("cpu", "4").Max("cpu", "8").Obj())
	}
	w.s.UpsertQuotas(specs)
	for i := range n {
		tree := fmt.Sprintf("tree-%03d", i)
		w.s.UpsertQueue(st.MakeQueue("owner-" + tree).PreemptionDelay(0).Obj())
		w.s.UpsertQueue(st.MakeQueue("borrower-" + tree).Obj())
		for _, u := range []scheduler.Unit{
			st.MakeUnit("ns/b0-"+tree, "borrower-"+tree).Request("cpu", "4").Admitted(0).Running().Obj(),
			st.MakeUnit("ns/b1-"+tree, "borrower-"+tree).Request("cpu", "4").Admitted(0).Running().Obj(),
			st.MakeUnit("ns/a-"+tree, "owner-"+tree).Request("cpu", "4").Obj(),
		} {
			if err := w.s.UpsertUnit(u); err != nil {
				b.Fatal(err)
			}
		}
	}
	if r := w.s.Cycle(w.now); len(r.Preemptions) != n || len(r.Admissions) != 0 {
		b.Fatalf("the set-up cycle preempted %d times and admitted %d units, want %d preemptions and no admission", len(r.Preemptions), len(r.Admissions), n)
	}
}
