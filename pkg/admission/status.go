package admission

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// selectedChecks lists the queue's admission checks whose selector matches
// the unit (a nil selector matches every unit).
func selectedChecks(q *schedulingv1alpha1.Queue, u *schedulingv1alpha1.QueueUnit) ([]string, error) {
	var names []string
	for _, check := range q.Spec.AdmissionChecks {
		if check.Selector != nil {
			sel, err := metav1.LabelSelectorAsSelector(check.Selector)
			if err != nil {
				return nil, fmt.Errorf("queue %s: admission check %s: %w", q.Name, check.Name, err)
			}
			if !sel.Matches(labels.Set(u.Labels)) {
				continue
			}
		}
		names = append(names, check.Name)
	}
	return names, nil
}

// admissionsOf is the quota each pod set holds: count times its pod's
// effective request. A unit without pod sets holds its whole request as "main".
func admissionsOf(u *schedulingv1alpha1.QueueUnit, request corev1.ResourceList) []schedulingv1alpha1.Admission {
	if len(u.Spec.PodSets) == 0 {
		return []schedulingv1alpha1.Admission{{Name: schedulingv1alpha1.DefaultPodSetName, Replicas: 1, Resources: request}}
	}
	out := make([]schedulingv1alpha1.Admission, 0, len(u.Spec.PodSets))
	for _, ps := range u.Spec.PodSets {
		out = append(out, schedulingv1alpha1.Admission{
			Name:      ps.Name,
			Replicas:  int64(ps.Count),
			Resources: resources.PodSetsRequests([]schedulingv1alpha1.PodSet{ps}),
		})
	}
	return out
}

// setAdmitted writes an admission into a unit's status: Dequeued, or
// Reserved with each check Pending while the queue's checks select it.
func setAdmitted(u *schedulingv1alpha1.QueueUnit, queue string, request corev1.ResourceList, checks []string, now metav1.Time) {
	st := &u.Status
	st.Admissions = admissionsOf(u, request)
	st.LastAllocateTime = &now
	st.LastUpdateTime = &now
	st.Attempts++
	if st.RequeueState != nil {
		st.RequeueState.RequeueAt = nil
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: schedulingv1alpha1.QueueUnitQuotaReserved, Status: metav1.ConditionTrue, Reason: queueunit.ReasonQuotaReserved,
		Message: "quota reserved in queue " + queue, LastTransitionTime: now,
	})
	if meta.FindStatusCondition(st.Conditions, schedulingv1alpha1.QueueUnitEvicted) != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: schedulingv1alpha1.QueueUnitEvicted, Status: metav1.ConditionFalse, Reason: queueunit.ReasonReadmitted,
			Message: "admitted again", LastTransitionTime: now,
		})
	}
	st.AdmissionChecks = nil
	if len(checks) > 0 {
		st.Phase = schedulingv1alpha1.Reserved
		st.Message = fmt.Sprintf("quota reserved in queue %s; waiting for admission checks %v", queue, checks)
		for _, name := range checks {
			st.AdmissionChecks = append(st.AdmissionChecks, schedulingv1alpha1.AdmissionCheckState{
				Name: name, State: schedulingv1alpha1.CheckStatePending, LastTransitionTime: now,
			})
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: schedulingv1alpha1.QueueUnitAdmitted, Status: metav1.ConditionFalse, Reason: queueunit.ReasonAdmissionChecksPending,
			Message: fmt.Sprintf("waiting for admission checks %v", checks), LastTransitionTime: now,
		})
		return
	}
	st.Phase = schedulingv1alpha1.Dequeued
	st.Message = "admitted by queue " + queue
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: schedulingv1alpha1.QueueUnitAdmitted, Status: metav1.ConditionTrue, Reason: queueunit.ReasonAdmitted,
		Message: "admitted by queue " + queue, LastTransitionTime: now,
	})
}

// setEvicted sends an admitted unit back to its queue. Its admissions stay
// until its job's extension reports the pods gone, so its quota is not
// given away twice; a unit no extension manages (no consumerRef) has nothing
// to wait for and gives its quota back at once.
func setEvicted(u *schedulingv1alpha1.QueueUnit, reason, message string, now metav1.Time) {
	st := &u.Status
	st.Phase = schedulingv1alpha1.Enqueued
	st.Message = message
	st.LastUpdateTime = &now
	st.AdmissionChecks = nil
	if u.Spec.ConsumerRef == nil {
		st.Admissions = nil
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: schedulingv1alpha1.QueueUnitEvicted, Status: metav1.ConditionTrue, Reason: reason, Message: message, LastTransitionTime: now,
	})
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: schedulingv1alpha1.QueueUnitAdmitted, Status: metav1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: now,
	})
}

