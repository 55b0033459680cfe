package queueunit_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// released is a unit admitted at t0 by koord-queue (its Admitted condition),
// in phase p, holding two pods.
func released(p schedulingv1alpha1.QueueUnitPhase) *wrappers.QueueUnitWrapper {
	w := wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).Phase(p).Admission("main", 2)
	w.Status.Conditions = []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitAdmitted, Status: metav1.ConditionTrue,
		Reason: queueunit.ReasonAdmitted, LastTransitionTime: t0}}
	return w
}

// TestRunningDeadline: a released unit whose job runs no pod has a deadline
// counted from its job's release; every other unit has none.
func TestRunningDeadline(t *testing.T) {
	koordQueue := wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.Dequeued).Admission("main", 2).Obj()
	koordQueue.Status.LastUpdateTime = &t0
	evicted := released(schedulingv1alpha1.Dequeued).Condition(schedulingv1alpha1.QueueUnitEvicted, metav1.ConditionTrue, "Preempted").Obj()
	later := t0.Add(10 * time.Minute)
	now := t0.Add(time.Hour)
	for name, tc := range map[string]struct {
		unit    *schedulingv1alpha1.QueueUnit
		job     queueunit.JobState
		timeout time.Duration
		want    time.Time
		wantOK  bool
	}{
		"released: its release plus the timeout":                  {unit: released(schedulingv1alpha1.Dequeued).Obj(), job: queueunit.JobState{ReleasedAt: later}, timeout: time.Minute, want: later.Add(time.Minute), wantOK: true},
		"released, no record of when: counted from its admission": {unit: released(schedulingv1alpha1.Dequeued).Obj(), timeout: time.Minute, want: t0.Add(time.Minute), wantOK: true},
		"released by Koord-Queue: counted from lastUpdateTime":    {unit: koordQueue, timeout: time.Minute, want: t0.Add(time.Minute), wantOK: true},
		"released by Koord-Queue at a time it recorded":           {unit: koordQueue, job: queueunit.JobState{ReleasedAt: later}, timeout: time.Minute, want: later.Add(time.Minute), wantOK: true},
		"a release recorded before the admission (an earlier one): from the admission": {
			unit: released(schedulingv1alpha1.Dequeued).Obj(), job: queueunit.JobState{ReleasedAt: t0.Add(-time.Hour)}, timeout: time.Minute, want: t0.Add(time.Minute), wantOK: true},
		"a release recorded in the future (written by hand): from the admission": {
			unit: released(schedulingv1alpha1.Dequeued).Obj(), job: queueunit.JobState{ReleasedAt: now.Add(time.Second)}, timeout: time.Minute, want: t0.Add(time.Minute), wantOK: true},
		"admitted, its job not released yet": {unit: released(schedulingv1alpha1.Dequeued).Obj(), job: queueunit.JobState{Suspended: true}, timeout: time.Minute},
		"no timeout":                         {unit: released(schedulingv1alpha1.Dequeued).Obj()},
		"its job runs pods":                  {unit: released(schedulingv1alpha1.Running).Obj(), timeout: time.Minute},
		"reserved for its checks":            {unit: released(schedulingv1alpha1.Reserved).Obj(), timeout: time.Minute},
		"waiting":                            {unit: wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.Enqueued).Obj(), timeout: time.Minute},
		"evicted, not yet enqueued":          {unit: evicted, timeout: time.Minute},
		"inactive":                           {unit: released(schedulingv1alpha1.Dequeued).Inactive().Obj(), timeout: time.Minute},
		"released by hand, no time":          {unit: wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.Dequeued).Obj(), timeout: time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := queueunit.RunningDeadline(tc.unit, tc.job, tc.timeout, now)
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Errorf("RunningDeadline = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestRunningDeadlineAfterAdmissionChecks: a unit reserved for its
// admission checks for a long time counts its running timeout from when
// they passed and its job was released, not from its reservation.
func TestRunningDeadlineAfterAdmissionChecks(t *testing.T) {
	const timeout = time.Minute
	u := wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).Obj()
	queueunit.Admit(u, "q", nil, nil, []string{"provision"}, t0)
	u.Status.AdmissionChecks[0].State = schedulingv1alpha1.CheckStateReady
	passed := metav1.NewTime(t0.Add(time.Hour))
	queueunit.PassChecks(u, queueunit.Checks{Names: []string{"provision"}, Known: true}, "q", passed)
	releasedAt := passed.Add(5 * time.Second)
	got, ok := queueunit.RunningDeadline(u, queueunit.JobState{ReleasedAt: releasedAt}, timeout, releasedAt.Add(time.Second))
	if want := releasedAt.Add(timeout); !ok || !got.Equal(want) {
		t.Errorf("RunningDeadline = %v, %v; want %v, true", got, ok, want)
	}
}

