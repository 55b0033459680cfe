package scheduler_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// inQueue is quota q of max 4 cpu, its queue (q) with in-queue preemption,
// and units.
func inQueue(q *st.QueueWrapper, units ...scheduler.Unit) world {
	return world{
		capacity: bigCluster,
		quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
		queues:   []scheduler.QueueSpec{q.Preemption().Obj()},
		units:    units,
	}
}

// low is a unit of q of priority 1 holding cpu.
func low(key, cpu string) scheduler.Unit {
	return st.MakeUnit(key, "q").Priority(1).Request("cpu", cpu).Admitted(0).Obj()
}

// TestPreemptionDelay: a head that could evict first waits up to its
// queue's koord-queue/preemption-delay for quota to free, taking what frees
// before anyone else, and evicts only for what it still lacks once the
// delay is over, counted from the first time it could have evicted.
func TestPreemptionDelay(t *testing.T) {
	high := st.MakeUnit("ns/high", "q").Priority(9).Request("cpu", "4").Enqueued(time.Second).Obj()
	cases := []struct {
		name  string
		world world
		steps []step
	}{
		{
			name:  "the quota frees within the delay: the head is admitted on it, nobody is evicted",
			world: inQueue(st.MakeQueue("q"), low("ns/low", "4"), high),
			steps: []step{
				{name: "it could evict low: it waits instead", want: outcome{Waits: map[string]string{"ns/high": waitsToPreempt("q")}}},
				{name: "low ends", at: time.Second, do: deleteUnits("ns/low"), want: outcome{Admitted: []string{"ns/high"}}},
				{name: "nothing left to decide when the delay ends", at: delay},
			},
		},
		{
			name: "what frees goes to the waiting head, not to a lower unit behind it that would fit",
			world: inQueue(st.MakeQueue("q"), low("ns/low-1", "2"), low("ns/low-2", "2"), high,
				st.MakeUnit("ns/small", "q").Priority(1).Request("cpu", "1").Enqueued(2*time.Second).Obj()),
			steps: []step{
				{want: outcome{Waits: map[string]string{"ns/high": waitsToPreempt("q")}}, skipWaits: true},
				{name: "low-1 ends: high holds its 2 cpu, small does not get them", at: time.Second, do: deleteUnits("ns/low-1"), skipWaits: true},
				{name: "low-2 ends: high is admitted", at: 1500 * time.Millisecond, do: deleteUnits("ns/low-2"),
					want: outcome{Admitted: []string{"ns/high"}}, skipWaits: true},
			},
		},
		{
			name:  "the delay is over: it evicts only for what it still lacks",
			world: inQueue(st.MakeQueue("q"), low("ns/low-1", "2"), low("ns/low-2", "2"), high),
			steps: []step{
				{skipWaits: true},
				{name: "low-1 ends: high holds its 2 cpu", at: time.Second, do: deleteUnits("ns/low-1"), skipWaits: true},
				{name: "the delay is over: low-2 is evicted for the other 2", at: delay, skipWaits: true,
					want: outcome{Preempted: []string{"ns/high <- ns/low-2"}}},
				{name: "low-2 is gone: high is admitted", at: delay, do: deleteUnits("ns/low-2"), want: outcome{Admitted: []string{"ns/high"}}},
			},
		},
		{
			name:  "a unit that comes first ends the wait and waits its own; the delay runs from the first time the head could evict",
			world: inQueue(st.MakeQueue("q"), low("ns/low", "4"), high),
			steps: []step{
				{skipWaits: true},
				{name: "urgent comes first: it waits in turn", at: time.Second, skipWaits: true,
					do: upsert(st.MakeUnit("ns/urgent", "q").Priority(20).Request("cpu", "4").Enqueued(time.Second).Obj())},
				{name: "high's delay is over, but urgent heads the queue", at: delay, skipWaits: true},
				{name: "urgent leaves: high's delay is over, it evicts at once", at: delay + 500*time.Millisecond, skipWaits: true,
					do: deleteUnits("ns/urgent"), want: outcome{Preempted: []string{"ns/high <- ns/low"}}},
			},
		},
		{
			name: "a resource the head does not ask for is over its max: what frees still covers the head",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4", "memory", "1Gi").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Preemption().Obj()},
				units: []scheduler.Unit{
					low("ns/low-1", "2"),
					// Restored as admitted: it holds more memory than q's max now allows.
					st.MakeUnit("ns/low-2", "q").Priority(1).Request("cpu", "2", "memory", "2Gi").Admitted(0).Obj(),
					st.MakeUnit("ns/high", "q").Priority(9).Request("cpu", "2").Enqueued(time.Second).Obj(),
				},
			},
			steps: []step{
				{name: "it could evict a low unit: it waits instead", want: outcome{Waits: map[string]string{"ns/high": waitsToPreempt("q")}}},
				{name: "low-1 ends: its cpu covers high, which asks no memory", at: time.Second, do: deleteUnits("ns/low-1"),
					want: outcome{Admitted: []string{"ns/high"}}},
			},
		},
		{
			name: "it holds its whole request while a resource it asks for is over: once it no longer is, the head is admitted",
			world: world{
				capacity: qt.Res("cpu", "100", "memory", "4Gi"),
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Preemption().Obj()},
				units: []scheduler.Unit{low("ns/low-1", "2"), low("ns/low-2", "2"),
					st.MakeUnit("ns/high", "q").Priority(9).Request("cpu", "2", "memory", "1Gi").Enqueued(time.Second).Obj()},
			},
			steps: []step{
				{name: "it could evict a low unit: it waits, holding 1Gi", skipWaits: true},
				{name: "the cluster loses its memory and low-1 ends: high holds all it asks, memory is over", at: 500 * time.Millisecond, skipWaits: true,
					do: func(s *scheduler.Scheduler) {
						s.SetClusterCapacity(qt.Res("cpu", "100", "memory", "0"))
						s.DeleteUnit("ns/low-1")
					}},
				{name: "the memory is back: high is admitted", at: time.Second, skipWaits: true,
					do:   func(s *scheduler.Scheduler) { s.SetClusterCapacity(qt.Res("cpu", "100", "memory", "4Gi")) },
					want: outcome{Admitted: []string{"ns/high"}}},
			},
		},
		{
			name:  "koord-queue/preemption-delay 0: it evicts at once",
			world: inQueue(st.MakeQueue("q").PreemptionDelay(0), low("ns/low", "4"), high),
			steps: []step{{want: outcome{Preempted: []string{"ns/high <- ns/low"}}, skipWaits: true}},
		},
		{
			name: "what frees under the parent goes to the waiting head before another queue's unit",
			world: world{
				capacity: bigCluster,
				quotas: []quota.Spec{
					qt.MakeSpec("p").IsParent().Max("cpu", "4").Obj(),
					qt.MakeSpec("a").Parent("p").Max("cpu", "4").Obj(),
					qt.MakeSpec("b").Parent("p").Max("cpu", "4").Obj(),
				},
				queues: []scheduler.QueueSpec{st.MakeQueue("a").Preemption().Obj(), st.MakeQueue("b").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/a-low", "a").Priority(1).Request("cpu", "2").Admitted(0).Obj(),
					st.MakeUnit("ns/b1", "b").Request("cpu", "2").Admitted(0).Obj(),
					st.MakeUnit("ns/a-high", "a").Priority(9).Request("cpu", "2").Obj(),
				},
			},
			steps: []step{
				{name: "a-high could evict a-low: it waits", want: outcome{Waits: map[string]string{"ns/a-high": waitsToPreempt("a")}}},
				{name: "b1 ends while b2 waits: a-high takes its 2 cpu", at: time.Second, skipWaits: true,
					do: func(s *scheduler.Scheduler) {
						s.DeleteUnit("ns/b1")
						upsert(st.MakeUnit("ns/b2", "b").Request("cpu", "1").Obj())(s)
					},
					want: outcome{Admitted: []string{"ns/a-high"}}},
			},
		},
		{
			name: "reclaim waits too, and a borrower that ends within the delay spares the others",
			world: ownerAndBorrower("10",
				st.MakeUnit("ns/b1", "borrower").Request("cpu", "5").Admitted(0).Running().Obj(),
				st.MakeUnit("ns/b2", "borrower").Request("cpu", "5").Admitted(time.Second).Running().Obj(),
				st.MakeUnit("ns/claim", "owner").Request("cpu", "4").Obj(),
			),
			steps: []step{
				{name: "claim could reclaim b2: it waits", want: outcome{Waits: map[string]string{"ns/claim": waitsToReclaim("owner")}}},
				{name: "b1 ends: claim is admitted", at: time.Second, do: deleteUnits("ns/b1"), want: outcome{Admitted: []string{"ns/claim"}}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, tc.world.build(t), tc.steps)
		})
	}
}

