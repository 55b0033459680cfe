package scheduler_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// outcome is a Result reduced to what a case checks.
type outcome struct {
	// Admitted: "unit", or "unit set=n, ..." for a partial admission.
	Admitted  []string
	Preempted []string          // "preemptor <- victim, victim"
	Waits     map[string]string // unit -> reason, as reported this cycle
	Errors    []string          // "unit in queue: error"; none expected outside fault injection
}

func summarise(r scheduler.Result) outcome {
	var o outcome
	for _, a := range r.Admissions {
		o.Admitted = append(o.Admitted, a.Unit+partialCounts(a.Partial))
	}
	for _, p := range r.Preemptions {
		o.Preempted = append(o.Preempted, p.Preemptor+" <- "+strings.Join(p.Victims, ", "))
	}
	for _, w := range r.Waits {
		if o.Waits == nil {
			o.Waits = map[string]string{}
		}
		o.Waits[w.Unit] = w.Reason
	}
	for _, e := range r.Errors {
		o.Errors = append(o.Errors, e.Unit+" in "+e.Queue+": "+e.Err.Error())
	}
	return o
}

// partialCounts is " a=1, b=2" for a partial admission, "" for a whole one.
func partialCounts(p map[string]int32) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(p)) {
		parts = append(parts, fmt.Sprintf("%s=%d", name, p[name]))
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, ", ")
}

type step struct {
	name string
	do   func(s *scheduler.Scheduler)
	// at is the cycle's time, after T0.
	at        time.Duration
	want      outcome
	skipWaits bool
}

type world struct {
	capacity corev1.ResourceList
	quotas   []quota.Spec
	queues   []scheduler.QueueSpec
	units    []scheduler.Unit
}

func (w world) build(t *testing.T) *scheduler.Scheduler {
	t.Helper()
	s := scheduler.New()
	if w.capacity != nil {
		s.SetClusterCapacity(w.capacity)
	}
	for _, q := range w.quotas {
		s.UpsertQuota(q)
	}
	for _, q := range w.queues {
		s.UpsertQueue(q)
	}
	for _, u := range w.units {
		if err := s.UpsertUnit(u); err != nil {
			t.Fatalf("UpsertUnit(%s): %v", u.Key, err)
		}
	}
	return s
}

func runSteps(t *testing.T, s *scheduler.Scheduler, steps []step) {
	t.Helper()
	for i, st0 := range steps {
		if st0.do != nil {
			st0.do(s)
		}
		got := summarise(s.Cycle(st.T0.Add(st0.at)))
		want := st0.want
		opts := []cmp.Option{cmpopts.EquateEmpty()}
		if st0.skipWaits {
			opts = append(opts, cmpopts.IgnoreFields(outcome{}, "Waits"))
		}
		if diff := cmp.Diff(want, got, opts...); diff != "" {
			t.Errorf("step %d (%s): cycle mismatch (-want +got):\n%s", i, st0.name, diff)
		}
	}
}

func upsert(units ...scheduler.Unit) func(*scheduler.Scheduler) {
	return func(s *scheduler.Scheduler) {
		for _, u := range units {
			if err := s.UpsertUnit(u); err != nil {
				panic(err)
			}
		}
	}
}

func deleteUnits(keys ...string) func(*scheduler.Scheduler) {
	return func(s *scheduler.Scheduler) {
		for _, k := range keys {
			s.DeleteUnit(k)
		}
	}
}

var bigCluster = qt.Res("cpu", "100", "memory", "400Gi")

// delay is how long a head that could preempt first waits for quota to free
// (koord-queue/preemption-delay's default): a cycle that preempts comes at
// least that long after the first one that could have.
const delay = policy.DefaultPreemptionDelay

// waitsToReclaim and waitsToPreempt are a head's wait reason during that delay.
func waitsToReclaim(q string) string {
	return "waits up to 2s (koord-queue/preemption-delay) for quota to free before it reclaims the min of quota " + q + " from borrowers; it holds what frees meanwhile"
}

func waitsToPreempt(q string) string {
	return "waits up to 2s (koord-queue/preemption-delay) for quota to free before it preempts lower-priority units of quota " + q + "; it holds what frees meanwhile"
}

// ownerAndBorrower is a cluster of capacityCPU cpu shared by quota owner
// (min 6) and quota borrower (min 4), each free to use all 10, with units.
func ownerAndBorrower(capacityCPU string, units ...scheduler.Unit) world {
	return world{
		capacity: qt.Res("cpu", capacityCPU),
		quotas: []quota.Spec{
			qt.MakeSpec("owner").Min("cpu", "6").Max("cpu", "10").Obj(),
			qt.MakeSpec("borrower").Min("cpu", "4").Max("cpu", "10").Obj(),
		},
		queues: []scheduler.QueueSpec{st.MakeQueue("owner").Obj(), st.MakeQueue("borrower").Obj()},
		units:  units,
	}
}