// TestBackOffAndRequeue: a released unit past its deadline backs off,
// keeping its admissions until its pods are gone, and is queued again once
// the backoff has passed, not before.
func TestBackOffAndRequeue(t *testing.T) {
	const timeout, backoff = time.Minute, 5 * time.Minute
	u := released(schedulingv1alpha1.Dequeued).Obj()
	if queueunit.BackOff(u, queueunit.JobState{}, timeout, backoff, metav1.NewTime(t0.Add(timeout-time.Second))) {
		t.Fatalf("BackOff before the deadline changed the unit: %+v", u.Status)
	}
	at := metav1.NewTime(t0.Add(timeout))
	end := metav1.NewTime(at.Add(backoff))
	if !queueunit.BackOff(u, queueunit.JobState{}, timeout, backoff, at) {
		t.Fatal("BackOff at the deadline changed nothing")
	}
	msg := "no pod of the job ran within the running timeout of 1m0s after its release: the job is suspended and its quota given back; it is queued again at 2025-01-01T00:06:00Z"
	want := schedulingv1alpha1.QueueUnitStatus{
		Phase: schedulingv1alpha1.TimeoutBackoff, Message: msg, LastUpdateTime: &at,
		Admissions:   []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2}},
		RequeueState: &schedulingv1alpha1.RequeueState{Count: 1, RequeueAt: &end},
		Conditions: []metav1.Condition{
			{Type: schedulingv1alpha1.QueueUnitAdmitted, Status: metav1.ConditionFalse, Reason: schedulingv1alpha1.EvictedByBackoffTimeout, Message: msg, LastTransitionTime: at},
			{Type: schedulingv1alpha1.QueueUnitEvicted, Status: metav1.ConditionTrue, Reason: schedulingv1alpha1.EvictedByBackoffTimeout, Message: msg, LastTransitionTime: at},
		},
	}
	byType := cmpopts.SortSlices(func(a, b metav1.Condition) bool { return a.Type < b.Type })
	if diff := cmp.Diff(want, u.Status, byType); diff != "" {
		t.Errorf("backed off (-want +got):\n%s", diff)
	}
	if queueunit.BackOff(u, queueunit.JobState{}, timeout, backoff, at) {
		t.Error("BackOff of a unit backing off changed it again")
	}
	if !queueunit.HoldsQuota(u) {
		t.Error("a unit backing off whose pods may remain gives its quota back before they are gone")
	}
	if queueunit.EndBackoff(u, backoff, metav1.NewTime(end.Add(-time.Second))) {
		t.Errorf("EndBackoff before the backoff ended queued the unit: %+v", u.Status)
	}
	if !queueunit.EndBackoff(u, backoff, end) {
		t.Fatal("EndBackoff at the end of the backoff changed nothing")
	}
	if diff := cmp.Diff(schedulingv1alpha1.QueueUnitStatus{
		Phase: schedulingv1alpha1.Enqueued, Message: "queued again after the backoff of its running timeout", LastUpdateTime: &end,
		Admissions: want.Admissions, RequeueState: &schedulingv1alpha1.RequeueState{Count: 1}, Conditions: want.Conditions,
	}, u.Status, byType); diff != "" {
		t.Errorf("queued again (-want +got):\n%s", diff)
	}
}

// TestBackoffEndOfKoordQueuesUnit: a unit Koord-Queue sent to
// TimeoutBackoff records no requeueAt; its backoff counts from its last
// update.
func TestBackoffEndOfKoordQueuesUnit(t *testing.T) {
	u := wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.TimeoutBackoff).Obj()
	u.Status.LastUpdateTime = &t0
	if got, ok := queueunit.BackoffEnd(u, time.Minute); !ok || !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("BackoffEnd = %v, %v; want %v, true", got, ok, t0.Add(time.Minute))
	}
	if _, ok := queueunit.BackoffEnd(released(schedulingv1alpha1.Dequeued).Obj(), time.Minute); ok {
		t.Error("a released unit has a backoff end")
	}
}
