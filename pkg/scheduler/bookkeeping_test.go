package scheduler_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
)

// The scheduler owns every charge in its quota engine, so the engine's
// Charge, Admit and Resize cannot fail on its behalf unless that
// bookkeeping broke. These tests break it on purpose, by charging or
// releasing through Quotas() behind the scheduler's back, and check that
// each failure is surfaced (ErrBookkeeping, from UpsertUnit or in
// Result.Errors) and leaves the scheduler consistent, never ignored.

// rogueCharge charges key to quotaName behind the scheduler's back.
func rogueCharge(key, quotaName string, pairs ...string) func(*scheduler.Scheduler) {
	return func(s *scheduler.Scheduler) {
		e := s.Quotas()
		if err := e.Charge(quota.Charge{Key: key, Quota: quotaName, Request: e.Vector(qt.Res(pairs...))}); err != nil {
			panic(err)
		}
	}
}

// rogueRelease releases key behind the scheduler's back.
func rogueRelease(key string) func(*scheduler.Scheduler) {
	return func(s *scheduler.Scheduler) {
		if !s.Quotas().Release(key) {
			panic("nothing charged under " + key)
		}
	}
}

func clusterCPU(s *scheduler.Scheduler) string {
	used := s.Quotas().Used(elasticquotav1alpha1.RootQuotaName)
	return used.Cpu().String()
}