func TestCycle(t *testing.T) {
	teamA := qt.MakeSpec("team-a").Min("cpu", "4", "memory", "8Gi").Max("cpu", "4", "memory", "8Gi").Obj()
	cases := []struct {
		name  string
		world world
		steps []step
	}{
		{
			name: "seed 004: the second 4-CPU job waits while the first holds team-a, and is admitted when it finishes",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{teamA},
				queues:   []scheduler.QueueSpec{st.MakeQueue("team-a").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("default/my-job", "team-a").Request("cpu", "4", "memory", "8Gi").Obj(),
					st.MakeUnit("default/my-job-blocked", "team-a").Request("cpu", "4", "memory", "8Gi").Enqueued(time.Second).Obj(),
				},
			},
			steps: []step{
				{name: "first admitted, second waits", want: outcome{
					Admitted: []string{"default/my-job"},
					Waits: map[string]string{
						"default/my-job-blocked": "team-a: cpu 4 used of max 4, request 4; memory 8Gi used of max 8Gi, request 8Gi",
					},
				}},
				{name: "nothing changed, nothing to decide"},
				{name: "first finishes", do: deleteUnits("default/my-job"), want: outcome{Admitted: []string{"default/my-job-blocked"}}},
			},
		},
		{
			name: "priority: higher priority first, then earlier enqueue, then name",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "3").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/late", "q").Request("cpu", "1").Enqueued(2 * time.Second).Obj(),
					st.MakeUnit("ns/b", "q").Request("cpu", "1").Enqueued(time.Second).Obj(),
					st.MakeUnit("ns/a", "q").Request("cpu", "1").Enqueued(time.Second).Obj(),
					st.MakeUnit("ns/high", "q").Priority(10).Request("cpu", "1").Enqueued(3 * time.Second).Obj(),
				},
			},
			steps: []step{{want: outcome{
				Admitted: []string{"ns/high", "ns/a", "ns/b"},
				Waits:    map[string]string{"ns/late": "q: cpu 3 used of max 3, request 1"},
			}}},
		},
		{
			name: "priority policy skips a head that does not fit and admits a later unit that does",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/big", "q").Priority(5).Request("cpu", "8").Obj(),
					st.MakeUnit("ns/small", "q").Request("cpu", "2").Obj(),
				},
			},
			steps: []step{{want: outcome{
				Admitted: []string{"ns/small"},
				Waits:    map[string]string{"ns/big": "request cpu 8 exceeds max 4 of q: it can never be admitted"},
			}}},
		},
		{
			name: "block policy admits nothing behind a head that does not fit",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Policy(schedulingv1alpha1.QueuePolicyBlock).Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/big", "q").Priority(5).Request("cpu", "8").Obj(),
					st.MakeUnit("ns/small", "q").Request("cpu", "2").Obj(),
				},
			},
			steps: []step{
				{want: outcome{Waits: map[string]string{"ns/big": "request cpu 8 exceeds max 4 of q: it can never be admitted"}}},
				{name: "head leaves, the next goes", do: deleteUnits("ns/big"), want: outcome{Admitted: []string{"ns/small"}}},
			},
		},
		{
			name: "intelligent: the high head blocks high units behind it and the whole low band",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Policy(schedulingv1alpha1.QueuePolicyIntelligent).Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/high-big", "q").Priority(9).Request("cpu", "8").Obj(),
					st.MakeUnit("ns/high-small", "q").Priority(4).Request("cpu", "1").Obj(),
					st.MakeUnit("ns/low", "q").Priority(1).Request("cpu", "1").Obj(),
				},
			},
			steps: []step{
				{want: outcome{Waits: map[string]string{
					"ns/high-big": "request cpu 8 exceeds max 4 of q: it can never be admitted (Intelligent: high-priority head; lower units wait behind it)",
				}}},
				{name: "high head leaves: the rest of the high band, then the low band", do: deleteUnits("ns/high-big"),
					want: outcome{Admitted: []string{"ns/high-small", "ns/low"}}},
			},
		},
		{
			name: "intelligent: a low unit that does not fit yields to the next, round-robin",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Policy(schedulingv1alpha1.QueuePolicyIntelligent).Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/low-big", "q").Priority(3).Request("cpu", "8").Obj(),
					st.MakeUnit("ns/low-a", "q").Priority(2).Request("cpu", "2").Obj(),
					st.MakeUnit("ns/low-b", "q").Priority(1).Request("cpu", "2").Obj(),
				},
			},
			steps: []step{
				{want: outcome{
					Admitted: []string{"ns/low-a", "ns/low-b"},
					Waits:    map[string]string{"ns/low-big": "request cpu 8 exceeds max 4 of q: it can never be admitted"},
				}},
				{
					name: "after low-b the turn wraps around: low-c, behind low-b in order, goes before low-z, ahead of the cursor",
					do: func(s *scheduler.Scheduler) {
						deleteUnits("ns/low-a", "ns/low-b", "ns/low-big")(s)
						upsert(
							st.MakeUnit("ns/low-z", "q").Priority(3).Request("cpu", "3").Obj(),
							st.MakeUnit("ns/low-c", "q").Priority(0).Request("cpu", "3").Obj(),
						)(s)
					},
					want: outcome{Admitted: []string{"ns/low-c"}, Waits: map[string]string{"ns/low-z": "q: cpu 3 used of max 4, request 3"}},
				},
			},
		},
		{
			name: "intelligent: the priority-threshold moves units between bands",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Policy(schedulingv1alpha1.QueuePolicyIntelligent).Threshold(10).Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/p9-big", "q").Priority(9).Request("cpu", "8").Obj(),
					st.MakeUnit("ns/p1", "q").Priority(1).Request("cpu", "1").Obj(),
				},
			},
			steps: []step{{
				name: "priority 9 is low under threshold 10, so it does not block",
				want: outcome{Admitted: []string{"ns/p1"}, Waits: map[string]string{"ns/p9-big": "request cpu 8 exceeds max 4 of q: it can never be admitted"}},
			}},
		},
		{
			name: "intelligent: starvation protection serves a low unit past its maximum wait before the high band",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues: []scheduler.QueueSpec{st.MakeQueue("q").Policy(schedulingv1alpha1.QueuePolicyIntelligent).
					LowMaxWait(10 * time.Minute).Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/hog", "q").Priority(9).Request("cpu", "4").Admitted(0).Running().Obj(),
					st.MakeUnit("ns/high", "q").Priority(9).Request("cpu", "3").Enqueued(time.Minute).Obj(),
					st.MakeUnit("ns/low", "q").Priority(1).Request("cpu", "2").Obj(),
				},
			},
			steps: []step{
				{name: "the low unit waits behind the high head", want: outcome{Waits: map[string]string{
					"ns/high": "q: cpu 4 used of max 4, request 3 (Intelligent: high-priority head; lower units wait behind it)",
				}}},
				{name: "past 10m the low unit is promoted and heads the queue", at: 10 * time.Minute, want: outcome{Waits: map[string]string{
					"ns/low": "q: cpu 4 used of max 4, request 2 (Intelligent: waited past its maximum wait; served first)",
				}}},
				{name: "capacity frees: the promoted unit goes first", at: 11 * time.Minute, do: deleteUnits("ns/hog"),
					// ns/high still waits for the same reason (q's max), so
					// no new Wait: WaitReason has the fresh numbers.
					want: outcome{Admitted: []string{"ns/low"}}},
				{name: "the fresh reason", do: func(s *scheduler.Scheduler) {
					want := "q: cpu 2 used of max 4, request 3 (Intelligent: high-priority head; lower units wait behind it)"
					if diff := cmp.Diff(want, s.WaitReason("ns/high")); diff != "" {
						panic("WaitReason (-want +got):\n" + diff)
					}
				}},
			},
		},
		{
			name: "max-depth: a scan looks only at the first units",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").MaxDepth(2).Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/1", "q").Priority(3).Request("cpu", "8").Obj(),
					st.MakeUnit("ns/2", "q").Priority(2).Request("cpu", "8").Obj(),
					st.MakeUnit("ns/3", "q").Priority(1).Request("cpu", "1").Obj(),
				},
			},
			steps: []step{{want: outcome{Waits: map[string]string{"ns/1": "request cpu 8 exceeds max 4 of q: it can never be admitted"}}}},
		},
		{
			name: "wait-for-pods-running: one admitted-but-not-running unit at a time",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "10").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").WaitForPodsRunning().Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/a", "q").Request("cpu", "1").Obj(),
					st.MakeUnit("ns/b", "q").Request("cpu", "1").Enqueued(time.Second).Obj(),
				},
			},
			steps: []step{
				{want: outcome{Admitted: []string{"ns/a"}, Waits: map[string]string{
					"ns/b": "queue q waits for ns/a to be running (wait-for-pods-running)",
				}}},
				{name: "nothing changed"},
				{name: "a runs", do: upsert(st.MakeUnit("ns/a", "q").Request("cpu", "1").Admitted(0).Running().Obj()),
					want: outcome{Admitted: []string{"ns/b"}}},
			},
		},
		{
			name: "a parent's max limits its children",
			world: world{
				capacity: bigCluster,
				quotas: []quota.Spec{
					qt.MakeSpec("org").IsParent().Max("cpu", "5").Obj(),
					qt.MakeSpec("team-x").Parent("org").Max("cpu", "4").Obj(),
					qt.MakeSpec("team-y").Parent("org").Max("cpu", "4").Obj(),
				},
				queues: []scheduler.QueueSpec{st.MakeQueue("team-x").Obj(), st.MakeQueue("team-y").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/x", "team-x").Request("cpu", "4").Obj(),
					st.MakeUnit("ns/y", "team-y").Request("cpu", "2").Enqueued(time.Second).Obj(),
				},
			},
			steps: []step{{want: outcome{
				Admitted: []string{"ns/x"},
				Waits:    map[string]string{"ns/y": "org: cpu 4 used of max 5, request 2"},
			}}},
		},
		{
			name: "a resource a max does not name is not limited by that quota",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
				units:    []scheduler.Unit{st.MakeUnit("ns/mem-hungry", "q").Request("cpu", "1", "memory", "300Gi").Obj()},
			},
			steps: []step{{want: outcome{Admitted: []string{"ns/mem-hungry"}}}},
		},
		{
			name: "the cluster's capacity limits the root, including resources a quota names and it does not have; what nothing names is not limited",
			world: world{
				capacity: qt.Res("cpu", "6"),
				quotas:   []quota.Spec{qt.MakeSpec("a").Obj(), qt.MakeSpec("b").Max("nvidia.com/gpu", "1").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("a").Obj(), st.MakeQueue("b").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/a", "a").Request("cpu", "4").Obj(),
					st.MakeUnit("ns/b", "b").Request("cpu", "4").Obj(),
					st.MakeUnit("ns/gpu", "b").Request("nvidia.com/gpu", "1").Enqueued(time.Second).Obj(),
					st.MakeUnit("ns/made-up", "a").Request("example.com/made-up", "1").Enqueued(time.Second).Obj(),
				},
			},
			steps: []step{{want: outcome{
				Admitted: []string{"ns/a", "ns/made-up"},
				Waits:    map[string]string{"ns/b": "cluster: cpu 4 used of capacity 6, request 4"},
			}, skipWaits: true}},
		},
		{
			name: "an ElasticQuota named koordinator-root-quota with a max overrides the cluster's capacity",
			world: world{
				capacity: qt.Res("cpu", "100"),
				quotas:   []quota.Spec{qt.MakeSpec("koordinator-root-quota").Max("cpu", "2").Obj(), qt.MakeSpec("a").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("a").Obj()},
				units:    []scheduler.Unit{st.MakeUnit("ns/a", "a").Request("cpu", "3").Obj()},
			},
			steps: []step{{want: outcome{Waits: map[string]string{"ns/a": "request cpu 3 exceeds max 2 of koordinator-root-quota: it can never be admitted"}}}},
		},
		{
			name: "a quota borrows its sibling's idle min up to its own max",
			world: world{
				capacity: qt.Res("cpu", "10"),
				quotas: []quota.Spec{
					qt.MakeSpec("lender").Min("cpu", "5").Max("cpu", "10").Obj(),
					qt.MakeSpec("borrower").Min("cpu", "5").Max("cpu", "8").Obj(),
				},
				queues: []scheduler.QueueSpec{st.MakeQueue("borrower").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/1", "borrower").Request("cpu", "6").Obj(),
					st.MakeUnit("ns/2", "borrower").Request("cpu", "2").Enqueued(time.Second).Obj(),
					st.MakeUnit("ns/3", "borrower").Request("cpu", "1").Enqueued(2 * time.Second).Obj(),
				},
			},
			steps: []step{{want: outcome{
				Admitted: []string{"ns/1", "ns/2"},
				Waits:    map[string]string{"ns/3": "borrower: cpu 8 used of max 8, request 1"},
			}}},
		},
		{
			name: "a quota that does not lend keeps its idle min from its siblings",
			world: world{
				capacity: qt.Res("cpu", "10"),
				quotas: []quota.Spec{
					qt.MakeSpec("keeper").Min("cpu", "5").Max("cpu", "10").NoLending().Obj(),
					qt.MakeSpec("borrower").Min("cpu", "5").Max("cpu", "10").Obj(),
				},
				queues: []scheduler.QueueSpec{st.MakeQueue("borrower").Obj(), st.MakeQueue("keeper").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/b1", "borrower").Request("cpu", "5").Obj(),
					st.MakeUnit("ns/b2", "borrower").Request("cpu", "1").Enqueued(time.Second).Obj(),
				},
			},
			steps: []step{
				{want: outcome{
					Admitted: []string{"ns/b1"},
					Waits:    map[string]string{"ns/b2": "cluster: cpu 5 used (+5 kept for quotas that do not lend) of capacity 10, request 1"},
				}},
				{name: "the keeper gets its min at once", do: upsert(st.MakeUnit("ns/k", "keeper").Request("cpu", "5").Obj()),
					want: outcome{Admitted: []string{"ns/k"}}},
			},
		},
		{
			name: "reclaim: a quota below its min evicts the borrower's lowest-priority, most recent units, only as many as needed",
			world: ownerAndBorrower("10",
				st.MakeUnit("ns/old-low", "borrower").Priority(1).Request("cpu", "2").Admitted(time.Second).Running().Obj(),
				st.MakeUnit("ns/new-low", "borrower").Priority(1).Request("cpu", "2").Admitted(2*time.Second).Running().Obj(),
				st.MakeUnit("ns/high", "borrower").Priority(5).Request("cpu", "2").Admitted(3*time.Second).Running().Obj(),
				st.MakeUnit("ns/base", "borrower").Priority(3).Request("cpu", "4").Admitted(0).Running().Obj(),
				st.MakeUnit("ns/claim", "owner").Request("cpu", "2").Obj(),
			),
			steps: []step{
				{name: "it first waits for quota to free", want: outcome{Waits: map[string]string{"ns/claim": waitsToReclaim("owner")}}},
				{name: "none freed within the delay: it reclaims", at: delay, want: outcome{
					Preempted: []string{"ns/claim <- ns/new-low"},
					Waits:     map[string]string{"ns/claim": "preempting 1 unit(s) to reclaim the min of quota owner: ns/new-low"},
				}},
				{name: "the victim still holds its quota: nothing to reconsider", at: delay},
				{name: "the victim is gone: the preemptor goes first", at: delay, do: deleteUnits("ns/new-low"),
					want: outcome{Admitted: []string{"ns/claim"}}},
			},
		},
		{
			name: "reclaim takes a unit larger than what its quota borrows, since its quota borrows before (Kueue's rule)",
			world: ownerAndBorrower("10",
				st.MakeUnit("ns/big", "borrower").Request("cpu", "9").Admitted(0).Running().Obj(),
				st.MakeUnit("ns/claim", "owner").Request("cpu", "2").Obj(),
			),
			steps: []step{
				{want: outcome{Waits: map[string]string{"ns/claim": waitsToReclaim("owner")}}},
				{at: delay, want: outcome{
					Preempted: []string{"ns/claim <- ns/big"},
					Waits:     map[string]string{"ns/claim": "preempting 1 unit(s) to reclaim the min of quota owner: ns/big"},
				}},
			},
		},
		{
			name: "reclaim never takes a unit of a quota within its min (a cluster smaller than the mins)",
			world: ownerAndBorrower("8",
				st.MakeUnit("ns/mine", "owner").Request("cpu", "3").Admitted(0).Running().Obj(),
				st.MakeUnit("ns/within", "borrower").Request("cpu", "4").Admitted(0).Running().Obj(),
				st.MakeUnit("ns/claim", "owner").Request("cpu", "2").Obj(),
			),
			steps: []step{{want: outcome{Waits: map[string]string{"ns/claim": "cluster: cpu 7 used of capacity 8, request 2"}}}},
		},
		{
			name: "one preemption per quota at a time: a second owed head waits for the first's to end",
			world: ownerAndBorrower("10",
				st.MakeUnit("ns/b1", "borrower").Request("cpu", "5").Admitted(0).Running().Obj(),
				st.MakeUnit("ns/b2", "borrower").Request("cpu", "5").Admitted(time.Second).Running().Obj(),
				st.MakeUnit("ns/first", "owner").Priority(1).Request("cpu", "4").Obj(),
			),
			steps: []step{
				{want: outcome{Waits: map[string]string{"ns/first": waitsToReclaim("owner")}}},
				{at: delay, want: outcome{
					Preempted: []string{"ns/first <- ns/b2"},
					Waits:     map[string]string{"ns/first": "preempting 1 unit(s) to reclaim the min of quota owner: ns/b2"},
				}},
				{
					// Owed on its own (0 + 4 of 6 held), not beside first's
					// 4: it must not evict b1 for nothing.
					at:   delay,
					do:   upsert(st.MakeUnit("ns/second", "owner").Priority(9).Request("cpu", "4").Obj()),
					want: outcome{Waits: map[string]string{"ns/second": "waits for the preemption by ns/first in quota owner to end"}},
				},
			},
		},
		{
			name: "in-queue preemption evicts lower-priority admitted units that do not run yet, and spares running ones",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Preemption().Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/running", "q").Priority(1).Request("cpu", "2").Admitted(0).Running().Obj(),
					st.MakeUnit("ns/starting", "q").Priority(1).Request("cpu", "2").Admitted(0).Obj(),
					st.MakeUnit("ns/urgent", "q").Priority(9).Request("cpu", "2").Obj(),
				},
			},
			steps: []step{
				{want: outcome{Waits: map[string]string{"ns/urgent": waitsToPreempt("q")}}},
				{at: delay, want: outcome{
					Preempted: []string{"ns/urgent <- ns/starting"},
					Waits: map[string]string{
						"ns/urgent": "preempting 1 unit(s) for higher-priority unit ns/urgent (priority 9) of quota q: ns/starting",
					},
				}},
				{name: "the victim leaves", at: delay, do: upsert(st.MakeUnit("ns/starting", "q").Priority(1).Request("cpu", "2").Obj()),
					want: outcome{Admitted: []string{"ns/urgent"}, Waits: map[string]string{
						"ns/starting": "q: cpu 4 used of max 4, request 2",
					}}},
			},
		},
		{
			name: "in-queue preemption evicts running units when the queue asks for it",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Preemption().PreemptRunning().Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/running", "q").Priority(1).Request("cpu", "4").Admitted(0).Running().Obj(),
					st.MakeUnit("ns/urgent", "q").Priority(9).Request("cpu", "2").Obj(),
				},
			},
			steps: []step{
				{skipWaits: true},
				{at: delay, want: outcome{Preempted: []string{"ns/urgent <- ns/running"}}, skipWaits: true},
			},
		},
		{
			name: "in-queue preemption is off by default",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/starting", "q").Priority(1).Request("cpu", "4").Admitted(0).Obj(),
					st.MakeUnit("ns/urgent", "q").Priority(9).Request("cpu", "2").Obj(),
				},
			},
			steps: []step{{want: outcome{Waits: map[string]string{"ns/urgent": "q: cpu 4 used of max 4, request 2"}}}},
		},
		{
			name: "queues compete: furthest below its runtime share first, then queue priority",
			world: world{
				capacity: qt.Res("cpu", "4"),
				quotas: []quota.Spec{
					qt.MakeSpec("rich").Min("cpu", "2").Max("cpu", "4").Obj(),
					qt.MakeSpec("poor").Min("cpu", "2").Max("cpu", "4").Obj(),
				},
				queues: []scheduler.QueueSpec{
					st.MakeQueue("rich").Priority(2000).Obj(),
					st.MakeQueue("poor").Obj(),
				},
				units: []scheduler.Unit{
					st.MakeUnit("ns/rich-0", "rich").Request("cpu", "1").Admitted(0).Running().Obj(),
					st.MakeUnit("ns/rich-1", "rich").Request("cpu", "1").Obj(),
					st.MakeUnit("ns/poor-1", "poor").Request("cpu", "1").Obj(),
					st.MakeUnit("ns/poor-2", "poor").Request("cpu", "1").Enqueued(time.Second).Obj(),
					st.MakeUnit("ns/poor-3", "poor").Request("cpu", "1").Enqueued(2 * time.Second).Obj(),
				},
			},
			steps: []step{{
				want: outcome{Admitted: []string{"ns/poor-1", "ns/rich-1", "ns/poor-2"}, Waits: map[string]string{
					"ns/poor-3": "cluster: cpu 4 used of capacity 4, request 1",
				}},
			}},
		},
		{
			name: "a unit of a queue that does not exist waits, and is admitted once the queue exists",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Obj()},
				units:    []scheduler.Unit{st.MakeUnit("ns/a", "q").Request("cpu", "1").Obj()},
			},
			steps: []step{
				{},
				{do: func(s *scheduler.Scheduler) { s.UpsertQueue(st.MakeQueue("q").Obj()) }, want: outcome{Admitted: []string{"ns/a"}}},
			},
		},
		{
			name: "a failed admission write is forgotten and the unit is admitted again",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "1").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
				units:    []scheduler.Unit{st.MakeUnit("ns/a", "q").Request("cpu", "1").Obj()},
			},
			steps: []step{
				{want: outcome{Admitted: []string{"ns/a"}}},
				{do: func(s *scheduler.Scheduler) { s.ForgetAdmission("ns/a") }, want: outcome{Admitted: []string{"ns/a"}}},
			},
		},
		{
			name: "usage released under an unrelated quota does not wake a queue held by its own max",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("a").Max("cpu", "1").Obj(), qt.MakeSpec("b").Max("cpu", "1").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("a").Obj(), st.MakeQueue("b").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/a-run", "a").Request("cpu", "1").Admitted(0).Obj(),
					st.MakeUnit("ns/a-wait", "a").Request("cpu", "1").Obj(),
					st.MakeUnit("ns/b-run", "b").Request("cpu", "1").Admitted(0).Obj(),
				},
			},
			steps: []step{
				{want: outcome{Waits: map[string]string{"ns/a-wait": "a: cpu 1 used of max 1, request 1"}}},
				{do: deleteUnits("ns/b-run")},
				{do: deleteUnits("ns/a-run"), want: outcome{Admitted: []string{"ns/a-wait"}}},
			},
		},
		{
			name: "a policy change takes effect in place and keeps the order",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Policy(schedulingv1alpha1.QueuePolicyBlock).Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/big", "q").Priority(5).Request("cpu", "8").Obj(),
					st.MakeUnit("ns/small-1", "q").Request("cpu", "1").Obj(),
					st.MakeUnit("ns/small-2", "q").Request("cpu", "1").Enqueued(time.Second).Obj(),
				},
			},
			steps: []step{
				{skipWaits: true},
				{
					do:   func(s *scheduler.Scheduler) { s.UpsertQueue(st.MakeQueue("q").Obj()) },
					want: outcome{Admitted: []string{"ns/small-1", "ns/small-2"}},
				},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, tc.world.build(t), tc.steps)
		})
	}
}

