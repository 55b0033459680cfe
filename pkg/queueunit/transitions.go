package queueunit

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// The status transitions of a QueueUnit. koord-queue makes the first group
// (Admit, Evict, PassChecks, FailChecks, Explain); koord-queue-controllers
// the second (Enqueue, FollowJob), as the unit's job reports its life. Each
// edits the status in memory and reports nothing of the API: patch.Patch writes
// the result. The table in docs/design/decision-core.md says who writes
// which field when.

// Admit writes an admission into a unit's status: Dequeued, or Reserved with
// each of checks Pending while its queue's admission checks select it.
// partial, for a partial admission, is the pods each pod set admitted with
// fewer than its count holds, by name (nil: every pod); the admissions'
// replicas record it, and the message says so.
func Admit(u *schedulingv1alpha1.QueueUnit, queue string, request corev1.ResourceList, partial map[string]int32, checks []string, now metav1.Time) {
	st := &u.Status
	st.Admissions = admissionsOf(u, request, partial)
	st.LastAllocateTime = &now
	st.LastUpdateTime = &now
	st.Attempts++
	if st.RequeueState != nil {
		st.RequeueState.RequeueAt = nil
	}
	reserved := "quota reserved in queue " + queue
	if note := PartialNote(u, partial); note != "" {
		reserved += fmt.Sprintf(" for %s (partial admission)", note)
	}
	setCondition(u, schedulingv1alpha1.QueueUnitQuotaReserved, true, ReasonQuotaReserved, reserved, now)
	if meta.FindStatusCondition(st.Conditions, schedulingv1alpha1.QueueUnitEvicted) != nil {
		setCondition(u, schedulingv1alpha1.QueueUnitEvicted, false, ReasonReadmitted, "admitted again", now)
	}
	st.AdmissionChecks = nil
	if len(checks) > 0 {
		st.Phase = schedulingv1alpha1.Reserved
		st.Message = fmt.Sprintf("%s; waiting for admission checks %v", reserved, checks)
		for _, name := range checks {
			st.AdmissionChecks = append(st.AdmissionChecks, schedulingv1alpha1.AdmissionCheckState{
				Name: name, State: schedulingv1alpha1.CheckStatePending, LastTransitionTime: now,
			})
		}
		setCondition(u, schedulingv1alpha1.QueueUnitAdmitted, false, ReasonAdmissionChecksPending, fmt.Sprintf("waiting for admission checks %v", checks), now)
		return
	}
	st.Phase = schedulingv1alpha1.Dequeued
	st.Message = AdmittedMessage(u, queue, partial)
	setCondition(u, schedulingv1alpha1.QueueUnitAdmitted, true, ReasonAdmitted, st.Message, now)
}

// AdmittedMessage says that queue admitted u, and with how few pods when
// partial admits fewer than it asks for: "admitted by queue q: 2 of 4 pods
// of pod set main (partial admission)".
func AdmittedMessage(u *schedulingv1alpha1.QueueUnit, queue string, partial map[string]int32) string {
	msg := "admitted by queue " + queue
	if note := PartialNote(u, partial); note != "" {
		msg += ": " + note + " (partial admission)"
	}
	return msg
}

// admissionsOf is the quota each pod set holds: its admitted pods (its
// count, or fewer as partial says) times its pod's effective request. A
// unit without pod sets holds its whole request as "main".
func admissionsOf(u *schedulingv1alpha1.QueueUnit, request corev1.ResourceList, partial map[string]int32) []schedulingv1alpha1.Admission {
	if len(u.Spec.PodSets) == 0 {
		return []schedulingv1alpha1.Admission{{Name: schedulingv1alpha1.DefaultPodSetName, Replicas: 1, Resources: request}}
	}
	out := make([]schedulingv1alpha1.Admission, 0, len(u.Spec.PodSets))
	for _, ps := range u.Spec.PodSets {
		ps.Count = admittedCount(&ps, partial)
		out = append(out, schedulingv1alpha1.Admission{
			Name:      ps.Name,
			Replicas:  int64(ps.Count),
			Resources: resources.PodSetsRequests([]schedulingv1alpha1.PodSet{ps}),
		})
	}
	return out
}

