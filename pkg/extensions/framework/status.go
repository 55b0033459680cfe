package framework

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// jobState is what the reconciler observed of a job.
type jobState struct {
	suspended bool
	finished  bool
	succeeded bool
	message   string
	pods      map[string]PodCount
}

func observe(job GenericJob) jobState {
	msg, ok, finished := job.Finished()
	return jobState{
		suspended: job.IsSuspended(),
		finished:  finished,
		succeeded: ok,
		message:   msg,
		pods:      job.Pods(),
	}
}

// syncStatus moves the extension's part of u's status one step toward what
// the job says, and reports whether it changed anything. It writes only the
// fields the extension owns (see the package doc).
func syncStatus(u *schedulingv1alpha1.QueueUnit, js jobState, now metav1.Time) bool {
	before := u.Status.DeepCopy()
	st := &u.Status
	setPhase := func(p schedulingv1alpha1.QueueUnitPhase) {
		if st.Phase != p {
			st.Phase, st.LastUpdateTime = p, &now
		}
	}
	if st.Phase == "" {
		setPhase(schedulingv1alpha1.Enqueued)
	}

	if js.finished {
		phase, reason, msg := schedulingv1alpha1.Failed, queueunit.ReasonFailed, "The job failed"
		if js.succeeded {
			phase, reason, msg = schedulingv1alpha1.Succeed, queueunit.ReasonSucceeded, "The job succeeded"
		}
		if js.message != "" {
			msg += ": " + js.message
		}
		if st.Phase != phase {
			setPhase(phase)
			st.Message = msg
		}
		// The quota goes back to the queue.
		st.Admissions = nil
		st.PodState = schedulingv1alpha1.PodState{}
		setCondition(u, schedulingv1alpha1.QueueUnitFinished, true, reason, msg, now)
		return !equality.Semantic.DeepEqual(before, &u.Status)
	}

	var running, pending int32
	for _, c := range js.pods {
		running += c.Running
		pending += c.Pending
	}
	st.PodState = schedulingv1alpha1.PodState{Running: int(running), Pending: int(pending)}
	for i := range st.Admissions {
		a := &st.Admissions[i]
		a.Running = min(int64(js.pods[a.Name].Running), a.Replicas)
	}

	// An evicted unit keeps its admissions until its job's pods are gone,
	// so that their quota is not handed out twice; then they go.
	if st.Phase == schedulingv1alpha1.Enqueued && js.suspended && running == 0 && pending == 0 {
		st.Admissions = nil
	}

	isAdmitted := queueunit.Admitted(st.Phase)
	if isAdmitted && !js.suspended && running > 0 {
		setPhase(schedulingv1alpha1.Running)
	}
	if isAdmitted || apimeta.FindStatusCondition(st.Conditions, schedulingv1alpha1.QueueUnitPodsReady) != nil {
		want := podsWanted(u)
		ready := isAdmitted && !js.suspended && running >= want
		reason, msg := queueunit.ReasonPodsReady, fmt.Sprintf("All %d pods of the job run", want)
		if !ready {
			reason, msg = queueunit.ReasonWaitingForPods, fmt.Sprintf("%d of %d pods of the job run", running, want)
		}
		setCondition(u, schedulingv1alpha1.QueueUnitPodsReady, ready, reason, msg, now)
	}
	return !equality.Semantic.DeepEqual(before, &u.Status)
}

// podsWanted is how many pods the job runs when all run: the admitted
// replicas, or the unit's pod set counts before admissions are written.
func podsWanted(u *schedulingv1alpha1.QueueUnit) int32 {
	var n int32
	if len(u.Status.Admissions) > 0 {
		for _, a := range u.Status.Admissions {
			n += int32(a.Replicas)
		}
		return n
	}
	for _, s := range u.Spec.PodSets {
		n += s.Count
	}
	return n
}

func setCondition(u *schedulingv1alpha1.QueueUnit, typ string, status bool, reason, msg string, now metav1.Time) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	apimeta.SetStatusCondition(&u.Status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             s,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: u.Generation,
		LastTransitionTime: now,
	})
}