// queueChecks are the admission checks a unit's Queue selects for it now;
// known is false while koord-queue does not know the Queue (then every check
// the unit carries still counts).
type queueChecks struct {
	names []string
	known bool
}

// removed reports whether the unit carries a check its queue no longer
// selects: taken off the Queue, or its selector no longer matches.
func (q queueChecks) removed(name string) bool {
	return q.known && !slices.Contains(q.names, name)
}

// checksVerdict reads a Reserved unit's admission checks: all Ready, or the
// first one that sent it back (Retry or Rejected), or still pending. A check
// its queue no longer selects counts as Ready, as in Koord-Queue: a unit
// never waits, holding quota, for a check nobody runs any more.
func checksVerdict(u *schedulingv1alpha1.QueueUnit, current queueChecks) (ready bool, failed *schedulingv1alpha1.AdmissionCheckState) {
	if u.Status.Phase != schedulingv1alpha1.Reserved || len(u.Status.AdmissionChecks) == 0 {
		return false, nil
	}
	ready = true
	for i := range u.Status.AdmissionChecks {
		c := &u.Status.AdmissionChecks[i]
		if current.removed(c.Name) {
			continue
		}
		switch c.State {
		case schedulingv1alpha1.CheckStateRetry, schedulingv1alpha1.CheckStateRejected:
			return false, c
		case schedulingv1alpha1.CheckStateReady:
		default:
			ready = false
		}
	}
	return ready, nil
}

// setChecksPassed releases a Reserved unit whose checks are all Ready,
// resetting to Ready those its queue no longer selects and saying so.
func setChecksPassed(u *schedulingv1alpha1.QueueUnit, current queueChecks, queue string, now metav1.Time) {
	st := &u.Status
	var removed []string
	for i := range st.AdmissionChecks {
		c := &st.AdmissionChecks[i]
		if current.removed(c.Name) && c.State != schedulingv1alpha1.CheckStateReady {
			c.State, c.LastTransitionTime = schedulingv1alpha1.CheckStateReady, now
			c.Message = fmt.Sprintf("removed from queue %s: counts as Ready", queue)
			removed = append(removed, c.Name)
		}
	}
	st.Phase = schedulingv1alpha1.Dequeued
	st.Message = "admitted: every admission check is Ready"
	if len(removed) > 0 {
		st.Message += fmt.Sprintf(" (%v removed from queue %s, so counted as Ready)", removed, queue)
	}
	st.LastUpdateTime = &now
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: schedulingv1alpha1.QueueUnitAdmitted, Status: metav1.ConditionTrue, Reason: queueunit.ReasonAdmitted,
		Message: "every admission check is Ready", LastTransitionTime: now,
	})
}

// setChecksFailed sends a Reserved unit back to its queue after a check said
// Retry or Rejected: its quota is released and it may be tried again after
// an exponential backoff.
func setChecksFailed(u *schedulingv1alpha1.QueueUnit, check *schedulingv1alpha1.AdmissionCheckState, baseDelay, maxDelay time.Duration, now metav1.Time) {
	st := &u.Status
	if st.RequeueState == nil {
		st.RequeueState = &schedulingv1alpha1.RequeueState{}
	}
	st.RequeueState.Count++
	delay := baseDelay << min(st.RequeueState.Count-1, 20)
	if delay > maxDelay || delay <= 0 {
		delay = maxDelay
	}
	at := metav1.NewTime(now.Add(delay))
	st.RequeueState.RequeueAt = &at
	reason := queueunit.ReasonAdmissionCheckRetry
	if check.State == schedulingv1alpha1.CheckStateRejected {
		reason = queueunit.ReasonAdmissionCheckRejected
	}
	msg := fmt.Sprintf("admission check %s is %s", check.Name, check.State)
	if check.Message != "" {
		msg += ": " + check.Message
	}
	msg += fmt.Sprintf("; quota released, retrying after %s (attempt %d)", at.UTC().Format(time.RFC3339), st.RequeueState.Count)
	st.Phase = schedulingv1alpha1.Enqueued
	st.Message = msg
	st.LastUpdateTime = &now
	st.Admissions = nil
	st.AdmissionChecks = nil
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: schedulingv1alpha1.QueueUnitQuotaReserved, Status: metav1.ConditionFalse, Reason: reason, Message: msg, LastTransitionTime: now,
	})
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: schedulingv1alpha1.QueueUnitAdmitted, Status: metav1.ConditionFalse, Reason: reason, Message: msg, LastTransitionTime: now,
	})
}