// Admissible reports whether a unit may still be admitted as decided, in
// queue for request, with the counts of a partial admission (nil: whole):
// it waits, is active, is not being deleted, names no other quota (label or
// spec.queue), asks for what the decision charged, and its pod sets still
// allow the counts, so that its admissions read back as them (PartialCounts).
// A unit resized or moved since must be decided again, or it would be
// charged without a fit check, or to a quota its pods are not charged to.
func Admissible(u *schedulingv1alpha1.QueueUnit, queue string, request corev1.ResourceList, partial map[string]int32) bool {
	named := elasticquotav1alpha1.QuotaNameFromLabels(u.Labels)
	if named == "" {
		named = u.Spec.Queue
	}
	return Waiting(u.EffectivePhase()) && !HoldsQuota(u) && u.DeletionTimestamp == nil && u.IsActive() &&
		(named == "" || named == queue) && equality.Semantic.DeepEqual(Request(u), request) && allows(u, partial)
}

// Evict sends an admitted unit back to its queue. Its admissions stay until
// its job's extension reports the pods gone (FollowJob), so its quota is
// not handed out twice; a unit no extension manages (no consumerRef) has
// nothing to wait for and gives its quota back at once. It reports false
// when there is nothing to evict: the unit holds no quota, is evicted
// already, or backs off after its running timeout (TimeoutBackoff: its job
// is being suspended and its quota given back; queued now, it would skip
// its backoff).
func Evict(u *schedulingv1alpha1.QueueUnit, reason, message string, now metav1.Time) bool {
	if !HoldsQuota(u) || (u.EffectivePhase() == schedulingv1alpha1.Enqueued && Evicted(u)) || u.Status.Phase == schedulingv1alpha1.TimeoutBackoff {
		return false
	}
	st := &u.Status
	st.Phase = schedulingv1alpha1.Enqueued
	st.Message = message
	st.LastUpdateTime = &now
	st.AdmissionChecks = nil
	if u.Spec.ConsumerRef == nil {
		st.Admissions = nil
		st.TopologyAssignments = nil
	}
	setCondition(u, schedulingv1alpha1.QueueUnitEvicted, true, reason, message, now)
	setCondition(u, schedulingv1alpha1.QueueUnitAdmitted, false, reason, message, now)
	return true
}

// Checks are the admission checks a unit's Queue selects for it now; Known
// is false while the Queue is not known (then every check the unit carries
// still counts).
type Checks struct {
	Names []string
	Known bool
}

// removed reports whether the unit carries a check its queue no longer
// selects: taken off the Queue, or its selector no longer matches.
func (q Checks) removed(name string) bool {
	return q.Known && !slices.Contains(q.Names, name)
}