// TestUpsertUnitRefusalsLeaveTheUnitOut: a unit UpsertUnit refuses is not
// in the scheduler afterwards (the controller marks it out of the core), and
// nothing is charged for it but what was there before.
func TestUpsertUnitRefusalsLeaveTheUnitOut(t *testing.T) {
	cases := []struct {
		name string
		// before runs on a scheduler with quota and queue q (max 8 cpu).
		before func(*scheduler.Scheduler)
		unit   scheduler.Unit
		// wantErr are the errors the refusal must wrap; none means accepted.
		wantErr      []error
		wantAdmitted bool
		// wantCounts is QueueCounts of the unit's queue (countsOf if set).
		countsOf       string
		wantCounts     [2]int
		wantClusterCPU string
		// retry upserts the unit again, as the controller does at its next
		// event; wantRetryCPU is the cluster's cpu then.
		retry        bool
		wantRetryCPU string
	}{
		{
			name:           "restored into a quota the engine does not know: counted against the cluster, no error",
			unit:           st.MakeUnit("ns/a", "ghost").Request("cpu", "2").Admitted(0).Obj(),
			wantAdmitted:   true,
			wantCounts:     [2]int{0, 1},
			wantClusterCPU: "2",
		},
		{
			name:           "restored with a request too large to count: refused, nothing charged",
			unit:           st.MakeUnit("ns/a", "q").Request("cpu", "1e30").Admitted(0).Obj(),
			wantErr:        []error{quota.ErrRequestTooLarge},
			wantClusterCPU: "0",
		},
		{
			name:           "restored under a key the engine already charges: refused, the other charge left alone",
			before:         rogueCharge("ns/a", "q", "cpu", "1"),
			unit:           st.MakeUnit("ns/a", "q").Request("cpu", "2").Admitted(0).Obj(),
			wantErr:        []error{scheduler.ErrBookkeeping, quota.ErrAlreadyCharged},
			wantClusterCPU: "1",
		},
		{
			name: "a waiting unit reported admitted under a key the engine already charges: refused, and it no longer waits",
			before: func(s *scheduler.Scheduler) {
				upsert(st.MakeUnit("ns/a", "q").Request("cpu", "2").Obj())(s)
				rogueCharge("ns/a", "q", "cpu", "1")(s)
			},
			unit:           st.MakeUnit("ns/a", "q").Request("cpu", "2").Admitted(0).Obj(),
			wantErr:        []error{scheduler.ErrBookkeeping, quota.ErrAlreadyCharged},
			wantClusterCPU: "1",
		},
		{
			name: "resized while the engine had lost its charge: refused, no longer counted, and counted again at its next event",
			before: func(s *scheduler.Scheduler) {
				upsert(st.MakeUnit("ns/a", "q").Request("cpu", "2").Admitted(0).Obj())(s)
				rogueRelease("ns/a")(s)
			},
			unit:           st.MakeUnit("ns/a", "q").Request("cpu", "1").Admitted(0).Obj(),
			wantErr:        []error{scheduler.ErrBookkeeping, quota.ErrNotCharged},
			wantClusterCPU: "0",
			retry:          true,
			wantRetryCPU:   "1",
		},
		{
			name:           "a key the scheduler keeps for reservations: refused",
			unit:           st.MakeUnit(scheduler.ReservationKey("ns/a"), "q").Request("cpu", "2").Admitted(0).Obj(),
			wantErr:        []error{scheduler.ErrInvalidUnit},
			wantClusterCPU: "0",
		},
		{
			name:           "an admitted unit that loses its queue: refused, and it gives back what it held",
			before:         upsert(st.MakeUnit("ns/a", "q").Request("cpu", "2").Admitted(0).Obj()),
			unit:           scheduler.Unit{Key: "ns/a", Request: qt.Res("cpu", "2"), Admitted: true},
			wantErr:        []error{scheduler.ErrInvalidUnit},
			countsOf:       "q",
			wantClusterCPU: "0",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "8").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
			}.build(t)
			if tc.before != nil {
				tc.before(s)
			}
			err := s.UpsertUnit(tc.unit)
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatalf("UpsertUnit: %v, want no error", err)
			}
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("UpsertUnit: err = %v, want one wrapping %v", err, want)
				}
			}
			if got := s.IsAdmitted(tc.unit.Key); got != tc.wantAdmitted {
				t.Errorf("IsAdmitted = %v, want %v", got, tc.wantAdmitted)
			}
			if got := s.Position(tc.unit.Key); got != 0 {
				t.Errorf("Position = %d, want 0 (not waiting)", got)
			}
			queue := tc.unit.Queue
			if tc.countsOf != "" {
				queue = tc.countsOf
			}
			if pending, admitted := s.QueueCounts(queue); pending != tc.wantCounts[0] || admitted != tc.wantCounts[1] {
				t.Errorf("QueueCounts(%s) = %d pending, %d admitted; want %d, %d", queue, pending, admitted, tc.wantCounts[0], tc.wantCounts[1])
			}
			if diff := cmp.Diff(tc.wantClusterCPU, clusterCPU(s)); diff != "" {
				t.Errorf("cluster cpu used (-want +got):\n%s", diff)
			}
			if got := summarise(s.Cycle(st.T0)); len(got.Errors) != 0 {
				t.Errorf("the next cycle reports %v; UpsertUnit returned the error already", got.Errors)
			}
			if !tc.retry {
				return
			}
			if err := s.UpsertUnit(tc.unit); err != nil {
				t.Fatalf("UpsertUnit again: %v", err)
			}
			if diff := cmp.Diff(tc.wantRetryCPU, clusterCPU(s)); diff != "" {
				t.Errorf("cluster cpu used after the retry (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQuotaEngineRefusalsAreReported: a charge the engine refuses during a
// cycle, or while a victim leaves, is in Result.Errors; the unit concerned
// is not admitted on it, says why, and is decided normally once the
// bookkeeping is right again.
func TestQuotaEngineRefusalsAreReported(t *testing.T) {
	reclaim := func(claimCPU string) world {
		w := ownerAndBorrower("10",
			st.MakeUnit("ns/old-low", "borrower").Priority(1).Request("cpu", "2").Admitted(time.Second).Running().Obj(),
			st.MakeUnit("ns/new-low", "borrower").Priority(1).Request("cpu", "2").Admitted(2*time.Second).Running().Obj(),
			st.MakeUnit("ns/base", "borrower").Priority(3).Request("cpu", "6").Admitted(0).Running().Obj(),
			st.MakeUnit("ns/claim", "owner").Request("cpu", claimCPU).Obj(),
		)
		// claim reclaims at once: these cases are about the engine's
		// refusals of a preemptor's charges, not about the delay.
		w.queues[0] = st.MakeQueue("owner").PreemptionDelay(0).Obj()
		return w
	}
	cycle := func(s *scheduler.Scheduler) { s.Cycle(st.T0) }
	const refusedAdmission = `quota bookkeeping failed (a koord-queue bug): unit "ns/claim": unit already holds quota`
	cases := []struct {
		name  string
		world world
		// before brings the scheduler to the cycle checked.
		before []func(*scheduler.Scheduler)
		// noTurns runs the checked cycle as CycleLimited(now, 0): only
		// preemptors whose victims left are admitted.
		noTurns bool
		want    outcome
		wantIs  error
		// then: later cycles, once the bookkeeping is right again.
		then []step
	}{
		{
			name: "a unit the engine already charges is not admitted: it keeps its place and says why",
			world: world{
				capacity: bigCluster,
				quotas:   []quota.Spec{qt.MakeSpec("q").Max("cpu", "4").Obj()},
				queues:   []scheduler.QueueSpec{st.MakeQueue("q").Obj()},
				units: []scheduler.Unit{
					st.MakeUnit("ns/a", "q").Request("cpu", "1").Obj(),
					st.MakeUnit("ns/b", "q").Request("cpu", "1").Enqueued(time.Second).Obj(),
				},
			},
			before: []func(*scheduler.Scheduler){rogueCharge("ns/a", "q", "cpu", "1")},
			want: outcome{
				Waits:  map[string]string{"ns/a": `not admitted: quota bookkeeping failed (a koord-queue bug): unit "ns/a": unit already holds quota`},
				Errors: []string{`ns/a in q: quota bookkeeping failed (a koord-queue bug): unit "ns/a": unit already holds quota`},
			},
			wantIs: quota.ErrAlreadyCharged,
			then: []step{
				{name: "no event, no retry, no error"},
				{
					name: "the stray charge is gone and the queue woken: both are admitted",
					do: func(s *scheduler.Scheduler) {
						rogueRelease("ns/a")(s)
						s.UpsertQuota(qt.MakeSpec("q").Max("cpu", "4").Obj())
					},
					want: outcome{Admitted: []string{"ns/a", "ns/b"}},
				},
			},
		},
		{
			name:  "a preemptor whose victims left is refused: reported though no queue has a turn",
			world: reclaim("2"),
			before: []func(*scheduler.Scheduler){
				cycle, // claim reclaims new-low
				deleteUnits("ns/new-low"),
				rogueCharge("ns/claim", "owner"),
			},
			noTurns: true,
			want: outcome{
				Waits:  map[string]string{"ns/claim": "not admitted: " + refusedAdmission},
				Errors: []string{"ns/claim in owner: " + refusedAdmission},
			},
			wantIs: quota.ErrAlreadyCharged,
			then: []step{{
				name: "the stray charge is gone: claim is admitted on what was reclaimed",
				do: func(s *scheduler.Scheduler) {
					rogueRelease("ns/claim")(s)
					s.UpsertQuota(qt.MakeSpec("owner").Min("cpu", "6").Max("cpu", "10").Obj())
				},
				want: outcome{Admitted: []string{"ns/claim"}},
			}},
		},
		{
			name:   "the preemptor's reservation is refused: reported, and the preemption goes ahead",
			world:  reclaim("2"),
			before: []func(*scheduler.Scheduler){rogueCharge(scheduler.ReservationKey("ns/claim"), "owner")},
			want: outcome{
				Preempted: []string{"ns/claim <- ns/new-low"},
				Waits:     map[string]string{"ns/claim": "preempting 1 unit(s) to reclaim the min of quota owner: ns/new-low"},
				Errors:    []string{`ns/claim in owner: quota bookkeeping failed (a koord-queue bug): unit "reservation:ns/claim": unit already holds quota`},
			},
			wantIs: quota.ErrAlreadyCharged,
			then: []step{{
				name: "the victim is gone: the preemptor goes first",
				do: func(s *scheduler.Scheduler) {
					rogueRelease(scheduler.ReservationKey("ns/claim"))(s)
					s.DeleteUnit("ns/new-low")
				},
				want: outcome{Admitted: []string{"ns/claim"}},
			}},
		},
		{
			name:  "a reservation the engine lost while a victim leaves: reported with the next cycle",
			world: reclaim("4"),
			before: []func(*scheduler.Scheduler){
				cycle, // claim reclaims new-low and old-low
				rogueRelease(scheduler.ReservationKey("ns/claim")),
				deleteUnits("ns/new-low"),
			},
			want: outcome{
				Errors: []string{`ns/claim in owner: quota bookkeeping failed (a koord-queue bug): unit "reservation:ns/claim": unit holds no quota`},
			},
			wantIs: quota.ErrNotCharged,
			then: []step{{
				name: "the other victim is gone: the preemptor goes first",
				do:   deleteUnits("ns/old-low"),
				want: outcome{Admitted: []string{"ns/claim"}},
			}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.world.build(t)
			for _, do := range tc.before {
				do(s)
			}
			var res scheduler.Result
			if tc.noTurns {
				res = s.CycleLimited(st.T0, 0)
			} else {
				res = s.Cycle(st.T0)
			}
			if diff := cmp.Diff(tc.want, summarise(res), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("cycle (-want +got):\n%s", diff)
			}
			for _, e := range res.Errors {
				if !errors.Is(e.Err, scheduler.ErrBookkeeping) || !errors.Is(e.Err, tc.wantIs) {
					t.Errorf("error %v: want one wrapping ErrBookkeeping and %v", e.Err, tc.wantIs)
				}
			}
			for unit, reason := range tc.want.Waits {
				if diff := cmp.Diff(reason, s.WaitReason(unit)); diff != "" {
					t.Errorf("WaitReason(%s) (-want +got):\n%s", unit, diff)
				}
			}
			runSteps(t, s, tc.then)
		})
	}
}