func TestQuotaErrorsMakeUnitsWait(t *testing.T) {
	cases := []struct {
		name       string
		quotas     []quota.Spec
		wantReason string
	}{
		{
			name:       "missing parent",
			quotas:     []quota.Spec{qt.MakeSpec("q").Parent("ghost").Obj()},
			wantReason: `quota "q": parent "ghost": parent quota does not exist`,
		},
		{
			name: "cycle",
			quotas: []quota.Spec{
				qt.MakeSpec("q").IsParent().Parent("p").Obj(),
				qt.MakeSpec("p").IsParent().Parent("q").Obj(),
			},
			wantReason: `quota "q": p -> q: quota parents form a cycle`,
		},
		{
			name:       "min above max",
			quotas:     []quota.Spec{qt.MakeSpec("q").Min("cpu", "5").Max("cpu", "4").Obj()},
			wantReason: `quota "q": cpu min 5, max 4: min is above max`,
		},
		{
			name: "a child whose min takes its siblings' past the parent's min",
			quotas: []quota.Spec{
				qt.MakeSpec("p").IsParent().Min("cpu", "4").Max("cpu", "10").Obj(),
				qt.MakeSpec("a").Parent("p").Min("cpu", "3").Max("cpu", "10").Obj(),
				qt.MakeSpec("q").Parent("p").Min("cpu", "3").Max("cpu", "10").Obj(),
			},
			wantReason: `quota "q": its cpu min 3 takes its siblings' mins to 6, over the min 4 of its parent "p"; ` +
				`which of them changed last is not known (they were read at start), so the newest are refused: children's mins add up to more than the parent's min`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := world{capacity: bigCluster, quotas: tc.quotas,
				queues: []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
				units:  []scheduler.Unit{st.MakeUnit("ns/a", "q").Request("cpu", "1").Obj()},
			}.build(t)
			got := summarise(s.Cycle(st.T0))
			want := outcome{Waits: map[string]string{"ns/a": tc.wantReason}}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("cycle (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReason, s.WaitReason("ns/a")); diff != "" {
				t.Errorf("WaitReason (-want +got):\n%s", diff)
			}
		})
	}
}

