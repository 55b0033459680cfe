package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// fakePlacer refuses the units it is told to, with a reason, and
// records whom it was asked about.
type fakePlacer struct {
	refuse map[string]string
	asked  []string
	// futile: the units whose victims' going would free them no room,
	// and what it would not free.
	futile map[string]string
	// probed: "unit <- victim, victim" for each PlaceWithout.
	probed []string
}

func (p *fakePlacer) Place(key string, _ map[string]int32) (string, bool) {
	p.asked = append(p.asked, key)
	if why, ok := p.refuse[key]; ok {
		return why, false
	}
	return "", true
}

func (p *fakePlacer) PlaceWithout(key string, victims []string) (string, bool) {
	p.probed = append(p.probed, key+" <- "+strings.Join(victims, ", "))
	if why, ok := p.futile[key]; ok {
		return why, false
	}
	return "", true
}

const noRack = "needs 8 × 1 cpu within one `rack`; the largest free one has 6"

func TestUnitsThatFitTheirQuotaButNotTheNodes(t *testing.T) {
	team := qt.MakeSpec("team").Max("cpu", "100").Obj()
	big := st.MakeUnit("ns/big", "team").Request("cpu", "8").Obj()
	small := st.MakeUnit("ns/small", "team").Request("cpu", "2").Enqueued(time.Second).Obj()
	plain := st.MakeUnit("ns/plain", "team").Request("cpu", "2").Enqueued(2 * time.Second).Obj()
	cases := map[string]struct {
		queue     scheduler.QueueSpec
		units     []scheduler.Unit
		refuse    map[string]string
		want      outcome
		wantAsked []string
		wantOrder []string
	}{
		"a unit the nodes cannot hold waits saying why, and the units behind it are admitted": {
			queue:     st.MakeQueue("team").Obj(),
			units:     []scheduler.Unit{big, small, plain},
			refuse:    map[string]string{"ns/big": noRack},
			want:      outcome{Admitted: []string{"ns/small", "ns/plain"}, Waits: map[string]string{"ns/big": noRack}},
			wantAsked: []string{"ns/big", "ns/small", "ns/plain"},
			wantOrder: []string{"ns/big"},
		},
		"Block: nothing behind it is admitted": {
			queue:     st.MakeQueue("team").Policy(schedulingv1alpha1.QueuePolicyBlock).Obj(),
			units:     []scheduler.Unit{big, small, plain},
			refuse:    map[string]string{"ns/big": noRack},
			want:      outcome{Waits: map[string]string{"ns/big": noRack}},
			wantAsked: []string{"ns/big"},
			wantOrder: []string{"ns/big", "ns/small", "ns/plain"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := world{capacity: bigCluster, quotas: []quota.Spec{team}, queues: []scheduler.QueueSpec{tc.queue}, units: tc.units}.build(t)
			p := &fakePlacer{refuse: tc.refuse}
			s.SetPlacer(p)
			got := summarise(s.Cycle(st.T0))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("cycle (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAsked, p.asked, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("asked the placer about (-want +got):\n%s", diff)
			}
			var order []string
			for _, u := range s.Pending("team", 0) {
				order = append(order, u.Key)
			}
			if diff := cmp.Diff(tc.wantOrder, order, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("waiting after the cycle (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAUnitTheNodesCouldNotHoldIsTriedAgainWhenTheyMayHaveRoom(t *testing.T) {
	s := world{capacity: bigCluster, quotas: []quota.Spec{qt.MakeSpec("team").Max("cpu", "100").Obj()},
		queues: []scheduler.QueueSpec{st.MakeQueue("team").Obj()},
		units:  []scheduler.Unit{st.MakeUnit("ns/big", "team").Request("cpu", "8").Obj()}}.build(t)
	p := &fakePlacer{refuse: map[string]string{"ns/big": noRack}}
	s.SetPlacer(p)
	if got := summarise(s.Cycle(st.T0)); len(got.Admitted) != 0 {
		t.Fatalf("admitted %v, which the nodes cannot hold", got.Admitted)
	}
	if got := s.WaitReason("ns/big"); got != noRack {
		t.Errorf("wait reason %q, want %q", got, noRack)
	}
	p.asked = nil
	if got := summarise(s.Cycle(st.T0.Add(time.Second))); len(got.Admitted) != 0 || len(p.asked) != 0 {
		t.Fatalf("with nothing changed, admitted %v and asked about %v", got.Admitted, p.asked)
	}
	delete(p.refuse, "ns/big")
	s.WakeUnplaced()
	if diff := cmp.Diff(outcome{Admitted: []string{"ns/big"}}, summarise(s.Cycle(st.T0.Add(2*time.Second))), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("after WakeUnplaced (-want +got):\n%s", diff)
	}
}

// TestAQueuePassesOverBoundedlyManyUnitsTheNodesCannotHold: a tenant's
// many units that fit the quota and never the nodes cost a cycle at most
// 8 placements in their queue.
func TestAQueuePassesOverBoundedlyManyUnitsTheNodesCannotHold(t *testing.T) {
	var units []scheduler.Unit
	refuse := map[string]string{}
	for i := range 50 {
		u := st.MakeUnit("ns/u"+string(rune('a'+i/26))+string(rune('a'+i%26)), "team").Request("cpu", "1").Enqueued(time.Duration(i) * time.Second).Obj()
		units = append(units, u)
		refuse[u.Key] = noRack
	}
	s := world{capacity: bigCluster, quotas: []quota.Spec{qt.MakeSpec("team").Max("cpu", "100").Obj()},
		queues: []scheduler.QueueSpec{st.MakeQueue("team").Obj()}, units: units}.build(t)
	p := &fakePlacer{refuse: refuse}
	s.SetPlacer(p)
	s.Cycle(st.T0)
	if len(p.asked) != 9 {
		t.Errorf("asked the placer %d times in one cycle, want 9 (8 set aside, the 9th parks the queue)", len(p.asked))
	}
	if got := s.Position(units[0].Key); got != 1 {
		t.Errorf("the first unit is at position %d after the cycle, want 1", got)
	}
}

// roomAgain: the nodes have room for every unit, and the scheduler is
// told they may.
func roomAgain(p *fakePlacer) func(*scheduler.Scheduler) {
	return func(s *scheduler.Scheduler) {
		clear(p.refuse)
		clear(p.futile)
		s.WakeUnplaced()
	}
}

const noRackFreed = "no `rack` with room for 8 × 1 cpu (the largest would have room for 6)"

// TestVictimsAreEvictedOnlyWhenTheyFreeRoomOnTheNodes: victims are chosen
// for quota; a head whose victims' going would free it no room on the
// nodes (the Placer's PlaceWithout) evicts nobody and waits, saying so,
// until the Placer's answer may have changed (WakeUnplaced).
func TestVictimsAreEvictedOnlyWhenTheyFreeRoomOnTheNodes(t *testing.T) {
	high := st.MakeUnit("ns/high", "q").Priority(9).Request("cpu", "4").Enqueued(time.Second).Obj()
	cases := []struct {
		name       string
		world      world
		futile     map[string]string
		steps      func(p *fakePlacer) []step
		wantProbed []string
	}{
		{
			name:   "reclaim that frees no rack evicts nobody; once the nodes may have room it reclaims",
			world:  lentCluster("q", "2"),
			futile: map[string]string{"ns/p": noRackFreed},
			steps: func(p *fakePlacer) []step {
				return []step{
					{want: outcome{Waits: map[string]string{"ns/p": "evicting 2 unit(s) would free " + noRackFreed}}},
					{name: "past its preemption delay, still nobody", at: delay},
					{name: "the nodes may have room: it waits out its delay", at: delay, do: roomAgain(p),
						want: outcome{Waits: map[string]string{"ns/p": waitsToReclaim("q")}}},
					{at: 2 * delay, want: outcome{Preempted: []string{"ns/p <- ns/o7, ns/o6"}}, skipWaits: true},
				}
			},
			wantProbed: []string{"ns/p <- ns/o7, ns/o6", "ns/p <- ns/o7, ns/o6", "ns/p <- ns/o7, ns/o6"},
		},
		{
			name:   "in-queue preemption that frees no rack evicts nobody",
			world:  inQueue(st.MakeQueue("q"), low("ns/low", "4"), high),
			futile: map[string]string{"ns/high": noRackFreed},
			steps: func(*fakePlacer) []step {
				return []step{
					{want: outcome{Waits: map[string]string{"ns/high": "evicting 1 unit(s) would free " + noRackFreed}}},
					{name: "past its preemption delay, still nobody", at: delay},
				}
			},
			wantProbed: []string{"ns/high <- ns/low"},
		},
		{
			name:  "a preemption that frees room goes ahead",
			world: inQueue(st.MakeQueue("q"), low("ns/low", "4"), high),
			steps: func(*fakePlacer) []step {
				return []step{
					{want: outcome{Waits: map[string]string{"ns/high": waitsToPreempt("q")}}},
					{at: delay, want: outcome{Preempted: []string{"ns/high <- ns/low"}}, skipWaits: true},
				}
			},
			wantProbed: []string{"ns/high <- ns/low", "ns/high <- ns/low"},
		},
		{
			name: "displacing units not yet running that free no rack evicts nobody",
			world: world{capacity: bigCluster, quotas: []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues: []scheduler.QueueSpec{st.MakeQueue("q").WaitForPodsRunning().Preemption().Obj()},
				units: []scheduler.Unit{st.MakeUnit("ns/low", "q").Priority(1).Request("cpu", "2").Admitted(0).Obj(),
					st.MakeUnit("ns/high", "q").Priority(9).Request("cpu", "2").Enqueued(time.Minute).Obj()}},
			futile: map[string]string{"ns/high": noRackFreed},
			steps: func(p *fakePlacer) []step {
				return []step{
					{at: time.Minute, want: outcome{Waits: map[string]string{"ns/high": "evicting 1 unit(s) not yet running would free " + noRackFreed}}},
					{name: "the nodes may have room: it displaces low", at: time.Minute, do: roomAgain(p),
						want: outcome{Preempted: []string{"ns/high <- ns/low"}}, skipWaits: true},
				}
			},
			wantProbed: []string{"ns/high <- ns/low", "ns/high <- ns/low"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.world.build(t)
			p := &fakePlacer{futile: tc.futile}
			s.SetPlacer(p)
			runSteps(t, s, tc.steps(p))
			if diff := cmp.Diff(tc.wantProbed, p.probed, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("asked the placer, as if victims were gone, about (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnitsAdmittedOutsideTheirTurnAskThePlacer: a preemptor whose
// victims are gone, and a patient head what freed covers, are admitted
// only where the Placer finds them room; refused, they wait as in their
// turn, their preemption or patience over, and are admitted once the
// nodes have room.
func TestUnitsAdmittedOutsideTheirTurnAskThePlacer(t *testing.T) {
	high := st.MakeUnit("ns/high", "q").Priority(9).Request("cpu", "4").Enqueued(time.Second).Obj()
	// lowGoesWithNoRack: low is gone, and the nodes have no rack for high.
	lowGoesWithNoRack := func(p *fakePlacer) func(*scheduler.Scheduler) {
		return func(s *scheduler.Scheduler) {
			p.refuse = map[string]string{"ns/high": noRack}
			s.DeleteUnit("ns/low")
		}
	}
	cases := []struct {
		name      string
		steps     func(p *fakePlacer) []step
		wantAsked []string
	}{
		{
			name: "a preemptor whose victims are gone",
			steps: func(p *fakePlacer) []step {
				return []step{
					{skipWaits: true},
					{at: delay, want: outcome{Preempted: []string{"ns/high <- ns/low"}}, skipWaits: true},
					{name: "low is gone: the nodes have no rack for high", at: delay, do: lowGoesWithNoRack(p),
						want: outcome{Waits: map[string]string{"ns/high": noRack}}},
					{name: "the nodes have room", at: 2 * delay, do: roomAgain(p), want: outcome{Admitted: []string{"ns/high"}}},
				}
			},
			// Asked as nominated, again in its queue's turn, and when woken.
			wantAsked: []string{"ns/high", "ns/high", "ns/high"},
		},
		{
			name: "a patient head what freed covers",
			steps: func(p *fakePlacer) []step {
				return []step{
					{want: outcome{Waits: map[string]string{"ns/high": waitsToPreempt("q")}}},
					{name: "low ends within the delay: the nodes have no rack for high", at: time.Second, do: lowGoesWithNoRack(p),
						want: outcome{Waits: map[string]string{"ns/high": noRack}}},
					{name: "nothing to decide when the delay ends", at: delay},
					{name: "the nodes have room", at: delay, do: roomAgain(p), want: outcome{Admitted: []string{"ns/high"}}},
				}
			},
			// Asked as the patient head, again in its queue's turn, and when woken.
			wantAsked: []string{"ns/high", "ns/high", "ns/high"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := inQueue(st.MakeQueue("q"), low("ns/low", "4"), high).build(t)
			p := &fakePlacer{}
			s.SetPlacer(p)
			runSteps(t, s, tc.steps(p))
			if diff := cmp.Diff(tc.wantAsked, p.asked, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("asked the placer about (-want +got):\n%s", diff)
			}
		})
	}
}
