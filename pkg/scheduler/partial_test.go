package scheduler_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// TestPartialAdmission: a unit whose pod sets have a minCount is admitted
// with as many pods as fit when it does not fit whole (Kueue's partial
// admission), before anyone is preempted for it.
func TestPartialAdmission(t *testing.T) {
	q := func(maxCPU string) world {
		return world{
			capacity: bigCluster,
			quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", maxCPU).Obj()},
			queues:   []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
		}
	}
	with := func(w world, units ...scheduler.Unit) world { w.units = units; return w }
	cases := []struct {
		name  string
		world world
		steps []step
	}{
		{
			name:  "a unit that fits whole is admitted whole",
			world: with(q("8"), st.MakeUnit("ns/job", "q").PodSet("main", 4, 2, "cpu", "1").Obj()),
			steps: []step{{want: outcome{Admitted: []string{"ns/job"}}}},
		},
		{
			name:  "a unit that does not fit whole gets the largest count that fits",
			world: with(q("3"), st.MakeUnit("ns/job", "q").PodSet("main", 4, 2, "cpu", "1").Obj()),
			steps: []step{{want: outcome{Admitted: []string{"ns/job main=3"}}}},
		},
		{
			name: "the count that fits stops at minCount: below it the unit waits, saying what it could start with",
			world: with(q("4"),
				st.MakeUnit("ns/running", "q").Request("cpu", "3").Admitted(0).Obj(),
				st.MakeUnit("ns/job", "q").PodSet("main", 4, 2, "cpu", "1").Obj()),
			steps: []step{
				{want: outcome{Waits: map[string]string{
					"ns/job": "q: cpu 3 used of max 4, request 2 (partial admission: it can start with 2 of 4 pods of pod set main)",
				}}},
				{name: "a core frees: now 2 pods fit", do: upsert(st.MakeUnit("ns/running", "q").Request("cpu", "2").Admitted(0).Obj()),
					want: outcome{Admitted: []string{"ns/job main=2"}}},
			},
		},
		{
			name: "a unit without minCount is admitted whole or waits, as before",
			world: with(q("4"),
				st.MakeUnit("ns/running", "q").Request("cpu", "1").Admitted(0).Obj(),
				st.MakeUnit("ns/pod-sets", "q").PodSet("main", 4, 0, "cpu", "1").Obj(),
				st.MakeUnit("ns/request", "q").Request("cpu", "4").Enqueued(1).Obj()),
			steps: []step{
				{want: outcome{Waits: map[string]string{"ns/pod-sets": "q: cpu 1 used of max 4, request 4"}}},
				{name: "the head leaves; the next waits the same way", do: deleteUnits("ns/pod-sets"),
					want: outcome{Waits: map[string]string{"ns/request": "q: cpu 1 used of max 4, request 4"}}},
			},
		},
		{
			name: "pod sets shrink in proportion to what each can give up; one without minCount keeps all its pods",
			world: with(q("10"), st.MakeUnit("ns/job", "q").
				PodSet("launcher", 1, 0, "cpu", "1").
				PodSet("ps", 4, 2, "cpu", "1").     // gives up to 2
				PodSet("worker", 8, 4, "cpu", "1"). // gives up to 4
				Obj()),
			// 13 pods, 10 fit: 3 of the 6 that may go, half of each set's.
			steps: []step{{want: outcome{Admitted: []string{"ns/job ps=3, worker=6"}}}},
		},
		{
			name: "counts fit every resource: the tightest decides",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "8", "memory", "6Gi").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
				units:    []scheduler.Unit{st.MakeUnit("ns/job", "q").PodSet("main", 6, 1, "cpu", "1", "memory", "2Gi").Obj()},
			},
			steps: []step{{want: outcome{Admitted: []string{"ns/job main=3"}}}},
		},
		{
			name: "a partial admission that needs no preemption is preferred to preempting for the whole count",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Preemption().PreemptRunning().Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/low", "q").Request("cpu", "2").Admitted(0).Running().Obj(),
					st.MakeUnit("ns/high", "q").Priority(5).PodSet("main", 4, 2, "cpu", "1").Obj(),
				},
			},
			steps: []step{{want: outcome{Admitted: []string{"ns/high main=2"}}}},
		},
		{
			name: "a unit that does not fit even at minCount preempts for its whole count, as before, and is admitted whole",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Preemption().PreemptRunning().Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/low", "q").Request("cpu", "3").Admitted(0).Running().Obj(),
					st.MakeUnit("ns/high", "q").Priority(5).PodSet("main", 4, 2, "cpu", "1").Obj(),
				},
			},
			steps: []step{
				{name: "it first waits for quota to free", want: outcome{Waits: map[string]string{"ns/high": waitsToPreempt("q")}}},
				{at: delay, want: outcome{
					Preempted: []string{"ns/high <- ns/low"},
					Waits:     map[string]string{"ns/high": "preempting 1 unit(s) for higher-priority unit ns/high (priority 5) of quota q: ns/low"},
				}},
				{name: "the victim's pods are gone", at: delay, do: deleteUnits("ns/low"), want: outcome{Admitted: []string{"ns/high"}}},
			},
		},
		{
			name: "a unit that fits only partially heads a Block queue and is admitted, not blocked",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "3").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Policy(schedulingv1alpha1.QueuePolicyBlock).Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/job", "q").Priority(5).PodSet("main", 4, 2, "cpu", "1").Obj(),
					st.MakeUnit("ns/next", "q").Request("cpu", "1").Obj(),
				},
			},
			steps: []step{{want: outcome{Admitted: []string{"ns/job main=3"}, Waits: map[string]string{"ns/next": "q: cpu 3 used of max 3, request 1"}}}},
		},
		{
			name: "behind a head that does not fit even partially, a Priority queue admits a later unit partially",
			world: with(q("3"),
				st.MakeUnit("ns/big", "q").Priority(5).Request("cpu", "8").Obj(),
				st.MakeUnit("ns/job", "q").PodSet("main", 4, 2, "cpu", "1").Obj()),
			steps: []step{{want: outcome{
				Admitted: []string{"ns/job main=3"},
				Waits:    map[string]string{"ns/big": "request cpu 8 exceeds max 3 of q: it can never be admitted"},
			}}},
		},
		{
			name: "a unit asking more than the max can start with fewer pods: it is not told it never fits",
			world: with(q("3"),
				st.MakeUnit("ns/running", "q").Request("cpu", "2").Admitted(0).Obj(),
				st.MakeUnit("ns/job", "q").PodSet("main", 6, 2, "cpu", "1").Obj()),
			steps: []step{{want: outcome{Waits: map[string]string{
				"ns/job": "q: cpu 2 used of max 3, request 2 (partial admission: it can start with 2 of 6 pods of pod set main)",
			}}}},
		},
		{
			name:  "an admission the controller could not write is undone: the unit waits whole again and is decided afresh",
			world: with(q("3"), st.MakeUnit("ns/job", "q").PodSet("main", 4, 2, "cpu", "1").Obj()),
			steps: []step{
				{want: outcome{Admitted: []string{"ns/job main=3"}}},
				{name: "forgotten, and meanwhile a core was taken",
					do: func(s *scheduler.Scheduler) {
						s.ForgetAdmission("ns/job")
						upsert(st.MakeUnit("ns/other", "q").Request("cpu", "1").Admitted(0).Obj())(s)
					},
					want: outcome{Admitted: []string{"ns/job main=2"}}},
			},
		},
		{
			name: "pod sets that do not add up to the request: the unit is admitted whole or not at all",
			world: with(q("6"),
				st.MakeUnit("ns/running", "q").Request("cpu", "2").Admitted(0).Obj(),
				func() scheduler.Unit {
					u := st.MakeUnit("ns/job", "q").PodSet("main", 4, 2, "cpu", "1").Obj()
					u.Request = qt.Res("cpu", "5")
					return u
				}()),
			steps: []step{{want: outcome{Waits: map[string]string{"ns/job": "q: cpu 2 used of max 6, request 5"}}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, tc.world.build(t), tc.steps)
		})
	}
}