// lentCluster is a 10-cpu cluster where quota o (min 4) borrows 4 cpu
// through eight 1-cpu units, o0 admitted first; q has min and max 4, t min
// 2. t1 (2 cpu, in quota t1Quota) and p (priority 5, asking pCPU) complete
// it: p is owed its request, and has to reclaim it.
func lentCluster(t1Quota, pCPU string) world {
	w := world{
		capacity: qt.Res("cpu", "10"),
		quotas: []quota.Spec{
			qt.MakeSpec("q").Min("cpu", "4").Max("cpu", "4").Obj(),
			qt.MakeSpec("o").Min("cpu", "4").Max("cpu", "10").Obj(),
			qt.MakeSpec("t").Min("cpu", "2").Max("cpu", "10").Obj(),
		},
		queues: []scheduler.QueueSpec{st.MakeQueue("q").Obj(), st.MakeQueue("o").Obj(), st.MakeQueue("t").Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/t1", t1Quota).Request("cpu", "2").Admitted(0).Running().Obj(),
			st.MakeUnit("ns/p", "q").Priority(5).Request("cpu", pCPU).Obj(),
		},
	}
	for i := 0; i < 8; i++ {
		w.units = append(w.units, st.MakeUnit(fmt.Sprintf("ns/o%d", i), "o").Request("cpu", "1").Admitted(time.Duration(i)*time.Second).Running().Obj())
	}
	return w
}

// TestReservationStaysWithinItsQuotaMax: a preemptor's reservation grows by
// what each departing victim frees, but never past what its own quota may
// still take: here the quota's max was lowered while the victims, in
// another quota, were leaving, and they free cluster capacity the new max
// does not allow.
func TestReservationStaysWithinItsQuotaMax(t *testing.T) {
	w := lentCluster("q", "2")
	s := w.build(t)
	used := func() int64 { q := s.Quotas().Used("q")[corev1.ResourceCPU]; return q.Value() }
	s.Cycle(st.T0) // p waits for quota to free first
	got := summarise(s.Cycle(st.T0.Add(delay)))
	if diff := cmp.Diff([]string{"ns/p <- ns/o7, ns/o6"}, got.Preempted); diff != "" {
		t.Fatalf("preempted (-want +got):\n%s", diff)
	}
	// The quota's max is lowered to what t1 holds: p no longer fits.
	s.UpsertQuota(qt.MakeSpec("q").Min("cpu", "2").Max("cpu", "2").Obj())
	for _, v := range []string{"ns/o7", "ns/o6"} {
		s.DeleteUnit(v)
		if u := used(); u > 2 {
			t.Fatalf("after victim %s left, quota q uses %d cpu, over its max 2", v, u)
		}
	}
	got = summarise(s.Cycle(st.T0.Add(delay)))
	if len(got.Admitted) != 0 {
		t.Errorf("admitted %v over the lowered max", got.Admitted)
	}
	if u := used(); u > 2 {
		t.Errorf("quota q uses %d cpu, over its max 2", u)
	}
}

// TestQueueMatesDoNotTakeWhatAPreemptorIsOwed: while a preemptor waits for
// its victims, capacity freed elsewhere does not go to a smaller unit of its
// quota that would leave it no room once its victims are gone (they would
// have been evicted for nothing).
func TestQueueMatesDoNotTakeWhatAPreemptorIsOwed(t *testing.T) {
	w := lentCluster("t", "4")
	runSteps(t, w.build(t), []step{
		{want: outcome{Waits: map[string]string{"ns/p": waitsToReclaim("q")}}},
		{at: delay, want: outcome{
			Preempted: []string{"ns/p <- ns/o7, ns/o6, ns/o5, ns/o4"},
			Waits:     map[string]string{"ns/p": "preempting 4 unit(s) to reclaim the min of quota q: ns/o7, ns/o6, ns/o5, ns/o4"},
		}},
		{
			name: "t1 finished: 2 cpu free, but q's room is p's",
			at:   delay,
			do: func(s *scheduler.Scheduler) {
				s.DeleteUnit("ns/t1")
				upsert(st.MakeUnit("ns/small", "q").Priority(1).Request("cpu", "2").Obj())(s)
			},
			want: outcome{}, skipWaits: true,
		},
		{
			name: "the victims are gone: p is admitted",
			at:   delay,
			do:   deleteUnits("ns/o7", "ns/o6", "ns/o5", "ns/o4"),
			want: outcome{Admitted: []string{"ns/p"}}, skipWaits: true,
		},
	})
}

