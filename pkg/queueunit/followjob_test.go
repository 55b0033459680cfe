package queueunit_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

var t0 = metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))

// running is n pods of pod set main that run, on nodes.
func running(n int32) map[string]queueunit.PodCount {
	return map[string]queueunit.PodCount{"main": {Running: n, Scheduled: n}}
}

// TestFollowJob: the extensions' transitions in detail (TestTransitions has
// one case of each).
func TestFollowJob(t *testing.T) {
	cases := map[string]struct {
		unit        *schedulingv1alpha1.QueueUnit
		job         queueunit.JobState
		wantChanged bool
		wantStatus  schedulingv1alpha1.QueueUnitStatus
	}{
		"a new unit is left Enqueued by its empty phase, not written": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).Obj(),
			job:  queueunit.JobState{Suspended: true},
		},
		"a waiting unit with nothing new is left alone": {
			unit:       wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).Phase(schedulingv1alpha1.Enqueued).Obj(),
			job:        queueunit.JobState{Suspended: true},
			wantStatus: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Enqueued},
		},
		"an admitted unit whose job runs pods is Running": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).
				Phase(schedulingv1alpha1.Dequeued).Admission("main", 2).Obj(),
			job:         queueunit.JobState{Pods: map[string]queueunit.PodCount{"main": {Running: 1, Pending: 1, Scheduled: 1, Waiting: 1}}},
			wantChanged: true,
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase: schedulingv1alpha1.Running, LastUpdateTime: &t0,
				PodState:   schedulingv1alpha1.PodState{Running: 1, Pending: 1},
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2, Running: 1}},
				Conditions: []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitPodsReady, Status: metav1.ConditionFalse,
					Reason: queueunit.ReasonWaitingForPods, Message: "pod set main has 1 of 2 pods scheduled", LastTransitionTime: t0}},
			},
		},
		"a new generation of a unit whose status still holds is not rewritten": {
			// koord-queue's spec.queue write bumps the generation; the
			// condition it observed still says the same.
			unit: func() *schedulingv1alpha1.QueueUnit {
				u := wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).
					Phase(schedulingv1alpha1.Running).RunningAdmission("main", 2, 2).Obj()
				u.Generation = 2
				u.Status.PodState = schedulingv1alpha1.PodState{Running: 2}
				u.Status.Conditions = []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitPodsReady, Status: metav1.ConditionTrue,
					Reason: queueunit.ReasonPodsReady, Message: "All 2 pods of the job are scheduled", ObservedGeneration: 1}}
				return u
			}(),
			job: queueunit.JobState{Pods: map[string]queueunit.PodCount{"main": {Running: 2, Scheduled: 2}}},
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase:      schedulingv1alpha1.Running,
				PodState:   schedulingv1alpha1.PodState{Running: 2},
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2, Running: 2}},
				Conditions: []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitPodsReady, Status: metav1.ConditionTrue,
					Reason: queueunit.ReasonPodsReady, Message: "All 2 pods of the job are scheduled", ObservedGeneration: 1}},
			},
		},
		"pods on nodes run as Koord-Queue counts them, before the framework says so: Running, PodsReady and the counts at once": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).
				Phase(schedulingv1alpha1.Dequeued).Admission("main", 2).Obj(),
			job:         queueunit.JobState{Pods: map[string]queueunit.PodCount{"main": {Pending: 2, Scheduled: 2}}},
			wantChanged: true,
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase: schedulingv1alpha1.Running, LastUpdateTime: &t0,
				PodState:   schedulingv1alpha1.PodState{Running: 2},
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2, Running: 2}},
				Conditions: []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitPodsReady, Status: metav1.ConditionTrue,
					Reason: queueunit.ReasonPodsReady, Message: "All 2 pods of the job are scheduled", LastTransitionTime: t0}},
			},
		},
		"a running job one of whose pod sets is not all scheduled is not PodsReady, and says which": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("master", 1).PodSet("worker", 2).
				Phase(schedulingv1alpha1.Running).Admission("master", 1).Admission("worker", 2).Obj(),
			job: queueunit.JobState{Pods: map[string]queueunit.PodCount{
				"master": {Running: 1, Scheduled: 1}, "worker": {Running: 1, Pending: 1, Scheduled: 1, Waiting: 1}}},
			wantChanged: true,
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase:    schedulingv1alpha1.Running,
				PodState: schedulingv1alpha1.PodState{Running: 2, Pending: 1},
				Admissions: []schedulingv1alpha1.Admission{
					{Name: "master", Replicas: 1, Running: 1}, {Name: "worker", Replicas: 2, Running: 1}},
				Conditions: []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitPodsReady, Status: metav1.ConditionFalse,
					Reason: queueunit.ReasonWaitingForPods, Message: "pod set worker has 1 of 2 pods scheduled", LastTransitionTime: t0}},
			},
		},
		"an admitted unit whose job is still suspended stays Dequeued, nothing to write": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 1).
				Phase(schedulingv1alpha1.Dequeued).Admission("main", 1).Obj(),
			job: queueunit.JobState{Suspended: true},
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase:      schedulingv1alpha1.Dequeued,
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 1}},
			},
		},
		"a released job without pods yet: nothing to write": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 1).
				Phase(schedulingv1alpha1.Dequeued).Admission("main", 1).Obj(),
			job: queueunit.JobState{},
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase:      schedulingv1alpha1.Dequeued,
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 1}},
			},
		},
		"a released job's pods waiting for a node are pending, and PodsReady says so": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).
				Phase(schedulingv1alpha1.Dequeued).Admission("main", 2).Obj(),
			job:         queueunit.JobState{Pods: map[string]queueunit.PodCount{"main": {Pending: 2, Waiting: 2}}},
			wantChanged: true,
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase:      schedulingv1alpha1.Dequeued,
				PodState:   schedulingv1alpha1.PodState{Pending: 2},
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2}},
				Conditions: []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitPodsReady, Status: metav1.ConditionFalse,
					Reason: queueunit.ReasonWaitingForPods, Message: "pod set main has 0 of 2 pods scheduled", LastTransitionTime: t0}},
			},
		},
		"counted from its pods, a running unit does not move as the framework's status catches up, nor when a pod succeeds": {
			unit: func() *schedulingv1alpha1.QueueUnit {
				u := wrappers.MakeQueueUnit("u", "ns").PodSet("main", 1).
					Phase(schedulingv1alpha1.Running).RunningAdmission("main", 1, 1).Obj()
				u.Status.PodState = schedulingv1alpha1.PodState{Running: 1}
				u.Status.Conditions = []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitPodsReady, Status: metav1.ConditionTrue,
					Reason: queueunit.ReasonPodsReady, Message: "All 1 pods of the job are scheduled"}}
				return u
			}(),
			// The Job's status counts no pod active any more: its pod
			// succeeded, and still holds its node until the Job ends.
			job: queueunit.JobState{Pods: map[string]queueunit.PodCount{"main": {Scheduled: 1}}},
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase:      schedulingv1alpha1.Running,
				PodState:   schedulingv1alpha1.PodState{Running: 1},
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 1, Running: 1}},
				Conditions: []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitPodsReady, Status: metav1.ConditionTrue,
					Reason: queueunit.ReasonPodsReady, Message: "All 1 pods of the job are scheduled"}},
			},
		},
		"all pods running make PodsReady true and running never exceeds replicas": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).
				Phase(schedulingv1alpha1.Running).Admission("main", 2).Obj(),
			job:         queueunit.JobState{Pods: running(3)},
			wantChanged: true,
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase:      schedulingv1alpha1.Running,
				PodState:   schedulingv1alpha1.PodState{Running: 2},
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2, Running: 2}},
				Conditions: []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitPodsReady, Status: metav1.ConditionTrue,
					Reason: queueunit.ReasonPodsReady, Message: "All 2 pods of the job are scheduled", LastTransitionTime: t0}},
			},
		},
		"a finished job's unit Succeeds and gives its quota back": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 1).
				Phase(schedulingv1alpha1.Running).Admission("main", 1).Obj(),
			job:         queueunit.JobState{Finished: true, Succeeded: true, Message: "done"},
			wantChanged: true,
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase: schedulingv1alpha1.Succeed, LastUpdateTime: &t0, Message: "The job succeeded: done",
				Conditions: []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitFinished, Status: metav1.ConditionTrue,
					Reason: queueunit.ReasonSucceeded, Message: "The job succeeded: done", LastTransitionTime: t0}},
			},
		},
		"a failed job's unit Fails even while it waits": {
			unit:        wrappers.MakeQueueUnit("u", "ns").PodSet("main", 1).Phase(schedulingv1alpha1.Enqueued).Obj(),
			job:         queueunit.JobState{Suspended: true, Finished: true},
			wantChanged: true,
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase: schedulingv1alpha1.Failed, LastUpdateTime: &t0, Message: "The job failed",
				Conditions: []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitFinished, Status: metav1.ConditionTrue,
					Reason: queueunit.ReasonFailed, Message: "The job failed", LastTransitionTime: t0}},
			},
		},
		"an evicted unit keeps its admissions while its pods remain": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).
				Phase(schedulingv1alpha1.Enqueued).Admission("main", 2).Obj(),
			job:         queueunit.JobState{Suspended: true, Pods: running(1)},
			wantChanged: true,
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase:      schedulingv1alpha1.Enqueued,
				PodState:   schedulingv1alpha1.PodState{Running: 1},
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2, Running: 1}},
			},
		},
		"an evicted unit keeps its admissions while a pod holds a node that its job's status no longer counts": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).
				Phase(schedulingv1alpha1.Enqueued).Admission("main", 2).Obj(),
			job:         queueunit.JobState{Suspended: true, Pods: map[string]queueunit.PodCount{"main": {Scheduled: 1}}},
			wantChanged: true,
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase:      schedulingv1alpha1.Enqueued,
				PodState:   schedulingv1alpha1.PodState{Running: 1},
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2, Running: 1}},
			},
		},
		"an evicted unit gives its admissions back once its pods are gone": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).
				Phase(schedulingv1alpha1.Enqueued).Admission("main", 2).Obj(),
			job:         queueunit.JobState{Suspended: true, Pods: running(0)},
			wantChanged: true,
			wantStatus:  schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Enqueued},
		},
		"a TimeoutBackoff unit (Koord-Queue's) gives its admissions back once its suspended job's pods are gone": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).
				Phase(schedulingv1alpha1.TimeoutBackoff).Admission("main", 2).Obj(),
			job:         queueunit.JobState{Suspended: true},
			wantChanged: true,
			wantStatus:  schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.TimeoutBackoff},
		},
		"a TimeoutBackoff unit keeps its admissions while its job's pods remain": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).
				Phase(schedulingv1alpha1.TimeoutBackoff).Admission("main", 2).Obj(),
			job:         queueunit.JobState{Suspended: true, Pods: running(1)},
			wantChanged: true,
			wantStatus: schedulingv1alpha1.QueueUnitStatus{
				Phase:      schedulingv1alpha1.TimeoutBackoff,
				PodState:   schedulingv1alpha1.PodState{Running: 1},
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2, Running: 1}},
			},
		},
		"a Reserved unit keeps its admissions while its checks run": {
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2).
				Phase(schedulingv1alpha1.Reserved).Admission("main", 2).Obj(),
			job:        queueunit.JobState{Suspended: true},
			wantStatus: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Reserved, Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			changed := queueunit.FollowJob(tc.unit, tc.job, t0)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.wantStatus, tc.unit.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if again := queueunit.FollowJob(tc.unit, tc.job, t0); again {
				t.Errorf("a second pass changed the status again: not level-based")
			}
		})
	}
}
