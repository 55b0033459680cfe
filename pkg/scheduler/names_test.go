package scheduler_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// Names stay in their namespace: every text the scheduler writes for a unit
// (its wait reason, the reason it is preempted) is read by that unit's
// namespace, and names no unit of another. The property test's worlds mix
// units of several namespaces in every queue and quota, so that units wait
// behind, wait for the gate of, are preempted by and wait for the
// preemption of units of other namespaces.

// namespacedKey is unit n of one of four namespaces, named so that no other
// text contains its name by chance: "tenant-2/job0042z".
func namespacedKey(rng *rand.Rand, n int) string {
	return fmt.Sprintf("tenant-%d/job%04dz", rng.IntN(4), n)
}

// checkNames: no text of this cycle for a unit of namespace N names a unit
// of another namespace, whether by its key or by its name alone.
func (sm *sim) checkNames(res scheduler.Result) {
	for _, w := range res.Waits {
		sm.checkText(w.Unit, "wait reason", w.Reason)
	}
	for _, p := range res.Preemptions {
		for _, v := range p.Victims {
			sm.checkText(v, "preemption reason", p.Reason.For(namespace(v)))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sm.units)) {
		sm.checkText(k, "WaitReason", sm.s.WaitReason(k))
	}
}

// checkText: text, written for unit reader, names no unit of another
// namespace.
func (sm *sim) checkText(reader, what, text string) {
	for _, k := range slices.Sorted(maps.Keys(sm.keys)) {
		ns, name, _ := strings.Cut(k, "/")
		if ns != namespace(reader) && strings.Contains(text, name) {
			sm.failures = append(sm.failures, fmt.Sprintf("the %s of %s names %s of another namespace: %q", what, reader, k, text))
			return
		}
	}
}

func namespace(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}

// TestPropertyNamesStayInTheirNamespace runs worlds of several namespaces:
// random trees with every policy, in-queue preemption and
// wait-for-pods-running, and quotas that lend their whole min, where reclaim
// takes units of other namespaces.
func TestPropertyNamesStayInTheirNamespace(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		checkSim(t, seed, simConfig{namespaces: true})
		checkSim(t, seed, simConfig{namespaces: true, priorityOnly: true, lenders: true})
	}
}

// TestReclaimAcrossNamespaces: tenant acc-ta reclaims the min of its quota
// ta from quota tb, where a unit of its own and one of tenant acc-tb borrow.
// Each victim learns who preempted it only if that unit is of its own
// namespace, and the preemptor's wait reason names only its own victim.
func TestReclaimAcrossNamespaces(t *testing.T) {
	s := scheduler.New()
	s.SetClusterCapacity(qt.Res("cpu", "10"))
	for _, q := range []quota.Spec{
		qt.MakeSpec("ta").Min("cpu", "6").Max("cpu", "10").Obj(),
		qt.MakeSpec("tb").Min("cpu", "4").Max("cpu", "10").Obj(),
	} {
		s.UpsertQuota(q)
	}
	s.UpsertQueue(st.MakeQueue("ta").PreemptionDelay(0).Obj())
	s.UpsertQueue(st.MakeQueue("tb").PreemptionDelay(0).Obj())
	for _, u := range []scheduler.Unit{
		st.MakeUnit("acc-tb/b0", "tb").Priority(5).Request("cpu", "4").Admitted(0).Running().Obj(),
		st.MakeUnit("acc-tb/b1", "tb").Request("cpu", "4").Admitted(time.Second).Running().Obj(),
		st.MakeUnit("acc-ta/a0", "tb").Request("cpu", "2").Admitted(2 * time.Second).Running().Obj(),
		st.MakeUnit("acc-ta/a1", "ta").Request("cpu", "6").Enqueued(3 * time.Second).Obj(),
	} {
		if err := s.UpsertUnit(u); err != nil {
			t.Fatal(err)
		}
	}
	res := s.Cycle(st.T0.Add(time.Minute))
	if len(res.Preemptions) != 1 {
		t.Fatalf("preemptions: %+v, want one", res.Preemptions)
	}
	p := res.Preemptions[0]
	got := map[string]string{"acc-ta/a1 waits": s.WaitReason("acc-ta/a1")}
	for _, v := range p.Victims {
		got[v+" is told"] = p.Reason.For(namespace(v))
	}
	want := map[string]string{
		"acc-ta/a1 waits":   "preempting 2 unit(s) to reclaim the min of quota ta: acc-ta/a0, a unit of another namespace",
		"acc-ta/a0 is told": "preempted by acc-ta/a1 to reclaim the min of quota ta",
		"acc-tb/b1 is told": "preempted by a unit of another namespace to reclaim the min of quota ta",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}
