package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/koord-queue/koord-queue/pkg/scheduler"
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
