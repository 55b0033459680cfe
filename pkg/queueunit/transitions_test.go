package queueunit_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

var now = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// after is what a transition left: what both binaries read of a unit.
type after struct {
	Changed    bool
	Phase      schedulingv1alpha1.QueueUnitPhase
	HoldsQuota bool
	Message    string
	Conditions []string // type=status/reason, sorted
	Admissions int
	Checks     []string // name=state
	RequeueAt  string
}

func observe(u *schedulingv1alpha1.QueueUnit, changed bool) after {
	a := after{Changed: changed, Phase: u.Status.Phase, HoldsQuota: queueunit.HoldsQuota(u), Message: u.Status.Message, Admissions: len(u.Status.Admissions)}
	for _, c := range u.Status.Conditions {
		a.Conditions = append(a.Conditions, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	slices.Sort(a.Conditions)
	for _, c := range u.Status.AdmissionChecks {
		a.Checks = append(a.Checks, fmt.Sprintf("%s=%s", c.Name, c.State))
	}
	if rs := u.Status.RequeueState; rs != nil && rs.RequeueAt != nil {
		a.RequeueAt = fmt.Sprintf("%s (attempt %d)", rs.RequeueAt.Sub(now.Time), rs.Count)
	}
	return a
}

// unit is a one-pod unit asking 1 cpu in phase p; managed: an extension
// follows its job (consumerRef set).
func unit(p schedulingv1alpha1.QueueUnitPhase, managed bool) *schedulingv1alpha1.QueueUnit {
	u := &schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "u"},
		Spec:       schedulingv1alpha1.QueueUnitSpec{Resource: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		Status:     schedulingv1alpha1.QueueUnitStatus{Phase: p},
	}
	if managed {
		u.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Job", Name: "j"}
	}
	return u
}

func admitted(managed bool, checks ...string) *schedulingv1alpha1.QueueUnit {
	u := unit(schedulingv1alpha1.Enqueued, managed)
	queueunit.Admit(u, "team-a", u.Spec.Resource, nil, checks, now)
	return u
}

func evicted() *schedulingv1alpha1.QueueUnit {
	u := admitted(true)
	queueunit.Evict(u, schedulingv1alpha1.EvictedByPreemption, "preempted", now)
	return u
}

func withCheckStates(u *schedulingv1alpha1.QueueUnit, states ...schedulingv1alpha1.CheckState) *schedulingv1alpha1.QueueUnit {
	for i, s := range states {
		u.Status.AdmissionChecks[i].State = s
	}
	return u
}

// TestTransitions is every status transition of a QueueUnit, by either
// binary, from the states it is made in.
func TestTransitions(t *testing.T) {
	backoff := queueunit.Backoff{Base: 10 * time.Second, Max: time.Minute}
	const (
		reserved   = "QuotaReserved=True/QuotaReserved"
		admittedOK = "Admitted=True/Admitted"
	)
	cases := map[string]struct {
		unit       *schedulingv1alpha1.QueueUnit
		transition func(*schedulingv1alpha1.QueueUnit) bool
		want       after
	}{
		// koord-queue
		"admitted without checks: Dequeued": {
			unit: unit(schedulingv1alpha1.Enqueued, true),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				queueunit.Admit(u, "team-a", u.Spec.Resource, nil, nil, now)
				return true
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Dequeued, HoldsQuota: true, Message: "admitted by queue team-a",
				Conditions: []string{admittedOK, reserved}, Admissions: 1},
		},
		"admitted with checks: Reserved, each check Pending": {
			unit: unit(schedulingv1alpha1.Enqueued, true),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				queueunit.Admit(u, "team-a", u.Spec.Resource, nil, []string{"prov"}, now)
				return true
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Reserved, HoldsQuota: true, Message: "quota reserved in queue team-a; waiting for admission checks [prov]",
				Conditions: []string{"Admitted=False/AdmissionChecksPending", reserved}, Admissions: 1, Checks: []string{"prov=Pending"}},
		},
		"an evicted unit admitted again: Evicted turns False": {
			unit: evicted(),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				u.Status.Admissions = nil // its pods went
				queueunit.Admit(u, "team-a", u.Spec.Resource, nil, nil, now)
				return true
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Dequeued, HoldsQuota: true, Message: "admitted by queue team-a",
				Conditions: []string{admittedOK, "Evicted=False/Readmitted", reserved}, Admissions: 1},
		},
		"evicted while its job's pods run: Enqueued, still holding quota": {
			unit: admitted(true),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				return queueunit.Evict(u, schedulingv1alpha1.EvictedByPreemption, "preempted", now)
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Enqueued, HoldsQuota: true, Message: "preempted",
				Conditions: []string{"Admitted=False/Preempted", "Evicted=True/Preempted", reserved}, Admissions: 1},
		},
		"evicted with no job to wait for: quota given back at once": {
			unit: admitted(false),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				return queueunit.Evict(u, schedulingv1alpha1.EvictedByDeactivation, "inactive", now)
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Enqueued, Message: "inactive",
				Conditions: []string{"Admitted=False/Deactivated", "Evicted=True/Deactivated", reserved}},
		},
		"evicted twice: nothing to do": {
			unit: evicted(),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				return queueunit.Evict(u, schedulingv1alpha1.EvictedByPreemption, "again", now)
			},
			want: after{Phase: schedulingv1alpha1.Enqueued, HoldsQuota: true, Message: "preempted",
				Conditions: []string{"Admitted=False/Preempted", "Evicted=True/Preempted", reserved}, Admissions: 1},
		},
		"a unit backing off after its running timeout is not evicted: its backoff stands": {
			unit: func() *schedulingv1alpha1.QueueUnit {
				u := admitted(true)
				u.Status.Phase, u.Status.Message = schedulingv1alpha1.TimeoutBackoff, "backing off"
				return u
			}(),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				return queueunit.Evict(u, schedulingv1alpha1.EvictedByPreemption, "preempted", now)
			},
			want: after{Phase: schedulingv1alpha1.TimeoutBackoff, HoldsQuota: true, Message: "backing off",
				Conditions: []string{admittedOK, reserved}, Admissions: 1},
		},
		"a waiting unit is not evicted": {
			unit: unit(schedulingv1alpha1.Enqueued, true),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				return queueunit.Evict(u, schedulingv1alpha1.EvictedByPreemption, "preempted", now)
			},
			want: after{Phase: schedulingv1alpha1.Enqueued},
		},
		"every check Ready: Dequeued": {
			unit: withCheckStates(admitted(true, "prov"), schedulingv1alpha1.CheckStateReady),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				queueunit.PassChecks(u, queueunit.Checks{Names: []string{"prov"}, Known: true}, "team-a", now)
				return true
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Dequeued, HoldsQuota: true, Message: "admitted: every admission check is Ready",
				Conditions: []string{admittedOK, reserved}, Admissions: 1, Checks: []string{"prov=Ready"}},
		},
		"a check taken off the queue counts as Ready, and says so": {
			unit: withCheckStates(admitted(true, "prov", "gone"), schedulingv1alpha1.CheckStateReady, schedulingv1alpha1.CheckStatePending),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				queueunit.PassChecks(u, queueunit.Checks{Names: []string{"prov"}, Known: true}, "team-a", now)
				return true
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Dequeued, HoldsQuota: true,
				Message:    "admitted: every admission check is Ready ([gone] removed from queue team-a, so counted as Ready)",
				Conditions: []string{admittedOK, reserved}, Admissions: 1, Checks: []string{"prov=Ready", "gone=Ready"}},
		},
		"a check said Retry: quota given back, backing off": {
			unit: withCheckStates(admitted(true, "prov"), schedulingv1alpha1.CheckStateRetry),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				queueunit.FailChecks(u, &u.Status.AdmissionChecks[0], backoff, now)
				return true
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Enqueued,
				Message:    "admission check prov is Retry; quota released, retrying after 2026-01-01T00:00:10Z (attempt 1)",
				Conditions: []string{"Admitted=False/AdmissionCheckRetry", "QuotaReserved=False/AdmissionCheckRetry"}, RequeueAt: "10s (attempt 1)"},
		},
		"a check Rejected it a third time: the backoff doubles, up to its max": {
			unit: func() *schedulingv1alpha1.QueueUnit {
				u := withCheckStates(admitted(true, "prov"), schedulingv1alpha1.CheckStateRejected)
				u.Status.RequeueState = &schedulingv1alpha1.RequeueState{Count: 2}
				return u
			}(),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				queueunit.FailChecks(u, &u.Status.AdmissionChecks[0], backoff, now)
				return true
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Enqueued,
				Message:    "admission check prov is Rejected; quota released, retrying after 2026-01-01T00:00:40Z (attempt 3)",
				Conditions: []string{"Admitted=False/AdmissionCheckRejected", "QuotaReserved=False/AdmissionCheckRejected"}, RequeueAt: "40s (attempt 3)"},
		},
		"why a unit waits": {
			unit:       unit(schedulingv1alpha1.Enqueued, true),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool { return queueunit.Explain(u, "cpu 4 of max 4 used") },
			want:       after{Changed: true, Phase: schedulingv1alpha1.Enqueued, Message: "cpu 4 of max 4 used"},
		},
		"why a unit waits, said already: nothing to write": {
			unit: func() *schedulingv1alpha1.QueueUnit {
				u := unit(schedulingv1alpha1.Enqueued, true)
				u.Status.Message = "cpu 4 of max 4 used"
				return u
			}(),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool { return queueunit.Explain(u, "cpu 4 of max 4 used") },
			want:       after{Phase: schedulingv1alpha1.Enqueued, Message: "cpu 4 of max 4 used"},
		},
		"a unit backing off after its running timeout keeps its phase and its own message": {
			unit: func() *schedulingv1alpha1.QueueUnit {
				u := unit(schedulingv1alpha1.TimeoutBackoff, true)
				u.Status.Message = "no pod of the job ran within the running timeout"
				return u
			}(),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				return queueunit.Explain(u, "backing off after its running timeout")
			},
			want: after{Phase: schedulingv1alpha1.TimeoutBackoff, Message: "no pod of the job ran within the running timeout"},
		},
		"an admitted unit is not told why it waits": {
			unit:       admitted(true),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool { return queueunit.Explain(u, "cpu 4 of max 4 used") },
			want: after{Phase: schedulingv1alpha1.Dequeued, HoldsQuota: true, Message: "admitted by queue team-a",
				Conditions: []string{admittedOK, reserved}, Admissions: 1},
		},

		// koord-queue-controllers
		"a new unit is Enqueued with its job's warnings": {
			unit:       unit("", true),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool { return queueunit.Enqueue(u, "no requests", now) },
			want:       after{Changed: true, Phase: schedulingv1alpha1.Enqueued, Message: "no requests"},
		},
		"a new unit without warnings is not written: its empty phase is Enqueued": {
			unit:       unit("", true),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool { return queueunit.Enqueue(u, "", now) },
			want:       after{},
		},
		"a unit with a phase is not enqueued again": {
			unit:       admitted(true),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool { return queueunit.Enqueue(u, "no requests", now) },
			want: after{Phase: schedulingv1alpha1.Dequeued, HoldsQuota: true, Message: "admitted by queue team-a",
				Conditions: []string{admittedOK, reserved}, Admissions: 1},
		},
		"its released job runs all its pods: Running, PodsReady": {
			unit: admitted(true),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				return queueunit.FollowJob(u, queueunit.JobState{Pods: map[string]queueunit.PodCount{"main": {Running: 1, Scheduled: 1}}}, now)
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Running, HoldsQuota: true, Message: "admitted by queue team-a",
				Conditions: []string{admittedOK, "PodsReady=True/PodsReady", reserved}, Admissions: 1},
		},
		"its job finished: Succeed, quota given back": {
			unit: admitted(true),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				return queueunit.FollowJob(u, queueunit.JobState{Finished: true, Succeeded: true}, now)
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Succeed, Message: "The job succeeded",
				Conditions: []string{admittedOK, "Finished=True/Succeeded", reserved}},
		},
		"its job failed: Failed, quota given back": {
			unit: admitted(true),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				return queueunit.FollowJob(u, queueunit.JobState{Finished: true, Message: "BackoffLimitExceeded"}, now)
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Failed, Message: "The job failed: BackoffLimitExceeded",
				Conditions: []string{admittedOK, "Finished=True/Failed", reserved}},
		},
		"evicted, its job's pods still run: the quota is kept": {
			unit: evicted(),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				return queueunit.FollowJob(u, queueunit.JobState{Suspended: true, Pods: map[string]queueunit.PodCount{"main": {Running: 1, Scheduled: 1}}}, now)
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Enqueued, HoldsQuota: true, Message: "preempted",
				Conditions: []string{"Admitted=False/Preempted", "Evicted=True/Preempted", reserved}, Admissions: 1},
		},
		"evicted, its job's pods gone: the quota is given back": {
			unit: evicted(),
			transition: func(u *schedulingv1alpha1.QueueUnit) bool {
				return queueunit.FollowJob(u, queueunit.JobState{Suspended: true}, now)
			},
			want: after{Changed: true, Phase: schedulingv1alpha1.Enqueued, Message: "preempted",
				Conditions: []string{"Admitted=False/Preempted", "Evicted=True/Preempted", reserved}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			changed := tc.transition(tc.unit)
			if diff := cmp.Diff(tc.want, observe(tc.unit, changed)); diff != "" {
				t.Errorf("after the transition (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAdmissible: an admission decided for a request is written only while
// the unit may still be admitted as decided.
func TestAdmissible(t *testing.T) {
	oneCPU := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	cases := map[string]struct {
		unit *schedulingv1alpha1.QueueUnit
		want bool
	}{
		"waiting, as decided": {unit: unit(schedulingv1alpha1.Enqueued, true), want: true},
		"new, no phase yet":   {unit: unit("", true), want: true},
		"admitted already":    {unit: admitted(true)},
		"evicted, holding":    {unit: evicted()},
		"finished":            {unit: unit(schedulingv1alpha1.Succeed, true)},
		"deactivated": {unit: func() *schedulingv1alpha1.QueueUnit {
			u := unit(schedulingv1alpha1.Enqueued, true)
			u.Spec.Active = new(bool)
			return u
		}()},
		"being deleted": {unit: func() *schedulingv1alpha1.QueueUnit {
			u := unit(schedulingv1alpha1.Enqueued, true)
			u.DeletionTimestamp = &now
			return u
		}()},
		"labelled for another quota since the decision": {unit: func() *schedulingv1alpha1.QueueUnit {
			u := unit(schedulingv1alpha1.Enqueued, true)
			u.Labels = map[string]string{elasticquotav1alpha1.LabelQuotaName: "team-b"}
			return u
		}()},
		"labelled for the quota decided": {unit: func() *schedulingv1alpha1.QueueUnit {
			u := unit(schedulingv1alpha1.Enqueued, true)
			u.Labels = map[string]string{elasticquotav1alpha1.LabelQuotaName: "team-a"}
			return u
		}(), want: true},
		"resized since the decision": {unit: func() *schedulingv1alpha1.QueueUnit {
			u := unit(schedulingv1alpha1.Enqueued, true)
			u.Spec.Resource[corev1.ResourceCPU] = resource.MustParse("2")
			return u
		}()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := queueunit.Admissible(tc.unit, "team-a", oneCPU, nil); got != tc.want {
				t.Errorf("Admissible = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestChecksVerdict(t *testing.T) {
	reserved := func(states ...string) *schedulingv1alpha1.QueueUnit {
		u := &schedulingv1alpha1.QueueUnit{Status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Reserved}}
		for i := 0; i+1 < len(states); i += 2 {
			u.Status.AdmissionChecks = append(u.Status.AdmissionChecks, schedulingv1alpha1.AdmissionCheckState{
				Name: states[i], State: schedulingv1alpha1.CheckState(states[i+1])})
		}
		return u
	}
	both := queueunit.Checks{Names: []string{"a", "b"}, Known: true}
	cases := map[string]struct {
		unit       *schedulingv1alpha1.QueueUnit
		current    queueunit.Checks
		wantReady  bool
		wantFailed string
	}{
		"all Ready":                                  {unit: reserved("a", "Ready", "b", "Ready"), current: both, wantReady: true},
		"one Pending":                                {unit: reserved("a", "Ready", "b", "Pending"), current: both},
		"Retry sends it back":                        {unit: reserved("a", "Ready", "b", "Retry"), current: both, wantFailed: "b"},
		"a Pending check taken off the queue":        {unit: reserved("a", "Ready", "b", "Pending"), current: queueunit.Checks{Names: []string{"a"}, Known: true}, wantReady: true},
		"a Rejected check taken off the queue":       {unit: reserved("a", "Ready", "b", "Rejected"), current: queueunit.Checks{Names: []string{"a"}, Known: true}, wantReady: true},
		"every check taken off the queue":            {unit: reserved("a", "Pending"), current: queueunit.Checks{Known: true}, wantReady: true},
		"an unknown queue changes nothing":           {unit: reserved("a", "Ready", "b", "Pending"), current: queueunit.Checks{}},
		"a unit that is not Reserved has no verdict": {unit: &schedulingv1alpha1.QueueUnit{}, current: both},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ready, failed := queueunit.ChecksVerdict(tc.unit, tc.current)
			gotFailed := ""
			if failed != nil {
				gotFailed = failed.Name
			}
			if ready != tc.wantReady || gotFailed != tc.wantFailed {
				t.Errorf("ChecksVerdict = %v, %q; want %v, %q", ready, gotFailed, tc.wantReady, tc.wantFailed)
			}
		})
	}
}