// TestPartialAdmissionCharges: a partial admission holds what its admitted
// pods ask for, from the decision on and after a restart (a unit restored
// admitted with Partial), and gives that back when it leaves.
func TestPartialAdmissionCharges(t *testing.T) {
	job := st.MakeUnit("ns/job", "q").PodSet("main", 4, 2, "cpu", "1", "memory", "1Gi")
	cases := []struct {
		name     string
		unit     scheduler.Unit
		wantUsed corev1.ResourceList
		// wantAfterUpdate is the usage after the unit is upserted again as
		// admitted with its partial counts, as the controller does once its
		// admission is written.
		wantAfterUpdate corev1.ResourceList
	}{
		{
			name:            "decided partially: charged for the pods admitted",
			unit:            job.Obj(),
			wantUsed:        qt.Res("cpu", "3", "memory", "3Gi"),
			wantAfterUpdate: qt.Res("cpu", "3", "memory", "3Gi"),
		},
		{
			name:            "restored with its partial counts: charged the same",
			unit:            st.MakeUnit("ns/job", "q").PodSet("main", 4, 2, "cpu", "1", "memory", "1Gi").Admitted(0).Partial("main", 3).Obj(),
			wantUsed:        qt.Res("cpu", "3", "memory", "3Gi"),
			wantAfterUpdate: qt.Res("cpu", "3", "memory", "3Gi"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := world{capacity: bigCluster, quotas: []quota.Spec{qt.MakeSpec("q").Max("cpu", "3").Obj()},
				queues: []scheduler.QueueSpec{st.MakeQueue("q").Obj()}, units: []scheduler.Unit{tc.unit}}.build(t)
			s.Cycle(st.T0)
			used := func() corev1.ResourceList { return s.Quotas().Used("q") }
			if diff := cmp.Diff(tc.wantUsed, used(), qtEquate); diff != "" {
				t.Errorf("used after the cycle (-want +got):\n%s", diff)
			}
			admitted := st.MakeUnit("ns/job", "q").PodSet("main", 4, 2, "cpu", "1", "memory", "1Gi").Admitted(0).Partial("main", 3).Obj()
			if err := s.UpsertUnit(admitted); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantAfterUpdate, used(), qtEquate); diff != "" {
				t.Errorf("used once the admission is seen written (-want +got):\n%s", diff)
			}
			s.DeleteUnit("ns/job")
			if diff := cmp.Diff(corev1.ResourceList{}, used(), qtEquate); diff != "" {
				t.Errorf("used once it left (-want +got):\n%s", diff)
			}
		})
	}
}

// qtEquate compares resource lists by amount.
var qtEquate = cmp.Comparer(resources.Equal)
