package scheduler_test

import (
	"testing"
	"time"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// TestQueuesOfEqualShareGoByTheirHeads: the line's order is smallest
// dominant share, then Queue priority, then the priority of the unit each
// queue's policy serves first (its head), then the earlier head, then the
// queue's name. Queue "a" comes first by name in every case.
func TestQueuesOfEqualShareGoByTheirHeads(t *testing.T) {
	// Two queues under the cluster, room for one unit of 1 cpu.
	two := func(a, b scheduler.QueueSpec, units ...scheduler.Unit) world {
		return world{
			capacity: qt.Res("cpu", "1"),
			quotas:   []quota.Spec{qt.MakeSpec("a").Obj(), qt.MakeSpec("b").Obj()},
			queues:   []scheduler.QueueSpec{a, b},
			units:    units,
		}
	}
	cpu := func(key, queue string, prio int32, enqueued time.Duration) scheduler.Unit {
		return st.MakeUnit(key, queue).Priority(prio).Enqueued(enqueued).Request("cpu", "1").Obj()
	}
	// Units that ask for nothing leave every share at 0, so a queue that
	// admits goes back in line at the same share.
	nothing := func(key, queue string, prio int32, enqueued time.Duration) scheduler.Unit {
		return st.MakeUnit(key, queue).Priority(prio).Enqueued(enqueued).Obj()
	}
	intelligent := st.MakeQueue("a").Policy(schedulingv1alpha1.QueuePolicyIntelligent).Obj()
	cases := []struct {
		name  string
		world world
		steps []step
	}{
		{
			name: "among queues of equal share the one whose head has the higher priority goes first",
			world: two(st.MakeQueue("a").Obj(), st.MakeQueue("b").Obj(),
				cpu("ns/a1", "a", 1, 0), cpu("ns/b1", "b", 5, time.Second)),
			steps: []step{{skipWaits: true, want: outcome{Admitted: []string{"ns/b1"}}}},
		},
		{
			name: "then the earlier head",
			world: two(st.MakeQueue("a").Obj(), st.MakeQueue("b").Obj(),
				cpu("ns/a1", "a", 5, 2*time.Second), cpu("ns/b1", "b", 5, time.Second)),
			steps: []step{{skipWaits: true, want: outcome{Admitted: []string{"ns/b1"}}}},
		},
		{
			name: "then the name",
			world: two(st.MakeQueue("a").Obj(), st.MakeQueue("b").Obj(),
				cpu("ns/a1", "a", 5, time.Second), cpu("ns/b1", "b", 5, time.Second)),
			steps: []step{{skipWaits: true, want: outcome{Admitted: []string{"ns/a1"}}}},
		},
		{
			name: "the queue's priority outranks its head's",
			world: two(st.MakeQueue("a").Priority(2000).Obj(), st.MakeQueue("b").Obj(),
				cpu("ns/a1", "a", 0, time.Second), cpu("ns/b1", "b", 9, 0)),
			steps: []step{{skipWaits: true, want: outcome{Admitted: []string{"ns/a1"}}}},
		},
		{
			name: "a smaller share outranks the head",
			world: world{
				capacity: qt.Res("cpu", "2"),
				quotas:   []quota.Spec{qt.MakeSpec("a").Obj(), qt.MakeSpec("b").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("a").Obj(), st.MakeQueue("b").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/a0", "a").Request("cpu", "1").Admitted(0).Running().Obj(),
					cpu("ns/a1", "a", 9, 0), cpu("ns/b1", "b", 0, time.Second),
				},
			},
			steps: []step{{skipWaits: true, want: outcome{Admitted: []string{"ns/b1"}}}},
		},
		{
			name: "a queue whose head is admitted goes back in line by its next head",
			world: two(st.MakeQueue("a").Obj(), st.MakeQueue("b").Obj(),
				nothing("ns/a1", "a", 9, 0), nothing("ns/a2", "a", 0, 0), nothing("ns/b1", "b", 5, 0)),
			steps: []step{{want: outcome{Admitted: []string{"ns/a1", "ns/b1", "ns/a2"}}}},
		},
		{
			name: "an Intelligent queue's low band is ranked by its round-robin head, not its first unit",
			world: two(intelligent, st.MakeQueue("b").Obj(),
				cpu("ns/x", "a", 3, 5*time.Second), cpu("ns/z", "a", 2, 6*time.Second)),
			steps: []step{
				{name: "x taken: the round-robin goes on after it", skipWaits: true, want: outcome{Admitted: []string{"ns/x"}}},
				{
					// v comes before x in a's order, so a serves z next
					// (priority 2, enqueued at 6s), against b's w (priority 2,
					// enqueued at 2s).
					name: "x finishes; v joins a, w joins b",
					do: func(s *scheduler.Scheduler) {
						deleteUnits("ns/x")(s)
						upsert(cpu("ns/v", "a", 3, time.Second), cpu("ns/w", "b", 2, 2*time.Second))(s)
					},
					skipWaits: true, want: outcome{Admitted: []string{"ns/w"}},
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