// TestPreemptionDelayWakesTheHeadWhenItEnds: nothing but the time ends the
// delay, so the cycle says when (NextWakeup), and the head evicts then.
func TestPreemptionDelayWakesTheHeadWhenItEnds(t *testing.T) {
	s := inQueue(st.MakeQueue("q").PreemptionDelay(30*time.Second),
		low("ns/low", "4"), st.MakeUnit("ns/high", "q").Priority(9).Request("cpu", "4").Obj()).build(t)
	if got, want := s.Cycle(st.T0.Add(time.Second)).NextWakeup, st.T0.Add(31*time.Second); !got.Equal(want) {
		t.Errorf("NextWakeup %v, want %v: when high's delay ends", got, want)
	}
	if got := s.WaitReason("ns/high"); got != "waits up to 30s (koord-queue/preemption-delay) for quota to free before it preempts lower-priority units of quota q; it holds what frees meanwhile" {
		t.Errorf("WaitReason = %q", got)
	}
	if got := summarise(s.Cycle(st.T0.Add(20 * time.Second))); len(got.Preempted) != 0 {
		t.Errorf("preempted %v before the delay ended", got.Preempted)
	}
	got := summarise(s.Cycle(st.T0.Add(31 * time.Second)))
	if diff := cmp.Diff([]string{"ns/high <- ns/low"}, got.Preempted); diff != "" {
		t.Errorf("preempted at the wake-up (-want +got):\n%s", diff)
	}
}

// TestPreemptionDelayEndsWhateverTheTurn: when the delay ends, the head's
// queue takes one turn, and the hold ends there whatever the turn does:
// here its quota turned invalid meanwhile, so the turn stops before looking
// for victims, and the cycles after have nothing more to do (they used to
// wake the queue again, every cycle, for a delay long over).
func TestPreemptionDelayEndsWhateverTheTurn(t *testing.T) {
	s := inQueue(st.MakeQueue("q"), low("ns/low", "4"), st.MakeUnit("ns/high", "q").Priority(9).Request("cpu", "4").Obj()).build(t)
	s.Cycle(st.T0) // high waits
	s.UpsertQuota(qt.MakeSpec("q").Min("cpu", "5").Max("cpu", "4").Obj())
	s.Cycle(st.T0.Add(delay))
	if res := s.Cycle(st.T0.Add(delay + time.Second)); res.More || !res.NextWakeup.IsZero() {
		t.Errorf("after the delay: More %v, NextWakeup %v; want nothing left to do", res.More, res.NextWakeup)
	}
	if got := s.Quotas().Used("q")[corev1.ResourceCPU]; got.String() != "4" {
		t.Errorf("q uses %s cpu, want 4: low's, and no reservation left", got.String())
	}
}
