package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// twins are two schedulers fed the same events: one settles queues
// (parked.go), the reference gives every woken queue its turn.
type twins struct {
	t        *testing.T
	seed     uint64
	rng      *rand.Rand
	policies *rand.Rand // policy changes, a stream of their own
	a, ref   *scheduler.Scheduler
	queues   []string
	specs    map[string]scheduler.QueueSpec
	admitted []string
	waiting  []string
	next     int
	now      time.Time
}

func (w *twins) both(f func(s *scheduler.Scheduler)) { f(w.a); f(w.ref) }

// TestSettledQueuesDecideAsEveryQueueTakingItsTurn drives both schedulers
// with random, seeded sequences of events on many queues competing for a
// cluster (flat, and under parents; quotas with mins, lending or not; queues
// on parent quotas, with quotas of other queues below theirs), and checks
// that every cycle decides the same: admissions in the same order,
// preemptions, waits and their reasons, and at the end every unit's place
// and wait reason.
func TestSettledQueuesDecideAsEveryQueueTakingItsTurn(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		w := newTwins(t, seed)
		for step := 0; step < 400; step++ {
			w.step()
		}
		w.compareState()
	}
}

func newTwins(t *testing.T, seed uint64) *twins {
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	w := &twins{t: t, seed: seed, rng: rng, a: scheduler.New(), ref: scheduler.New(), now: st.T0,
		specs: map[string]scheduler.QueueSpec{}}
	scheduler.NoSettle(w.ref)
	// Policy changes from a stream of their own, so the rest of each
	// seed's world is as before they existed.
	w.policies = rand.New(rand.NewPCG(seed, 0x9011c7))
	nq := 3 + rng.IntN(40)
	parents := rng.IntN(4) // 0: flat
	cluster := 2 + rng.IntN(3*nq)
	w.both(func(s *scheduler.Scheduler) {
		s.SetClusterCapacity(qt.Res("cpu", fmt.Sprint(cluster), "memory", fmt.Sprintf("%dGi", 4*cluster)))
	})
	// Deeper trees from a stream of their own too: parents with a min
	// (lending or not), quotas that are parents of other teams' quotas
	// with a queue of their own, and queues on a top parent, so that units
	// are charged to parent quotas and a queue's room also follows what
	// the quotas below its own hold.
	shape := rand.New(rand.NewPCG(seed, 0x5ba9e))
	for p := 0; p < parents; p++ {
		mx := 1 + rng.IntN(cluster)
		sb := qt.MakeSpec(fmt.Sprintf("p%d", p)).IsParent().Max("cpu", fmt.Sprint(mx), "memory", fmt.Sprintf("%dGi", 4*mx))
		withMin(shape, sb, mx)
		sp := sb.Obj()
		w.both(func(s *scheduler.Scheduler) { s.UpsertQuota(sp) })
	}
	var parentTeams []string
	policies := []schedulingv1alpha1.QueuePolicy{schedulingv1alpha1.QueuePolicyPriority, schedulingv1alpha1.QueuePolicyBlock, schedulingv1alpha1.QueuePolicyIntelligent}
	// Preemption delays from a stream of their own, so the rest of each
	// seed's world is as before they existed: none, shorter than most
	// steps, longer than many.
	delays := rand.New(rand.NewPCG(seed, 0xde1a7))
	for i := 0; i < nq; i++ {
		name := fmt.Sprintf("team-%02d", i)
		sb := qt.MakeSpec(name)
		if parents > 0 {
			sb.Parent(fmt.Sprintf("p%d", rng.IntN(parents)))
		}
		if len(parentTeams) > 0 && shape.IntN(3) == 0 {
			sb.Parent(parentTeams[shape.IntN(len(parentTeams))])
		}
		mx := cluster
		if rng.IntN(3) == 0 {
			mx = 1 + rng.IntN(6)
		}
		sb.Max("cpu", fmt.Sprint(mx), "memory", fmt.Sprintf("%dGi", 4*mx))
		if rng.IntN(6) == 0 {
			sb.Min("cpu", "1", "memory", "4Gi") // owed: reclaims
		}
		parentTeam := shape.IntN(4) == 0
		if parentTeam {
			sb.IsParent()
			withMin(shape, sb, min(mx, 6))
		}
		sp := sb.Obj()
		q := st.MakeQueue(name).Priority(int32(rng.IntN(3))).Policy(policies[rng.IntN(len(policies))])
		if i > 0 && rng.IntN(4) == 0 {
			// Shares the previous queue's quota: one's admissions change
			// the other's headroom.
			q.Quota(w.specs[w.queues[i-1]].Quota)
			if q.Obj().Quota == "" {
				q.Quota(w.queues[i-1])
			}
		}
		if parents > 0 && shape.IntN(10) == 0 {
			q.Quota(fmt.Sprintf("p%d", shape.IntN(parents))) // a queue on a top parent
		}
		if parentTeam && q.Obj().Quota == "" {
			parentTeams = append(parentTeams, name) // later teams' quotas may sit under it
		}
		if rng.IntN(8) == 0 {
			q.Preemption()
		}
		q.PreemptionDelay([]time.Duration{0, delay, time.Minute}[delays.IntN(3)])
		if rng.IntN(10) == 0 {
			q.WaitForPodsRunning()
		}
		if rng.IntN(10) == 0 {
			q.LowMaxWait(time.Duration(1+rng.IntN(20)) * time.Minute)
		}
		qo := q.Obj()
		w.both(func(s *scheduler.Scheduler) {
			if qo.Quota == "" {
				s.UpsertQuota(sp)
			}
			s.UpsertQueue(qo)
		})
		w.specs[name] = qo
		w.queues = append(w.queues, name)
	}
	return w
}