// TestUnitsOfOtherQuotasDoNotTakeWhatAPreemptorIsOwed: while p reclaims
// the min of its quota q from o, capacity freed elsewhere does not go to a
// unit of another quota that shares a limit with q (a child of q, or a
// sibling under a parent whose max both count against) when that would
// leave p no room once its victims are gone: they would have been evicted
// for nothing.
func TestUnitsOfOtherQuotasDoNotTakeWhatAPreemptorIsOwed(t *testing.T) {
	cases := map[string]struct {
		quotas []quota.Spec
		small  string // the quota of the unit that asks while p waits
	}{
		"a child of the preemptor's quota": {
			quotas: []quota.Spec{
				qt.MakeSpec("q").IsParent().Min("cpu", "4").Max("cpu", "4").Obj(),
				qt.MakeSpec("child").Parent("q").Max("cpu", "4").Obj(),
			},
			small: "child",
		},
		"a sibling under a parent that limits both": {
			quotas: []quota.Spec{
				qt.MakeSpec("org").IsParent().Min("cpu", "4").Max("cpu", "4").Obj(),
				qt.MakeSpec("q").Parent("org").Min("cpu", "4").Max("cpu", "4").Obj(),
				qt.MakeSpec("sibling").Parent("org").Max("cpu", "4").Obj(),
			},
			small: "sibling",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			runSteps(t, reclaimingWorld(tc.quotas, tc.small).build(t), []step{
				{want: outcome{Waits: map[string]string{"ns/p": waitsToReclaim("q")}}},
				{at: delay, want: outcome{Preempted: []string{"ns/p <- ns/o7, ns/o6, ns/o5, ns/o4"}}, skipWaits: true},
				{
					name: "t1 finished: 2 cpu free, but q's room is p's",
					at:   delay,
					do: func(s *scheduler.Scheduler) {
						s.DeleteUnit("ns/t1")
						upsert(st.MakeUnit("ns/small", tc.small).Request("cpu", "2").Obj())(s)
					},
					want: outcome{Waits: map[string]string{
						"ns/small": "waits for the preemption by ns/p in quota q to end: the quota it needs is held for it",
					}},
				},
				{
					name: "the victims are gone: p is admitted, then small",
					at:   delay,
					do:   deleteUnits("ns/o7", "ns/o6", "ns/o5", "ns/o4"),
					want: outcome{Admitted: []string{"ns/p"}}, skipWaits: true,
				},
			})
		})
		t.Run(name+": p leaves, small is woken", func(t *testing.T) {
			runSteps(t, reclaimingWorld(tc.quotas, tc.small).build(t), []step{
				{skipWaits: true},
				{at: delay, want: outcome{Preempted: []string{"ns/p <- ns/o7, ns/o6, ns/o5, ns/o4"}}, skipWaits: true},
				{
					at: delay,
					do: func(s *scheduler.Scheduler) {
						s.DeleteUnit("ns/t1")
						upsert(st.MakeUnit("ns/small", tc.small).Request("cpu", "2").Obj())(s)
					},
					skipWaits: true,
				},
				{name: "p is deleted", at: delay, do: deleteUnits("ns/p"), want: outcome{Admitted: []string{"ns/small"}}, skipWaits: true},
			})
		})
	}
}

// reclaimingWorld is a cluster of 10 cpu where p (4 cpu) waits in quota q,
// owed its min (quotas gives q and the quota named small), o (min 4)
// borrows 4 with eight running 1-cpu units, and t1 holds 2 in t (min 2).
func reclaimingWorld(quotas []quota.Spec, small string) world {
	w := world{
		capacity: qt.Res("cpu", "10"),
		quotas: append(slices.Clone(quotas),
			qt.MakeSpec("o").Min("cpu", "4").Max("cpu", "10").Obj(),
			qt.MakeSpec("t").Min("cpu", "2").Max("cpu", "10").Obj()),
		queues: []scheduler.QueueSpec{st.MakeQueue("q").Obj(), st.MakeQueue(small).Obj(), st.MakeQueue("o").Obj(), st.MakeQueue("t").Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/t1", "t").Request("cpu", "2").Admitted(0).Running().Obj(),
			st.MakeUnit("ns/p", "q").Priority(5).Request("cpu", "4").Obj(),
		},
	}
	for i := 0; i < 8; i++ {
		w.units = append(w.units, st.MakeUnit(fmt.Sprintf("ns/o%d", i), "o").Request("cpu", "1").Admitted(time.Duration(i)*time.Second).Running().Obj())
	}
	return w
}

// TestASecondPreemptionWaitsUntilItFitsBesideTheFirst: p1 reclaims for
// child; p2, in child's parent q, is owed q's min too and finds victims of
// its own, but once both sets are gone q could not take p1 and p2 together:
// p2 evicts nobody while p1's preemption is in flight, and says so.
func TestASecondPreemptionWaitsUntilItFitsBesideTheFirst(t *testing.T) {
	w := world{
		capacity: qt.Res("cpu", "10"),
		quotas: []quota.Spec{
			qt.MakeSpec("q").IsParent().Min("cpu", "6").Max("cpu", "6").Obj(),
			qt.MakeSpec("child").Parent("q").Min("cpu", "4").Max("cpu", "6").Obj(),
			qt.MakeSpec("o").Min("cpu", "2").Max("cpu", "10").Obj(),
		},
		queues: []scheduler.QueueSpec{st.MakeQueue("q").Obj(), st.MakeQueue("child").Obj(), st.MakeQueue("o").Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/low", "q").Priority(1).Request("cpu", "2").Admitted(0).Running().Obj(),
			st.MakeUnit("ns/p1", "child").Priority(5).Request("cpu", "4").Obj(),
		},
	}
	for i := 0; i < 8; i++ {
		w.units = append(w.units, st.MakeUnit(fmt.Sprintf("ns/o%d", i), "o").Request("cpu", "1").Admitted(time.Duration(i)*time.Second).Running().Obj())
	}
	runSteps(t, w.build(t), []step{
		{want: outcome{Waits: map[string]string{"ns/p1": waitsToReclaim("child")}}},
		{at: delay, want: outcome{Preempted: []string{"ns/p1 <- ns/o7, ns/o6, ns/o5, ns/o4"}}, skipWaits: true},
		{
			name: "p2 is owed q's min but would not fit beside p1",
			at:   delay,
			do:   upsert(st.MakeUnit("ns/p2", "q").Priority(9).Request("cpu", "2").Obj()),
			want: outcome{Waits: map[string]string{
				"ns/p2": "waits for the preemption by ns/p1 in quota child to end: it would not fit beside it",
			}},
		},
		{name: "past p2's preemption delay, it still evicts nobody", at: 2 * delay, want: outcome{}, skipWaits: true},
		{
			name: "p1's victims are gone: p1 is admitted, and q is full",
			at:   2 * delay,
			do:   deleteUnits("ns/o7", "ns/o6", "ns/o5", "ns/o4"),
			want: outcome{Admitted: []string{"ns/p1"}}, skipWaits: true,
		},
	})
}

func TestVictimQuotaIsReleasedOnlyWhenGone(t *testing.T) {
	s := world{
		capacity: qt.Res("cpu", "4"),
		quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
		queues:   []scheduler.QueueSpec{st.MakeQueue("q").Preemption().Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/victim", "q").Priority(1).Request("cpu", "4").Admitted(0).Obj(),
			st.MakeUnit("ns/urgent", "q").Priority(9).Request("cpu", "4").Obj(),
		},
	}.build(t)
	s.Cycle(st.T0) // urgent waits for quota to free first
	now := st.T0.Add(delay)
	if got := summarise(s.Cycle(now)); !slices.Equal(got.Preempted, []string{"ns/urgent <- ns/victim"}) {
		t.Errorf("preempted %v, want ns/urgent <- ns/victim", got.Preempted)
	}
	used := func() string { q := s.Quotas().Used("q")[corev1.ResourceCPU]; return q.String() }
	if diff := cmp.Diff("4", used()); diff != "" {
		t.Errorf("used while the victim is evicting (-want +got):\n%s", diff)
	}
	// The controller reports the victim still admitted (its pods are stopping).
	if err := s.UpsertUnit(st.MakeUnit("ns/victim", "q").Priority(1).Request("cpu", "4").Admitted(0).Obj()); err != nil {
		t.Fatal(err)
	}
	if got := summarise(s.Cycle(now)); len(got.Admitted)+len(got.Preempted) != 0 {
		t.Errorf("decided %+v while the victim still holds quota", got)
	}
	s.DeleteUnit("ns/victim")
	if diff := cmp.Diff("0", used()); diff != "" {
		t.Errorf("used after the victim left (-want +got):\n%s", diff)
	}
	got := summarise(s.Cycle(now))
	if diff := cmp.Diff([]string{"ns/urgent"}, got.Admitted); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("4", used()); diff != "" {
		t.Errorf("used after the preemptor was admitted (-want +got):\n%s", diff)
	}
}

