package scheduler_test

import (
	"testing"
	"time"

	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// TestGateNamesWhatIsNotRunning: a wait-for-pods-running queue's head says
// what the unit holding the gate lacks, and says it afresh when that unit
// gets closer, not only when it runs.
func TestGateNamesWhatIsNotRunning(t *testing.T) {
	starting := func(why string) scheduler.Unit {
		return st.MakeUnit("ns/starting", "q").Request("cpu", "2").Admitted(0).NotRunning(why).Obj()
	}
	s := world{
		capacity: bigCluster,
		quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "10").Obj()},
		queues:   []scheduler.QueueSpec{st.MakeQueue("q").WaitForPodsRunning().Obj()},
		units: []scheduler.Unit{
			starting("pod set main has 0 of 2 pods scheduled"),
			st.MakeUnit("ns/next", "q").Request("cpu", "1").Enqueued(time.Second).Obj(),
		},
	}.build(t)
	runSteps(t, s, []step{
		{name: "no pod of it is scheduled", want: outcome{Waits: map[string]string{
			"ns/next": "queue q waits for ns/starting to be running (wait-for-pods-running): pod set main has 0 of 2 pods scheduled"}}},
		{name: "one of its two pods is scheduled", do: upsert(starting("pod set main has 1 of 2 pods scheduled")),
			want: outcome{Waits: map[string]string{
				"ns/next": "queue q waits for ns/starting to be running (wait-for-pods-running): pod set main has 1 of 2 pods scheduled"}}},
		{name: "nothing changed"},
		{name: "both are scheduled: the gate opens",
			do:   upsert(st.MakeUnit("ns/starting", "q").Request("cpu", "2").Admitted(0).Running().Obj()),
			want: outcome{Admitted: []string{"ns/next"}}},
	})
}
