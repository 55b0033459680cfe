package queueunit

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// The running timeout (koord-queue-controllers' --job-running-timeout, the
// chart's jobRunningTimeout), as Koord-Queue has it: a unit released
// (Dequeued) whose job runs no pod within the timeout is sent to
// TimeoutBackoff; its extension suspends the job (a waiting unit's job is
// held) and gives its admissions back once the pods are gone; after the
// backoff (--job-backoff-time) it is Enqueued again and may be admitted
// anew. koord-queue leaves a unit in TimeoutBackoff out of its queue until
// then.

// RunningDeadline is when u, released, has waited timeout for its job to
// run a pod: the job's release plus timeout. The release is when the
// extension resumed the job (job.ReleasedAt), if that lies between the
// admission and now (the job's owner may write that record too, so it only
// ever moves the count from the admission to later, never past now);
// otherwise the admission (the Admitted condition turning True, which it
// does once the admission checks pass; else lastAllocateTime; else
// lastUpdateTime, all Koord-Queue writes). ok is false when there is no
// deadline: timeout is not positive, u is not Dequeued (its job runs pods,
// or it is not released: waiting, reserved for its admission checks,
// finished), is inactive or evicted, or its job is still suspended (the
// extension has yet to release it).
func RunningDeadline(u *schedulingv1alpha1.QueueUnit, job JobState, timeout time.Duration, now time.Time) (deadline time.Time, ok bool) {
	if timeout <= 0 || u.EffectivePhase() != schedulingv1alpha1.Dequeued || !u.IsActive() || Evicted(u) || job.Suspended {
		return time.Time{}, false
	}
	var since time.Time
	switch c := meta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitAdmitted); {
	case c != nil && c.Status == metav1.ConditionTrue:
		since = c.LastTransitionTime.Time
	case u.Status.LastAllocateTime != nil:
		since = u.Status.LastAllocateTime.Time
	case u.Status.LastUpdateTime != nil:
		since = u.Status.LastUpdateTime.Time
	default:
		return time.Time{}, false // released by hand, with no time: nothing to count from
	}
	if r := job.ReleasedAt; r.After(since) && !r.After(now) {
		since = r
	}
	return since.Add(timeout), true
}

// BackOff sends u, released and past its RunningDeadline at now (job: what
// its extension sees of its job), to TimeoutBackoff until now plus backoff: Admitted False and Evicted True
// (reason BackoffTimeout), requeueState counting it. Its admissions stay
// until its job's pods are gone (FollowJob), so that their quota is not
// handed out twice. It reports false, changing nothing, when u is not past
// its deadline (it may have started running meanwhile).
func BackOff(u *schedulingv1alpha1.QueueUnit, job JobState, timeout, backoff time.Duration, now metav1.Time) bool {
	deadline, ok := RunningDeadline(u, job, timeout, now.Time)
	if !ok || now.Time.Before(deadline) {
		return false
	}
	st := &u.Status
	if st.RequeueState == nil {
		st.RequeueState = &schedulingv1alpha1.RequeueState{}
	}
	st.RequeueState.Count++
	at := metav1.NewTime(now.Add(max(backoff, 0)))
	st.RequeueState.RequeueAt = &at
	msg := fmt.Sprintf("no pod of the job ran within the running timeout of %s after its release: the job is suspended and its quota given back; it is queued again at %s",
		timeout, at.UTC().Format(time.RFC3339))
	st.Phase = schedulingv1alpha1.TimeoutBackoff
	st.Message = msg
	st.LastUpdateTime = &now
	st.AdmissionChecks = nil
	setCondition(u, schedulingv1alpha1.QueueUnitEvicted, true, schedulingv1alpha1.EvictedByBackoffTimeout, msg, now)
	setCondition(u, schedulingv1alpha1.QueueUnitAdmitted, false, schedulingv1alpha1.EvictedByBackoffTimeout, msg, now)
	return true
}

// BackoffEnd is when u, in TimeoutBackoff, is queued again: its
// requeueAt, or, for a unit Koord-Queue sent there (it records none), its
// lastUpdateTime plus backoff. ok is false when u is not in TimeoutBackoff.
func BackoffEnd(u *schedulingv1alpha1.QueueUnit, backoff time.Duration) (end time.Time, ok bool) {
	if u.Status.Phase != schedulingv1alpha1.TimeoutBackoff {
		return time.Time{}, false
	}
	if rs := u.Status.RequeueState; rs != nil && rs.RequeueAt != nil {
		return rs.RequeueAt.Time, true
	}
	if u.Status.LastUpdateTime != nil {
		return u.Status.LastUpdateTime.Add(max(backoff, 0)), true
	}
	return time.Time{}, true // no time at all: at once
}

// EndBackoff queues u, in TimeoutBackoff and past its BackoffEnd at now,
// again: Enqueued, its requeueAt cleared (the Evicted condition stays until
// it is admitted again). It reports false, changing nothing, otherwise.
func EndBackoff(u *schedulingv1alpha1.QueueUnit, backoff time.Duration, now metav1.Time) bool {
	end, ok := BackoffEnd(u, backoff)
	if !ok || now.Time.Before(end) {
		return false
	}
	st := &u.Status
	st.Phase = schedulingv1alpha1.Enqueued
	st.Message = "queued again after the backoff of its running timeout"
	st.LastUpdateTime = &now
	if st.RequeueState != nil {
		st.RequeueState.RequeueAt = nil
	}
	return true
}