func TestWaitReasonAndPending(t *testing.T) {
	s := world{
		capacity: bigCluster,
		quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "1").Obj()},
		queues:   []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/never", "q").Request("cpu", "2").Priority(3).Obj(),
			st.MakeUnit("ns/admitted", "q").Request("cpu", "1").Priority(2).Obj(),
			st.MakeUnit("ns/head", "q").Request("cpu", "1").Priority(1).Enqueued(time.Second).Obj(),
			st.MakeUnit("ns/behind", "q").Request("cpu", "1").Priority(1).Enqueued(2 * time.Second).Obj(),
			st.MakeUnit("ns/never-too", "q").Request("cpu", "3").Priority(0).Obj(),
			st.MakeUnit("other/behind-too", "q").Request("cpu", "1").Priority(0).Enqueued(time.Second).Obj(),
			st.MakeUnit("ns/lost", "x").Request("cpu", "1").Obj(),
		},
	}.build(t)
	s.Cycle(st.T0)
	got := map[string]string{}
	for _, k := range []string{"ns/never", "ns/admitted", "ns/head", "ns/behind", "ns/never-too", "other/behind-too", "ns/lost"} {
		got[k] = s.WaitReason(k)
	}
	want := map[string]string{
		"ns/never":    "request cpu 2 exceeds max 1 of q: it can never be admitted",
		"ns/admitted": "",
		// Only the policy's head records why the quota turned it away.
		"ns/head":      "waiting in queue q at position 2 of 5, behind ns/never",
		"ns/behind":    "waiting in queue q at position 3 of 5, behind ns/head",
		"ns/never-too": "request cpu 3 exceeds max 1 of q: it can never be admitted",
		// The unit ahead is another namespace's: its name stays out of
		// a status its namespace's users do not read.
		"other/behind-too": "waiting in queue q at position 5 of 5, behind a unit of another namespace",
		"ns/lost":          `queue "x" does not exist`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WaitReason (-want +got):\n%s", diff)
	}
	wantPending := []scheduler.PendingUnit{
		{Key: "ns/never", Priority: 3, Position: 1}, {Key: "ns/head", Priority: 1, Position: 2},
		{Key: "ns/behind", Priority: 1, Position: 3}, {Key: "ns/never-too", Priority: 0, Position: 4},
		{Key: "other/behind-too", Priority: 0, Position: 5},
	}
	if diff := cmp.Diff(wantPending, s.Pending("q", 0)); diff != "" {
		t.Errorf("Pending (-want +got):\n%s", diff)
	}
	for name, tc := range map[string]struct {
		queue         string
		offset, limit int
		want          []scheduler.PendingUnit
		wantTotal     int
	}{
		"a page in the middle keeps the queue's positions": {queue: "q", offset: 1, limit: 2, want: wantPending[1:3], wantTotal: 5},
		"limit 0 lists the rest":                           {queue: "q", offset: 3, want: wantPending[3:], wantTotal: 5},
		"a limit past the end stops at the end":            {queue: "q", offset: 4, limit: 10, want: wantPending[4:], wantTotal: 5},
		"an offset past the end lists nothing":             {queue: "q", offset: 5, limit: 1, wantTotal: 5},
		"a queue that does not exist has none":             {queue: "x", limit: 1},
	} {
		t.Run(name, func(t *testing.T) {
			got, total := s.PendingFrom(tc.queue, tc.offset, tc.limit)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("PendingFrom(%q, %d, %d) (-want +got):\n%s", tc.queue, tc.offset, tc.limit, diff)
			}
			if total != tc.wantTotal {
				t.Errorf("PendingFrom(%q, ...) total = %d, want %d", tc.queue, total, tc.wantTotal)
			}
		})
	}
}

// TestWaitReasonTextKeepsNothingOfTheScheduler: a wait reason taken as a
// Text renders as WaitReason does, and later, after the queue changed (a
// caller renders it once its lock is released), still says what it said.
func TestWaitReasonTextKeepsNothingOfTheScheduler(t *testing.T) {
	s := world{
		capacity: bigCluster,
		quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "1").Obj()},
		queues:   []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/admitted", "q").Request("cpu", "1").Priority(2).Obj(),
			st.MakeUnit("ns/head", "q").Request("cpu", "1").Priority(1).Obj(),
			st.MakeUnit("ns/behind", "q").Request("cpu", "1").Priority(1).Enqueued(time.Second).Obj(),
			st.MakeUnit("other/last", "q").Request("cpu", "1").Priority(0).Obj(),
		},
	}.build(t)
	s.Cycle(st.T0)
	texts := map[string]scheduler.WaitText{}
	for _, k := range []string{"ns/admitted", "ns/head", "ns/behind", "other/last"} {
		texts[k] = s.WaitReasonText(k)
		if got, want := texts[k].For(strings.SplitN(k, "/", 2)[0]), s.WaitReason(k); got != want {
			t.Errorf("WaitReasonText(%q) renders %q, WaitReason says %q", k, got, want)
		}
	}
	if err := s.UpsertUnit(st.MakeUnit("ns/first", "q").Request("cpu", "1").Priority(9).Obj()); err != nil {
		t.Fatal(err)
	}
	s.DeleteUnit("ns/head")
	got := map[string]string{}
	for k, text := range texts {
		got[k] = text.For(strings.SplitN(k, "/", 2)[0])
	}
	want := map[string]string{
		"ns/admitted": "",
		"ns/head":     "q: cpu 1 used of max 1, request 1",
		"ns/behind":   "waiting in queue q at position 2 of 3, behind ns/head",
		"other/last":  "waiting in queue q at position 3 of 3, behind a unit of another namespace",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("texts rendered after the queue changed (-want +got):\n%s", diff)
	}
}

func TestUpsertUnitRejectsUnitsWithoutKeyOrQueue(t *testing.T) {
	s := scheduler.New()
	for _, u := range []scheduler.Unit{{Queue: "q"}, {Key: "ns/a"}} {
		if err := s.UpsertUnit(u); err == nil {
			t.Errorf("UpsertUnit(%+v) = nil, want an error", u)
		}
	}
}

func TestNextWakeupForStarvationProtection(t *testing.T) {
	s := world{
		capacity: bigCluster,
		quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "1").Obj()},
		queues: []scheduler.QueueSpec{st.MakeQueue("q").Policy(schedulingv1alpha1.QueuePolicyIntelligent).
			LowMaxWait(5 * time.Minute).Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/high", "q").Priority(9).Request("cpu", "2").Obj(),
			st.MakeUnit("ns/low", "q").Priority(1).Request("cpu", "1").Enqueued(time.Minute).Obj(),
		},
	}.build(t)
	got := s.Cycle(st.T0.Add(2 * time.Minute)).NextWakeup
	if diff := cmp.Diff(st.T0.Add(6*time.Minute), got); diff != "" {
		t.Errorf("NextWakeup (-want +got):\n%s", diff)
	}
	res := summarise(s.Cycle(st.T0.Add(6 * time.Minute)))
	if diff := cmp.Diff([]string{"ns/low"}, res.Admitted); diff != "" {
		t.Errorf("admitted at the wake-up (-want +got):\n%s", diff)
	}
}

func TestReclaimProtection(t *testing.T) {
	tree := world{
		capacity: bigCluster,
		quotas: []quota.Spec{
			qt.MakeSpec("p").IsParent().Min("cpu", "8").Max("cpu", "8").Obj(),
			qt.MakeSpec("a").Parent("p").Min("cpu", "4").Max("cpu", "8").Obj(),
			qt.MakeSpec("b").Parent("p").Min("cpu", "4").Max("cpu", "8").Obj(),
		},
		queues: []scheduler.QueueSpec{st.MakeQueue("a").Obj(), st.MakeQueue("b").Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/b1", "b").Request("cpu", "4").Admitted(0).Obj(),
			st.MakeUnit("ns/b2", "b").Request("cpu", "4").Admitted(time.Minute).Obj(),
		},
	}
	owed := st.MakeUnit("ns/a1", "a").Request("cpu", "4").Enqueued(2 * time.Minute).Obj()

	t.Run("a borrower admitted within the protection is not reclaimed", func(t *testing.T) {
		s := tree.build(t)
		s.SetReclaimProtection(5 * time.Minute)
		s.Cycle(st.T0)
		if err := s.UpsertUnit(owed); err != nil {
			t.Fatal(err)
		}
		if got, want := s.Cycle(st.T0.Add(3*time.Minute)).NextWakeup, st.T0.Add(5*time.Minute); !got.Equal(want) {
			t.Errorf("NextWakeup %v, want %v: when b1's protection ends", got, want)
		}
		runSteps(t, s, []step{
			{name: "b1 and b2 are both protected", do: upsert(owed), at: 3 * time.Minute, skipWaits: true},
			{name: "b1's protection ended: it could be reclaimed, with no event but the time", at: 5 * time.Minute, skipWaits: true},
			{name: "the preemption delay is over: b1 is the one reclaimed", at: 5*time.Minute + delay,
				want: outcome{Preempted: []string{"ns/a1 <- ns/b1"}}, skipWaits: true},
		})
	})
	t.Run("without protection the most recently admitted is reclaimed once the preemption delay is over", func(t *testing.T) {
		s := tree.build(t)
		runSteps(t, s, []step{
			{name: "a1 waits for quota to free first", do: upsert(owed), at: 3 * time.Minute, skipWaits: true},
			{name: "b2 is taken", at: 3*time.Minute + delay, want: outcome{Preempted: []string{"ns/a1 <- ns/b2"}}, skipWaits: true},
		})
	})
}

