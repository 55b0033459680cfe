package scheduler_test

import (
	"testing"
	"time"

	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// TestAFullPoolsUnitWaitsWhileAnotherPoolHasRoom: with Koordinator's
// multiple quota trees, each pool admits within its own capacity: a full
// pool's unit waits, naming the pool, while another pool has room, and is
// admitted when its pool grows.
func TestAFullPoolsUnitWaitsWhileAnotherPoolHasRoom(t *testing.T) {
	pool := func(name, tree, gpus string) quota.Spec {
		return qt.MakeSpec(name).IsParent().TreeRoot(tree, "nvidia.com/gpu", gpus).Obj()
	}
	s := world{
		capacity: qt.Res("cpu", "100", "nvidia.com/gpu", "16"),
		quotas: []quota.Spec{
			pool("a100", "t1", "8"), qt.MakeSpec("a100-team").Parent("a100").Tree("t1").Obj(),
			pool("h100", "t2", "8"), qt.MakeSpec("h100-team").Parent("h100").Tree("t2").Obj(),
		},
		queues: []scheduler.QueueSpec{st.MakeQueue("a").Quota("a100-team").Obj(), st.MakeQueue("h").Quota("h100-team").Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("ns/a-first", "a").Request("nvidia.com/gpu", "8").Obj(),
			st.MakeUnit("ns/a-second", "a").Request("nvidia.com/gpu", "2").Enqueued(time.Second).Obj(),
			st.MakeUnit("ns/h-one", "h").Request("nvidia.com/gpu", "2").Obj(),
		},
	}.build(t)
	runSteps(t, s, []step{
		{
			name: "the a100 pool is full, the h100 pool is not",
			want: outcome{
				Admitted: []string{"ns/a-first", "ns/h-one"},
				Waits:    map[string]string{"ns/a-second": "a100 (root of quota tree t1): nvidia.com/gpu 8 used of capacity 8, request 2"},
			},
		},
		{
			name: "the a100 pool grows",
			do:   func(s *scheduler.Scheduler) { s.UpsertQuota(pool("a100", "t1", "10")) },
			at:   time.Second,
			want: outcome{Admitted: []string{"ns/a-second"}},
		},
	})
}
