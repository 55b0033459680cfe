package scheduler_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// TestSnapshotStandsWhereTheSchedulerStands: a new scheduler fed a
// snapshot, taken mid-run of the simulation, holds the same usage in every
// quota and has admitted the same units.
func TestSnapshotStandsWhereTheSchedulerStands(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		sm := runSim(t, seed, simConfig{}, 60)
		snap := sm.s.Snapshot()
		fresh := scheduler.New()
		fresh.SetClusterCapacity(snap.Capacity)
		fresh.UpsertQuotas(snap.Quotas)
		for _, q := range snap.Queues {
			fresh.UpsertQueue(q)
		}
		for _, u := range snap.Units {
			if err := fresh.UpsertUnit(u); err != nil {
				t.Fatalf("seed %d: UpsertUnit(%s): %v", seed, u.Key, err)
			}
		}
		used := func(s *scheduler.Scheduler) map[string]string {
			out := map[string]string{}
			for _, q := range snap.Quotas {
				out[q.Name] = fmt.Sprint(s.Quotas().Used(q.Name))
			}
			return out
		}
		if diff := cmp.Diff(used(sm.s), used(fresh)); diff != "" {
			t.Fatalf("seed %d: usage (-live +fed the snapshot):\n%s", seed, diff)
		}
		for _, u := range snap.Units {
			if got, want := fresh.IsAdmitted(u.Key), sm.s.IsAdmitted(u.Key); got != want {
				t.Errorf("seed %d: %s admitted %v, live %v", seed, u.Key, got, want)
			}
		}
	}
}

// TestUnitIsTheUnitLastGiven: Unit reads a unit back as UpsertUnit last had
// it (the forecast's replay keeps no copy of its own), whether it waits or
// holds quota; a unit never given, or deleted, is not there.
func TestUnitIsTheUnitLastGiven(t *testing.T) {
	s := scheduler.New()
	s.UpsertQuota(qt.MakeSpec("team").Max("cpu", "4").Obj())
	s.UpsertQueue(st.MakeQueue("team").Obj())
	waiting := st.MakeUnit("ns/waiting", "team").Request("cpu", "8").Priority(3).Enqueued(time.Second).Obj()
	admitted := st.MakeUnit("ns/admitted", "team").PodSet("main", 4, 2, "cpu", "1").Partial("main", 2).Admitted(time.Minute).Running().Obj()
	for _, u := range []scheduler.Unit{waiting, admitted} {
		if err := s.UpsertUnit(u); err != nil {
			t.Fatalf("UpsertUnit(%s): %v", u.Key, err)
		}
	}
	for _, want := range []scheduler.Unit{waiting, admitted} {
		got, ok := s.Unit(want.Key)
		if !ok {
			t.Fatalf("Unit(%s) not found", want.Key)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Unit(%s) (-want +got):\n%s", want.Key, diff)
		}
	}
	s.DeleteUnit("ns/waiting")
	for _, key := range []string{"ns/waiting", "ns/never"} {
		if got, ok := s.Unit(key); ok {
			t.Errorf("Unit(%s) = %+v, want none", key, got)
		}
	}
}

// TestUnitsInKeyOrder: Units yields every unit once, in key order, each
// admitted as the scheduler has it, and stops when told to.
func TestUnitsInKeyOrder(t *testing.T) {
	sm := runSim(t, 7, simConfig{}, 60)
	var keys []string
	admitted := 0
	for u := range sm.s.Units() {
		keys = append(keys, u.Key)
		if u.Admitted != sm.s.IsAdmitted(u.Key) {
			t.Errorf("%s: Admitted %v, the scheduler says %v", u.Key, u.Admitted, sm.s.IsAdmitted(u.Key))
		}
		if u.Admitted {
			admitted++
		}
	}
	if admitted == 0 || admitted == len(keys) {
		t.Fatalf("%d of %d units admitted: the simulation should leave some of each", admitted, len(keys))
	}
	if !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
		t.Errorf("keys not in strictly increasing order: %v", keys)
	}
	n := 0
	for range sm.s.Units() {
		n++
		break
	}
	if n != 1 {
		t.Errorf("%d units yielded after the loop broke at the first", n)
	}
}