func TestCycleLimited(t *testing.T) {
	type call struct {
		name     string
		do       func(s *scheduler.Scheduler)
		limit    int
		admitted []string
		more     bool
	}
	cases := []struct {
		name  string
		world world
		calls []call
	}{
		{
			name: "a unit of higher priority that arrives between two limited cycles goes before the rest",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/a", "q").Request("cpu", "1").Enqueued(1 * time.Second).Obj(),
					st.MakeUnit("ns/b", "q").Request("cpu", "1").Enqueued(2 * time.Second).Obj(),
					st.MakeUnit("ns/c", "q").Request("cpu", "1").Enqueued(3 * time.Second).Obj(),
					st.MakeUnit("ns/d", "q").Request("cpu", "1").Enqueued(4 * time.Second).Obj(),
				},
			},
			calls: []call{
				{name: "two of four", limit: 2, admitted: []string{"ns/a", "ns/b"}, more: true},
				{
					name:  "the high unit takes the next place",
					do:    upsert(st.MakeUnit("ns/high", "q").Priority(10).Request("cpu", "1").Enqueued(5 * time.Second).Obj()),
					limit: 1, admitted: []string{"ns/high"}, more: true,
				},
				{name: "a limit of 0 admits none", limit: 0, more: true},
				{name: "no limit: what still fits", limit: -1, admitted: []string{"ns/c"}},
				{name: "nothing left to decide", limit: -1},
			},
		},
		{
			name: "the limit falls on queues in serving order and the others keep their turn",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("a").Max("cpu", "4").Obj(), qt.MakeSpec("b").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("a").Obj(), st.MakeQueue("b").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/a1", "a").Request("cpu", "1").Enqueued(1 * time.Second).Obj(),
					st.MakeUnit("ns/a2", "a").Request("cpu", "1").Enqueued(2 * time.Second).Obj(),
					st.MakeUnit("ns/b1", "b").Request("cpu", "1").Enqueued(1 * time.Second).Obj(),
					st.MakeUnit("ns/b2", "b").Request("cpu", "1").Enqueued(2 * time.Second).Obj(),
				},
			},
			calls: []call{
				{name: "a's share rises, b goes next", limit: 2, admitted: []string{"ns/a1", "ns/b1"}, more: true},
				{name: "the rest", limit: 2, admitted: []string{"ns/a2", "ns/b2"}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.world.build(t)
			for i, c := range tc.calls {
				if c.do != nil {
					c.do(s)
				}
				res := s.CycleLimited(st.T0.Add(time.Minute), c.limit)
				if diff := cmp.Diff(c.admitted, summarise(res).Admitted, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("call %d (%s): admitted (-want +got):\n%s", i, c.name, diff)
				}
				if res.More != c.more {
					t.Errorf("call %d (%s): More = %v, want %v", i, c.name, res.More, c.more)
				}
			}
		})
	}
}

// TestRequestsTooLargeToCountAreRefused: a request the engine cannot count
// is refused, never charged as what it wraps around to; a unit already in
// (admitted) that grows past it leaves and gives back what it held.
func TestRequestsTooLargeToCountAreRefused(t *testing.T) {
	s := world{capacity: bigCluster,
		quotas: []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Max("memory", "100Gi").Obj()},
		queues: []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
		units:  []scheduler.Unit{st.MakeUnit("ns/small", "q").Request("cpu", "4").Obj()},
	}.build(t)
	huge := st.MakeUnit("ns/huge", "q").Request("cpu", "1", "memory", "1e40").Obj()
	if err := s.UpsertUnit(huge); !errors.Is(err, quota.ErrRequestTooLarge) {
		t.Fatalf("UpsertUnit(memory 1e40) = %v, want ErrRequestTooLarge", err)
	}
	runSteps(t, s, []step{
		{name: "only the countable unit is admitted", want: outcome{Admitted: []string{"ns/small"}}},
		{
			name: "admitted, it grows past what can be counted: it gives its cpu back",
			do: func(s *scheduler.Scheduler) {
				grown := st.MakeUnit("ns/small", "q").Request("cpu", "1e30").Admitted(0).Obj()
				if err := s.UpsertUnit(grown); !errors.Is(err, quota.ErrRequestTooLarge) {
					t.Errorf("UpsertUnit(cpu 1e30) = %v, want ErrRequestTooLarge", err)
				}
				if err := s.UpsertUnit(st.MakeUnit("ns/next", "q").Request("cpu", "4").Obj()); err != nil {
					t.Fatal(err)
				}
			},
			want: outcome{Admitted: []string{"ns/next"}},
		},
	})
}

// TestAdmittedUnitKeepsItsQueue: an admitted unit whose queue changes (its
// quota label edited before spec.queue pinned it) stays counted in the queue
// that admitted it until it leaves. It used to leave that queue's
// wait-for-pods-running gate shut for good, and its counts wrong.
func TestAdmittedUnitKeepsItsQueue(t *testing.T) {
	s := world{capacity: bigCluster,
		quotas: []quota.Spec{qt.MakeSpec("q1").Max("cpu", "4").Obj(), qt.MakeSpec("q2").Max("cpu", "4").Obj()},
		queues: []scheduler.QueueSpec{st.MakeQueue("q1").WaitForPodsRunning().Obj(), st.MakeQueue("q2").Obj()},
		units:  []scheduler.Unit{st.MakeUnit("ns/a", "q1").Request("cpu", "1").Obj()},
	}.build(t)
	runSteps(t, s, []step{
		{name: "a is admitted in q1", want: outcome{Admitted: []string{"ns/a"}}},
		{
			name: "relabelled to q2 while admitted, then gone: q1's gate opens for b",
			do: func(s *scheduler.Scheduler) {
				upsert(st.MakeUnit("ns/a", "q2").Request("cpu", "1").Admitted(0).Obj())(s)
				s.DeleteUnit("ns/a")
				upsert(st.MakeUnit("ns/b", "q1").Request("cpu", "1").Obj())(s)
			},
			want: outcome{Admitted: []string{"ns/b"}},
		},
	})
	for _, q := range []string{"q1", "q2"} {
		pending, admitted := s.QueueCounts(q)
		want := map[string][2]int{"q1": {0, 1}, "q2": {0, 0}}[q]
		if pending != want[0] || admitted != want[1] {
			t.Errorf("queue %s: %d pending, %d admitted; want %d, %d", q, pending, admitted, want[0], want[1])
		}
	}
}

// TestWaitForPodsRunningDisplacement is Koord-Queue's rule: under
// wait-for-pods-running with enable-queueunit-preemption, a head of higher
// priority evicts the admitted units that do not run yet, so the gate opens
// for it; defaultReclaimProtectTime protects them after their admission.
func TestWaitForPodsRunningDisplacement(t *testing.T) {
	low := st.MakeUnit("ns/low", "q").Priority(1).Request("cpu", "2").Admitted(0).Obj()
	high := st.MakeUnit("ns/high", "q").Priority(9).Request("cpu", "2").Enqueued(time.Minute).Obj()
	gateMessage := "queue q waits for ns/low to be running (wait-for-pods-running)"
	displaced := "preempting 1 unit(s) not yet running for higher-priority unit ns/high (priority 9), which waits in queue q for units admitted but not yet running (wait-for-pods-running): ns/low"
	cases := []struct {
		name    string
		queue   scheduler.QueueSpec
		protect time.Duration
		units   []scheduler.Unit
		steps   []step
	}{
		{
			name:  "a higher-priority head evicts the unit that does not run yet, and is admitted once it is gone",
			queue: st.MakeQueue("q").WaitForPodsRunning().Preemption().Obj(),
			units: []scheduler.Unit{low, high},
			steps: []step{
				{at: time.Minute, want: outcome{Preempted: []string{"ns/high <- ns/low"}, Waits: map[string]string{"ns/high": displaced}}},
				{name: "low is gone", at: time.Minute, do: deleteUnits("ns/low"), want: outcome{Admitted: []string{"ns/high"}}},
			},
		},
		{
			name:  "without enable-queueunit-preemption the head waits for the gate",
			queue: st.MakeQueue("q").WaitForPodsRunning().Obj(),
			units: []scheduler.Unit{low, high},
			steps: []step{{at: time.Minute, want: outcome{Waits: map[string]string{"ns/high": gateMessage}}}},
		},
		{
			name:  "a head of equal priority waits for the gate",
			queue: st.MakeQueue("q").WaitForPodsRunning().Preemption().Obj(),
			units: []scheduler.Unit{low, st.MakeUnit("ns/high", "q").Priority(1).Request("cpu", "2").Enqueued(time.Minute).Obj()},
			steps: []step{{at: time.Minute, want: outcome{Waits: map[string]string{"ns/high": gateMessage}}}},
		},
		{
			name:  "a head that would not fit once they are gone evicts nobody",
			queue: st.MakeQueue("q").WaitForPodsRunning().Preemption().Obj(),
			units: []scheduler.Unit{low, st.MakeUnit("ns/high", "q").Priority(9).Request("cpu", "5").Enqueued(time.Minute).Obj()},
			steps: []step{{at: time.Minute, want: outcome{Waits: map[string]string{"ns/high": gateMessage}}}},
		},
		{
			name:    "defaultReclaimProtectTime protects a unit admitted recently; the head is tried again when it ends",
			queue:   st.MakeQueue("q").WaitForPodsRunning().Preemption().Obj(),
			protect: 5 * time.Minute,
			units:   []scheduler.Unit{low, high},
			steps: []step{
				{at: time.Minute, want: outcome{Waits: map[string]string{"ns/high": gateMessage}}},
				{name: "protection over", at: 5 * time.Minute, want: outcome{Preempted: []string{"ns/high <- ns/low"}, Waits: map[string]string{"ns/high": displaced}}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{tc.queue},
				units:    tc.units,
			}.build(t)
			s.SetReclaimProtection(tc.protect)
			runSteps(t, s, tc.steps)
		})
	}
}