// ChecksVerdict reads a Reserved unit's admission checks: all Ready, or the
// first one that sent it back (Retry or Rejected), or still pending. A check
// its queue no longer selects counts as Ready, as in Koord-Queue: a unit
// never waits, holding quota, for a check nobody runs any more.
func ChecksVerdict(u *schedulingv1alpha1.QueueUnit, current Checks) (ready bool, failed *schedulingv1alpha1.AdmissionCheckState) {
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

// PassChecks releases a Reserved unit whose checks are all Ready, resetting
// to Ready those its queue no longer selects and saying so.
func PassChecks(u *schedulingv1alpha1.QueueUnit, current Checks, queue string, now metav1.Time) {
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
	if note := PartialNote(u, PartialCounts(u)); note != "" {
		st.Message += "; " + note + " (partial admission)"
	}
	if len(removed) > 0 {
		st.Message += fmt.Sprintf(" (%v removed from queue %s, so counted as Ready)", removed, queue)
	}
	st.LastUpdateTime = &now
	setCondition(u, schedulingv1alpha1.QueueUnitAdmitted, true, ReasonAdmitted, "every admission check is Ready", now)
}

// Backoff bounds the wait after an admission check sends a unit back: Base
// doubled for each time it happened, at most Max.
type Backoff struct {
	Base, Max time.Duration
}

// FailChecks sends a Reserved unit back to its queue after a check said
// Retry or Rejected: its quota is released and it may be tried again after
// an exponential backoff.
func FailChecks(u *schedulingv1alpha1.QueueUnit, check *schedulingv1alpha1.AdmissionCheckState, backoff Backoff, now metav1.Time) {
	st := &u.Status
	if st.RequeueState == nil {
		st.RequeueState = &schedulingv1alpha1.RequeueState{}
	}
	st.RequeueState.Count++
	delay := backoff.Base << min(st.RequeueState.Count-1, 20)
	if delay > backoff.Max || delay <= 0 {
		delay = backoff.Max
	}
	at := metav1.NewTime(now.Add(delay))
	st.RequeueState.RequeueAt = &at
	reason := ReasonAdmissionCheckRetry
	if check.State == schedulingv1alpha1.CheckStateRejected {
		reason = ReasonAdmissionCheckRejected
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
	st.TopologyAssignments = nil
	st.AdmissionChecks = nil
	setCondition(u, schedulingv1alpha1.QueueUnitQuotaReserved, false, reason, msg, now)
	setCondition(u, schedulingv1alpha1.QueueUnitAdmitted, false, reason, msg, now)
}

// Explain records why a waiting unit waits, and reports false when there is
// nothing to write: it holds quota, already says so, or backs off after its
// running timeout (TimeoutBackoff: its phase and message, written by its
// extension, say why and until when).
func Explain(u *schedulingv1alpha1.QueueUnit, reason string) bool {
	if HoldsQuota(u) || u.Status.Message == reason || u.Status.Phase == schedulingv1alpha1.TimeoutBackoff {
		return false
	}
	u.Status.Message = reason
	if !Finished(u.EffectivePhase()) {
		u.Status.Phase = schedulingv1alpha1.Enqueued
	}
	return true
}

// Enqueue gives a new unit its first phase, Enqueued, with the warnings its
// extension raised about the job as message. It reports false for a unit
// that has a phase already, and for one with nothing to say: its empty
// phase is Enqueued already (EffectivePhase).
func Enqueue(u *schedulingv1alpha1.QueueUnit, message string, now metav1.Time) bool {
	if u.Status.Phase != "" || message == "" {
		return false
	}
	u.Status.Phase, u.Status.LastUpdateTime = schedulingv1alpha1.Enqueued, &now
	u.Status.Message = message
	return true
}

// PodCount is how many pods of a pod set run, wait, and hold a node.
type PodCount struct {
	// Running and Pending are as the job's framework reports them in the
	// job's status (ready, active, ...): what podState says when the
	// job's pods themselves are not seen (Scheduled and Waiting are 0).
	Running int32
	Pending int32
	// Scheduled counts the pods with a node assigned that have neither
	// failed nor are being deleted (one that succeeded still counts):
	// admissions[].running, as Koord-Queue counts it, and what
	// wait-for-pods-running waits for (FullyRunning).
	Scheduled int32
	// Waiting counts the pods not on a node yet that have neither finished
	// nor are being deleted.
	Waiting int32
}

// podState is a pod set's share of podState. Where the job's pods are seen
// it counts them as Koord-Queue does: those on a node run (at most as many
// as admitted, once admitted), the others are pending. So the counts change
// when the pods do, not a step later when the job's controller writes its
// status. Where no pod is seen it is what the framework reports.
func (c PodCount) podState(admitted *schedulingv1alpha1.Admission) (running, pending int32) {
	if c.Scheduled+c.Waiting == 0 {
		return c.Running, c.Pending
	}
	running = c.Scheduled
	if admitted != nil {
		running = int32(min(int64(running), admitted.Replicas))
	}
	return running, c.Waiting
}

// JobState is what an extension observed of a unit's job.
type JobState struct {
	Suspended bool
	// ReleasedAt is when the extension last released the job, as the job
	// records it (its koord-queue/job-dequeue-timestamp); zero when it
	// records no time that parses.
	ReleasedAt time.Time
	Finished   bool
	Succeeded  bool
	// Message says how the job finished.
	Message string
	// Pods by pod set.
	Pods map[string]PodCount
}

// FollowJob moves the extension's part of u's status one step toward what
// its job says (phase Running, Succeed or Failed; pod counts; the Finished
// and PodsReady conditions; admissions given back once an evicted job's
// pods are gone), and reports whether it changed anything.
func FollowJob(u *schedulingv1alpha1.QueueUnit, js JobState, now metav1.Time) bool {
	before := u.Status.DeepCopy()
	st := &u.Status
	setPhase := func(p schedulingv1alpha1.QueueUnitPhase) {
		if st.Phase != p {
			st.Phase, st.LastUpdateTime = p, &now
		}
	}
	// An empty phase is Enqueued (EffectivePhase): writing it would be a
	// write per unit that tells no reader anything, and races with
	// koord-queue's admission of the unit.

	if js.Finished {
		phase, reason, msg := schedulingv1alpha1.Failed, ReasonFailed, "The job failed"
		if js.Succeeded {
			phase, reason, msg = schedulingv1alpha1.Succeed, ReasonSucceeded, "The job succeeded"
		}
		if js.Message != "" {
			msg += ": " + js.Message
		}
		if st.Phase != phase {
			setPhase(phase)
			st.Message = msg
		}
		// The quota goes back to the queue.
		st.Admissions = nil
		st.TopologyAssignments = nil
		st.PodState = schedulingv1alpha1.PodState{}
		setCondition(u, schedulingv1alpha1.QueueUnitFinished, true, reason, msg, now)
		return !equality.Semantic.DeepEqual(before, &u.Status)
	}

	var running, pending, scheduled int32
	for name, c := range js.Pods {
		r, p := c.podState(admission(st, name))
		running += r
		pending += p
		scheduled += c.Scheduled
	}
	st.PodState = schedulingv1alpha1.PodState{Running: int(running), Pending: int(pending)}
	for i := range st.Admissions {
		a := &st.Admissions[i]
		a.Running = min(int64(js.Pods[a.Name].Scheduled), a.Replicas)
	}

	// An evicted unit keeps its admissions until its job's pods are gone,
	// so that their quota is not handed out twice; then they go. So does a
	// unit Koord-Queue sent to TimeoutBackoff (its job suspended again after
	// its running timeout), which it leaves with its admissions: kept, they
	// would hold the quota for ever, since nothing admits a unit that holds.
	if (st.Phase == schedulingv1alpha1.Enqueued || st.Phase == schedulingv1alpha1.TimeoutBackoff) &&
		js.Suspended && running == 0 && pending == 0 && scheduled == 0 {
		st.Admissions = nil
		st.TopologyAssignments = nil
	}

	// The phase says that the job runs pods (podState's running: on a
	// node, or as its framework reports). PodsReady, as the queue's
	// wait-for-pods-running, says whether all of them are on nodes
	// (FullyRunning); it appears once the released job has pods, so the
	// moment of admission, when none can be on a node yet, is no write of
	// its own.
	isAdmitted := Admitted(st.Phase)
	if isAdmitted && !js.Suspended && running > 0 {
		setPhase(schedulingv1alpha1.Running)
	}
	hasPods := running+pending+scheduled > 0
	if isAdmitted && !js.Suspended && hasPods || meta.FindStatusCondition(st.Conditions, schedulingv1alpha1.QueueUnitPodsReady) != nil {
		want := podsWanted(u)
		ready := isAdmitted && !js.Suspended && FullyRunning(u)
		reason, msg := ReasonPodsReady, fmt.Sprintf("All %d pods of the job are scheduled", want)
		if !ready {
			reason, msg = ReasonWaitingForPods, RunningShortfall(u)
			if msg == "" {
				msg = fmt.Sprintf("%d of %d pods of the job are scheduled", min(scheduled, want), want)
			}
		}
		setCondition(u, schedulingv1alpha1.QueueUnitPodsReady, ready, reason, msg, now)
	}
	return !equality.Semantic.DeepEqual(before, &u.Status)
}

// admission is st's admission of the pod set called name, nil if none.
func admission(st *schedulingv1alpha1.QueueUnitStatus, name string) *schedulingv1alpha1.Admission {
	for i := range st.Admissions {
		if st.Admissions[i].Name == name {
			return &st.Admissions[i]
		}
	}
	return nil
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
	// A condition that still says the same is left as it is, observed
	// generation included: koord-queue's own spec writes (spec.queue) bump
	// the generation without changing what the condition means, and
	// rewriting it for that is a write per unit no reader needs.
	if c := meta.FindStatusCondition(u.Status.Conditions, typ); c != nil && c.Status == s && c.Reason == reason && c.Message == msg {
		return
	}
	meta.SetStatusCondition(&u.Status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             s,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: u.Generation,
		LastTransitionTime: now,
	})
}
