package scheduler_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// attempts is a queue's Attempts, for comparisons.
type attempts struct{ Scheduled, Unschedulable uint64 }

func TestAttemptsCountTurnsThatAdmitAndTurnsThatWait(t *testing.T) {
	s := world{
		capacity: bigCluster,
		quotas:   []quota.Spec{qt.MakeSpec("a").Max("cpu", "2").Obj(), qt.MakeSpec("b").Max("cpu", "4").Obj()},
		queues: []scheduler.QueueSpec{
			st.MakeQueue("a").Obj(),
			st.MakeQueue("b").Policy(schedulingv1alpha1.QueuePolicyBlock).Obj(),
		},
		units: []scheduler.Unit{
			st.MakeUnit("ns/a1", "a").Request("cpu", "1").Enqueued(1).Obj(),
			st.MakeUnit("ns/a2", "a").Request("cpu", "1").Enqueued(2).Obj(),
			st.MakeUnit("ns/a3", "a").Request("cpu", "1").Enqueued(3).Obj(),
			st.MakeUnit("ns/b1", "b").Request("cpu", "2").Enqueued(1).Obj(),
		},
	}.build(t)
	steps := []struct {
		name string
		do   func()
		want map[string]attempts
	}{
		{
			name: "a admits two and its third turn waits; b admits its only unit and is not tried once empty",
			want: map[string]attempts{"a": {2, 1}, "b": {1, 0}},
		},
		{
			name: "a parked queue is not tried again without an event",
			want: map[string]attempts{"a": {2, 1}, "b": {1, 0}},
		},
		{
			name: "a unit too large for its quota waits once, then its queue is parked",
			do:   upsertUnit(t, s, st.MakeUnit("ns/b2", "b").Request("cpu", "5").Enqueued(4).Obj()),
			want: map[string]attempts{"a": {2, 1}, "b": {1, 1}},
		},
		{
			name: "a release wakes the queue, whose last unit is admitted",
			do:   func() { s.DeleteUnit("ns/a1") },
			want: map[string]attempts{"a": {3, 1}, "b": {1, 1}},
		},
		{
			name: "a queue deleted has none",
			do:   func() { s.DeleteQueue("a") },
			want: map[string]attempts{"a": {0, 0}, "b": {1, 1}},
		},
	}
	for _, step := range steps {
		if step.do != nil {
			step.do()
		}
		s.Cycle(st.T0)
		got := map[string]attempts{}
		for _, q := range []string{"a", "b"} {
			var a attempts
			a.Scheduled, a.Unschedulable = s.Attempts(q)
			got[q] = a
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("%s: Attempts (-want +got):\n%s", step.name, diff)
		}
	}
}

func upsertUnit(t *testing.T, s *scheduler.Scheduler, u scheduler.Unit) func() {
	return func() {
		t.Helper()
		if err := s.UpsertUnit(u); err != nil {
			t.Fatalf("UpsertUnit(%s): %v", u.Key, err)
		}
	}
}

// TestNamespaceUsedCountsAdmissionsRestoresAndReservations: the engine
// counts what each namespace holds from every charge the scheduler makes:
// admissions, units restored as admitted, and what is reserved for a
// preemptor while its victims leave.
func TestNamespaceUsedCountsAdmissionsRestoresAndReservations(t *testing.T) {
	s := world{
		capacity: qt.Res("cpu", "10"),
		quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
		// Delay 0: the reservation for a preemptor is what this counts,
		// not the wait before it (TestPreemptionDelay).
		queues: []scheduler.QueueSpec{st.MakeQueue("q").Preemption().PreemptionDelay(0).Obj()},
		units: []scheduler.Unit{
			st.MakeUnit("team-a/restored", "q").Request("cpu", "1").Priority(1).Admitted(0).Obj(),
			st.MakeUnit("team-b/low", "q").Request("cpu", "2").Priority(1).Enqueued(1).Obj(),
		},
	}.build(t)
	namespaceUsed := func() map[string]string {
		out := map[string]string{}
		s.Quotas().NamespaceUsed(func(ns string, used corev1.ResourceList) {
			q := used[corev1.ResourceCPU]
			out[ns] = q.String()
		})
		return out
	}
	s.Cycle(st.T0)
	if diff := cmp.Diff(map[string]string{"team-a": "1", "team-b": "2"}, namespaceUsed()); diff != "" {
		t.Errorf("after a restore and an admission (-want +got):\n%s", diff)
	}
	// A high-priority unit of team-c needs 3: 1 is free, so it evicts low
	// and holds the free 1 meanwhile.
	if err := s.UpsertUnit(st.MakeUnit("team-c/high", "q").Request("cpu", "3").Priority(9).Enqueued(2).Obj()); err != nil {
		t.Fatal(err)
	}
	if got := summarise(s.Cycle(st.T0)).Preempted; len(got) != 1 {
		t.Fatalf("preemptions %v, want one", got)
	}
	if diff := cmp.Diff(map[string]string{"team-a": "1", "team-b": "2", "team-c": "1"}, namespaceUsed()); diff != "" {
		t.Errorf("while the preemptor's victim leaves (-want +got):\n%s", diff)
	}
	s.DeleteUnit("team-b/low")
	s.Cycle(st.T0)
	if diff := cmp.Diff(map[string]string{"team-a": "1", "team-c": "3"}, namespaceUsed()); diff != "" {
		t.Errorf("once the victim is gone and the preemptor admitted (-want +got):\n%s", diff)
	}
	s.DeleteUnit("team-c/high")
	s.DeleteUnit("team-a/restored")
	if diff := cmp.Diff(map[string]string{}, namespaceUsed()); diff != "" {
		t.Errorf("once every unit left (-want +got):\n%s", diff)
	}
}