// TestPreemptorWaitsForTheGateWithItsTurn: under wait-for-pods-running, a
// preemptor whose victims have left while its queue's gate is shut keeps
// its turn and is admitted once the gate opens, on the capacity it
// reclaimed, without evicting anyone else.
func TestPreemptorWaitsForTheGateWithItsTurn(t *testing.T) {
	s := world{capacity: qt.Res("cpu", "4"),
		quotas: []quota.Spec{qt.MakeSpec("a").Min("cpu", "3").Max("cpu", "4").Obj(), qt.MakeSpec("b").Max("cpu", "4").Obj()},
		queues: []scheduler.QueueSpec{st.MakeQueue("a").WaitForPodsRunning().Obj(), st.MakeQueue("b").Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/a1", "a").Request("cpu", "1").Admitted(0).Running().Obj(),
			st.MakeUnit("ns/b1", "b").Request("cpu", "2").Admitted(0).Running().Obj(),
			st.MakeUnit("ns/b2", "b").Request("cpu", "1").Admitted(time.Second).Running().Obj(),
		},
	}.build(t)
	runSteps(t, s, []step{
		{
			name:      "a2 waits for quota to free before it reclaims",
			do:        upsert(st.MakeUnit("ns/a2", "a").Request("cpu", "2").Enqueued(2 * time.Second).Obj()),
			skipWaits: true,
		},
		{name: "a2 reclaims a's min from b", at: delay, want: outcome{Preempted: []string{"ns/a2 <- ns/b1"}}, skipWaits: true},
		{
			name: "a1's pods stop running: a's gate shuts; then b1 leaves, and a3, of higher priority, arrives",
			at:   delay,
			do: func(s *scheduler.Scheduler) {
				upsert(st.MakeUnit("ns/a1", "a").Request("cpu", "1").Admitted(0).Obj())(s)
				s.DeleteUnit("ns/b1")
				upsert(st.MakeUnit("ns/a3", "a").Priority(5).Request("cpu", "2").Enqueued(3 * time.Second).Obj())(s)
			},
			skipWaits: true,
		},
		{
			name: "a1 runs again: a2 is admitted on what it reclaimed, nobody else evicted",
			at:   delay,
			do:   upsert(st.MakeUnit("ns/a1", "a").Request("cpu", "1").Admitted(0).Running().Obj()),
			want: outcome{Admitted: []string{"ns/a2"}}, skipWaits: true,
		},
	})
	// No reservation left behind: a holds a1 and a2, b holds b2.
	for q, want := range map[string]string{"a": "3", "b": "1"} {
		if used := s.Quotas().Used(q); used.Cpu().Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("quota %s uses %s cpu, want %s", q, used.Cpu(), want)
		}
	}
}

// TestUnitsRestoredBeforeTheirQueue: after a restart, informers deliver
// units before their Queue. The queue, once it comes, counts the admitted
// units it already has and gates on those not yet running; its counts
// never go negative.
func TestUnitsRestoredBeforeTheirQueue(t *testing.T) {
	s := scheduler.New()
	s.SetClusterCapacity(bigCluster)
	s.UpsertQuota(qt.MakeSpec("q").Max("cpu", "4").Obj())
	upsert(
		st.MakeUnit("ns/starting", "q").Request("cpu", "1").Admitted(0).Obj(),
		st.MakeUnit("ns/waiting", "q").Request("cpu", "1").Enqueued(time.Second).Obj(),
	)(s)
	s.UpsertQueue(st.MakeQueue("q").WaitForPodsRunning().Obj())
	counts := func(wantPending, wantAdmitted int) {
		t.Helper()
		if pending, admitted := s.QueueCounts("q"); pending != wantPending || admitted != wantAdmitted {
			t.Errorf("queue q: %d pending, %d admitted; want %d, %d", pending, admitted, wantPending, wantAdmitted)
		}
	}
	counts(1, 1)
	runSteps(t, s, []step{
		{name: "the gate is shut by the restored unit that does not run yet", want: outcome{Waits: map[string]string{
			"ns/waiting": "queue q waits for ns/starting to be running (wait-for-pods-running)"}}},
		{name: "it runs: the gate opens", do: upsert(st.MakeUnit("ns/starting", "q").Request("cpu", "1").Admitted(0).Running().Obj()),
			want: outcome{Admitted: []string{"ns/waiting"}}},
	})
	s.DeleteUnit("ns/starting")
	counts(0, 1)
}

// TestAdmittedUnitGrowsOnlyByAnAdmission: an admitted unit reported bigger
// (its spec resized while it held quota) keeps the charge it was admitted
// with, since no fit check made room for more; one reported smaller gives
// back what it no longer asks for.
func TestAdmittedUnitGrowsOnlyByAnAdmission(t *testing.T) {
	s := world{capacity: bigCluster,
		quotas: []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
		queues: []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
		units:  []scheduler.Unit{st.MakeUnit("ns/a", "q").Request("cpu", "2").Admitted(0).Obj()},
	}.build(t)
	used := func() string {
		u := s.Quotas().Used("q")
		return u.Cpu().String()
	}
	runSteps(t, s, []step{
		{
			name: "a, admitted at 2 cpu, reported at 6: still charged 2, so b's 2 fit beside it",
			do: func(s *scheduler.Scheduler) {
				upsert(st.MakeUnit("ns/a", "q").Request("cpu", "6").Admitted(0).Obj())(s)
				upsert(st.MakeUnit("ns/b", "q").Request("cpu", "2").Obj())(s)
			},
			want: outcome{Admitted: []string{"ns/b"}},
		},
	})
	if got := used(); got != "4" {
		t.Errorf("quota q (max 4) uses %s cpu after a grew, want 4", got)
	}
	upsert(st.MakeUnit("ns/a", "q").Request("cpu", "1").Admitted(0).Obj())(s)
	if got := used(); got != "3" {
		t.Errorf("quota q uses %s cpu after a shrank to 1, want 3", got)
	}
}

func TestAPreemptionEndsWhenItsPreemptorLeavesItsQueue(t *testing.T) {
	// An idle cluster must admit what fits: a preemptor whose queue is
	// gone can no longer be admitted, so what it asks is held for nobody.
	w := world{
		capacity: qt.Res("cpu", "4"),
		quotas: []quota.Spec{
			qt.MakeSpec("q").Max("cpu", "4").Obj(),
			qt.MakeSpec("o").Max("cpu", "4").Obj(),
		},
		queues: []scheduler.QueueSpec{st.MakeQueue("q").Preemption().Obj(), st.MakeQueue("o").Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/victim", "q").Priority(1).Request("cpu", "4").Admitted(0).Obj(),
			st.MakeUnit("ns/urgent", "q").Priority(9).Request("cpu", "4").Obj(),
		},
	}
	leaves := map[string]func(s *scheduler.Scheduler){
		"its queue is deleted":                    func(s *scheduler.Scheduler) { s.DeleteQueue("q") },
		"it moves to a queue that does not exist": upsert(st.MakeUnit("ns/urgent", "gone").Priority(9).Request("cpu", "4").Obj()),
	}
	for name, leave := range leaves {
		t.Run(name, func(t *testing.T) {
			runSteps(t, w.build(t), []step{
				{want: outcome{Waits: map[string]string{"ns/urgent": waitsToPreempt("q")}}},
				{at: delay, want: outcome{Preempted: []string{"ns/urgent <- ns/victim"}}, skipWaits: true},
				{
					name: "the preemptor leaves its queue while its victim leaves",
					at:   delay,
					do: func(s *scheduler.Scheduler) {
						leave(s)
						s.DeleteUnit("ns/victim")
					},
					want: outcome{},
				},
				{
					name: "a unit of another quota takes the idle cluster",
					at:   delay,
					do:   upsert(st.MakeUnit("ns/other", "o").Request("cpu", "4").Obj()),
					want: outcome{Admitted: []string{"ns/other"}},
				},
				{
					name: "back in its queue, the preemptor waits for the cluster",
					at:   2 * delay,
					do: func(s *scheduler.Scheduler) {
						s.UpsertQueue(st.MakeQueue("q").Preemption().Obj())
						upsert(st.MakeUnit("ns/urgent", "q").Priority(9).Request("cpu", "4").Obj())(s)
					},
					want: outcome{Waits: map[string]string{"ns/urgent": "cluster: cpu 4 used of capacity 4, request 4"}},
				},
			})
		})
	}
}