// withMin gives half the quotas a min of up to mx cpu (and 4Gi of memory
// a cpu), half of those not lending it.
func withMin(rng *rand.Rand, sb *qt.SpecWrapper, mx int) {
	if rng.IntN(2) == 0 {
		return
	}
	m := 1 + rng.IntN(mx)
	sb.Min("cpu", fmt.Sprint(m), "memory", fmt.Sprintf("%dGi", 4*m))
	if rng.IntN(2) == 0 {
		sb.NoLending()
	}
}

func (w *twins) step() {
	w.now = w.now.Add(time.Duration(w.rng.IntN(40)) * time.Second)
	switch r := w.rng.IntN(20); {
	case r < 9:
		w.next++
		b := st.MakeUnit(fmt.Sprintf("ns/u%04d", w.next), w.queues[w.rng.IntN(len(w.queues))]).
			Priority(int32(w.rng.IntN(8))).Enqueued(w.now.Sub(st.T0)).
			Request("cpu", fmt.Sprint(1+w.rng.IntN(3)), "memory", fmt.Sprintf("%dGi", w.rng.IntN(5)))
		u := b.Obj()
		w.both(func(s *scheduler.Scheduler) {
			if err := s.UpsertUnit(u); err != nil {
				w.t.Fatalf("seed %d: UpsertUnit: %v", w.seed, err)
			}
		})
		w.waiting = append(w.waiting, u.Key)
	case r < 15:
		if len(w.admitted) > 0 {
			i := w.rng.IntN(len(w.admitted))
			k := w.admitted[i]
			w.admitted = slices.Delete(w.admitted, i, i+1)
			w.both(func(s *scheduler.Scheduler) { s.DeleteUnit(k) }) // finished, or an evicted victim gone
		}
	case r < 16:
		if len(w.waiting) > 0 {
			k := w.waiting[w.rng.IntN(len(w.waiting))]
			w.both(func(s *scheduler.Scheduler) { s.DeleteUnit(k) })
		}
	case r < 17:
		name := w.queues[w.rng.IntN(len(w.queues))]
		q := w.specs[name]
		q.Priority = int32(w.rng.IntN(3))
		if w.policies.IntN(2) == 0 {
			// Another policy serves another head first (an Intelligent
			// queue's round-robin head, or its high band's).
			q.Config.Policy = []schedulingv1alpha1.QueuePolicy{schedulingv1alpha1.QueuePolicyPriority,
				schedulingv1alpha1.QueuePolicyBlock, schedulingv1alpha1.QueuePolicyIntelligent}[w.policies.IntN(3)]
		}
		w.specs[name] = q
		w.both(func(s *scheduler.Scheduler) { s.UpsertQueue(q) })
	case r < 18:
		if len(w.admitted) > 0 {
			k := w.admitted[w.rng.IntN(len(w.admitted))]
			w.both(func(s *scheduler.Scheduler) { s.ForgetAdmission(k) })
			w.admitted = slices.DeleteFunc(w.admitted, func(x string) bool { return x == k })
		}
	}
	w.checkSettledHeads()
	limit := -1
	if w.rng.IntN(2) == 0 {
		limit = w.rng.IntN(3)
	}
	got := w.a.CycleLimited(w.now, limit)
	want := w.ref.CycleLimited(w.now, limit)
	if diff := cmp.Diff(want, got); diff != "" {
		w.t.Fatalf("seed %d, unit %d: cycles differ (-every queue's turn +settled):\n%s", w.seed, w.next, diff)
	}
	w.checkSettledHeads()
	for _, a := range got.Admissions {
		w.admitted = append(w.admitted, a.Unit)
	}
	for _, p := range got.Preemptions {
		// Victims leave at once: their unit is gone.
		for _, v := range p.Victims {
			w.both(func(s *scheduler.Scheduler) { s.DeleteUnit(v) })
			w.admitted = slices.DeleteFunc(w.admitted, func(x string) bool { return x == v })
		}
	}
}

