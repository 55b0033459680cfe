package scheduler_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// TestResourceNamesNoQuotaNames: what no quota (nor the cluster) names is not
// limited; once a quota names it, what units already hold and ask of it
// counts.
func TestResourceNamesNoQuotaNames(t *testing.T) {
	fpga := func(max string) func(*scheduler.Scheduler) {
		return func(s *scheduler.Scheduler) {
			s.UpsertQuota(qt.MakeSpec("q").Max("cpu", "10", "example.com/fpga", max).Obj())
		}
	}
	s := world{ // no capacity known: the root is unlimited
		quotas: []quota.Spec{qt.MakeSpec("q").Max("cpu", "10").Obj()},
		queues: []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/a", "q").Request("cpu", "1", "example.com/fpga", "3", "example.com/made-up", "5").Obj(),
		},
	}.build(t)
	runSteps(t, s, []step{
		{name: "names nothing names are not limited", want: outcome{Admitted: []string{"ns/a"}}},
		{name: "a quota names fpga: what ns/a holds counts", do: func(s *scheduler.Scheduler) {
			upsert(st.MakeUnit("ns/b", "q").Request("cpu", "1", "example.com/fpga", "2").Enqueued(time.Second).Obj())(s)
			fpga("4")(s)
		}, want: outcome{Waits: map[string]string{"ns/b": "q: example.com/fpga 3 used of max 4, request 2"}}},
		{name: "the max grows: what ns/b asks counts too", do: func(s *scheduler.Scheduler) {
			fpga("5")(s)
			upsert(st.MakeUnit("ns/c", "q").Request("cpu", "1", "example.com/fpga", "1").Enqueued(2 * time.Second).Obj())(s)
		}, want: outcome{Admitted: []string{"ns/b"}, Waits: map[string]string{"ns/c": "q: example.com/fpga 5 used of max 5, request 1"}}},
	})
	if got, want := s.Quotas().Len(), 2; got != want {
		t.Errorf("engine width %d, want %d", got, want)
	}
}

// withMadeUpNames is req with 16 resource names of unit n's own.
func withMadeUpNames(req corev1.ResourceList, n int) corev1.ResourceList {
	out := req.DeepCopy()
	for j := range 16 {
		out[corev1.ResourceName(fmt.Sprintf("example.com/u%d-made-up-%d", n, j))] = resource.MustParse("1")
	}
	return out
}

// TestPropertyMadeUpNamesChangeNothing: units that also ask for names no
// quota and no node names are decided exactly as without them, and the
// engine stays as wide.
func TestPropertyMadeUpNamesChangeNothing(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		plain := runSim(t, seed, simConfig{}, 120)
		odd := runSim(t, seed, simConfig{madeUp: true}, 120)
		if diff := cmp.Diff(plain.results, odd.results); diff != "" {
			t.Fatalf("seed %d: made-up names changed the decisions (-without +with):\n%s", seed, diff)
		}
		if got, want := odd.s.Quotas().Len(), plain.s.Quotas().Len(); got != want {
			t.Fatalf("seed %d: engine width %d with made-up names, %d without", seed, got, want)
		}
	}
}

// BenchmarkMadeUpResourceNames admits 10,000 units through the scheduler,
// each asking cpu, memory and 16 resource names nothing names, and reports
// the heap held per unit (their whole requests included, which the
// scheduler keeps) and the engine's width, against units asking cpu and
// memory only.
func BenchmarkMadeUpResourceNames(b *testing.B) {
	const units = 10000
	for _, bc := range []struct {
		name            string
		madeUp, private bool
	}{
		{name: "real names only"},
		{name: "16 shared made-up names", madeUp: true},
		{name: "16 made-up names per unit", madeUp: true, private: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			reqs := make([]corev1.ResourceList, units)
			for i := range reqs {
				reqs[i] = qt.Res("cpu", "1", "memory", "1Gi")
				if bc.madeUp {
					n := 0
					if bc.private {
						n = i
					}
					reqs[i] = withMadeUpNames(reqs[i], n)
				}
			}
			var perUnit float64
			width := 0
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				s := scheduler.New()
				s.SetClusterCapacity(qt.Res("cpu", "100000", "memory", "100000Gi"))
				s.UpsertQuota(qt.MakeSpec("q").Max("cpu", "100000", "memory", "100000Gi").Obj())
				s.UpsertQueue(st.MakeQueue("q").Obj())
				for i, r := range reqs {
					u := scheduler.Unit{Key: fmt.Sprintf("ns/u%05d", i), Queue: "q", Request: r, EnqueueTime: st.T0.Add(time.Duration(i))}
					if err := s.UpsertUnit(u); err != nil {
						b.Fatal(err)
					}
				}
				admitted := 0
				for range units {
					n := len(s.Cycle(st.T0.Add(time.Hour)).Admissions)
					if n == 0 {
						break
					}
					admitted += n
				}
				if admitted != units {
					b.Fatalf("admitted %d of %d", admitted, units)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perUnit = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / units
				width = s.Quotas().Len()
				runtime.KeepAlive(s)
			}
			b.ReportMetric(perUnit, "heap-B/unit")
			b.ReportMetric(float64(width), "width")
		})
	}
}