// checkSettledHeads: a settled queue's place in line holds its head as it
// is; any change of the head must have unsettled the queue.
func (w *twins) checkSettledHeads() {
	if stale := scheduler.StaleSettledHeads(w.a, w.now); len(stale) > 0 {
		w.t.Fatalf("seed %d, unit %d: settled queues keyed by a head they no longer have:\n%s", w.seed, w.next, strings.Join(stale, "\n"))
	}
}

func (w *twins) compareState() {
	for _, q := range w.queues {
		if diff := cmp.Diff(w.ref.Pending(q, 0), w.a.Pending(q, 0)); diff != "" {
			w.t.Fatalf("seed %d: queue %s pending differs (-want +got):\n%s", w.seed, q, diff)
		}
	}
	for _, k := range w.waiting {
		if diff := cmp.Diff(w.ref.WaitReason(k), w.a.WaitReason(k)); diff != "" {
			w.t.Fatalf("seed %d: %s's wait reason differs (-want +got):\n%s", w.seed, k, diff)
		}
	}
}

// TestSettledQueueWakesForUsageBelowItsQuota: a queue on a parent quota
// settles on that quota's parent, and its turn also follows what the
// quotas below its own hold, even when the chain above does not see the
// change (a quota that does not lend shows its whole min there either
// way): its room, and whether its quota owes its head.
func TestSettledQueueWakesForUsageBelowItsQuota(t *testing.T) {
	cases := []struct {
		name  string
		world world
		steps []step
	}{
		{
			name: "a unit of a child quota ends: the parent quota that does not lend has room again",
			world: world{
				capacity: bigCluster,
				quotas: []quota.Spec{
					qt.MakeSpec("b").IsParent().Min("cpu", "6").Max("cpu", "10").Obj(),
					qt.MakeSpec("p").Parent("b").IsParent().NoLending().Min("cpu", "6").Max("cpu", "10").Obj(),
					qt.MakeSpec("child").Parent("p").Max("cpu", "10").Obj(),
					qt.MakeSpec("sibling").Parent("b").Max("cpu", "10").Obj(),
				},
				queues: []scheduler.QueueSpec{st.MakeQueue("p").Obj(), st.MakeQueue("child").Obj(), st.MakeQueue("sibling").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/child-1", "child").Request("cpu", "4").Admitted(0).Obj(),
					st.MakeUnit("ns/sibling-1", "sibling").Request("cpu", "4").Admitted(0).Obj(),
					st.MakeUnit("ns/p-1", "p").Request("cpu", "3").Obj(),
				},
			},
			steps: []step{
				{name: "p-1 asks 3, b has room for 2 of p's", want: outcome{Waits: map[string]string{
					"ns/p-1": "b: cpu 8 used (+2 kept for quotas that do not lend) of max 10, request 3"}}},
				{name: "child-1 ends: p has room for 6", at: time.Second, do: deleteUnits("ns/child-1"),
					want: outcome{Admitted: []string{"ns/p-1"}}},
			},
		},
		{
			name: "a unit of a child quota that does not lend ends within its min: the parent quota owes its head again",
			world: world{
				capacity: qt.Res("cpu", "10"),
				quotas: []quota.Spec{
					qt.MakeSpec("p").IsParent().Min("cpu", "6").Max("cpu", "10").Obj(),
					qt.MakeSpec("child").Parent("p").NoLending().Min("cpu", "4").Max("cpu", "10").Obj(),
					qt.MakeSpec("borrower").Max("cpu", "10").Obj(),
				},
				queues: []scheduler.QueueSpec{st.MakeQueue("p").PreemptionDelay(0).Obj(), st.MakeQueue("child").Obj(), st.MakeQueue("borrower").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/child-1", "child").Request("cpu", "3").Admitted(0).Obj(),
					st.MakeUnit("ns/borrower-1", "borrower").Request("cpu", "5").Admitted(0).Obj(),
					st.MakeUnit("ns/p-1", "p").Request("cpu", "4").Obj(),
				},
			},
			steps: []step{
				{name: "p-1 asks 4, the cluster has 1 free, p is not owed 3 + 4", skipWaits: true},
				{name: "child-1 ends: child still shows its min, p owes p-1 and reclaims", at: time.Second, do: deleteUnits("ns/child-1"),
					skipWaits: true, want: outcome{Preempted: []string{"ns/p-1 <- ns/borrower-1"}}},
			},
		},
	}
	for _, tc := range cases {
		for _, settle := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, settling %t", tc.name, settle), func(t *testing.T) {
				s := tc.world.build(t)
				if !settle {
					scheduler.NoSettle(s)
				}
				runSteps(t, s, tc.steps)
			})
		}
	}
}
