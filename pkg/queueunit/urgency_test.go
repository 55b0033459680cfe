package queueunit

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

func TestNeededNow(t *testing.T) {
	running := func(phase schedulingv1alpha1.QueueUnitPhase, running int64, conds ...metav1.Condition) *schedulingv1alpha1.QueueUnitStatus {
		return &schedulingv1alpha1.QueueUnitStatus{
			Phase:      phase,
			PodState:   schedulingv1alpha1.PodState{Running: int(running)},
			Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2, Running: running, Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}},
			Conditions: conds,
		}
	}
	podsReady := func(s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: schedulingv1alpha1.QueueUnitPodsReady, Status: s, Message: string(s)}
	}
	finished := metav1.Condition{Type: schedulingv1alpha1.QueueUnitFinished, Status: metav1.ConditionTrue}
	evicted := func(s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: schedulingv1alpha1.QueueUnitEvicted, Status: s}
	}
	resized := running(schedulingv1alpha1.Running, 1)
	resized.Admissions[0].Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	given := running(schedulingv1alpha1.Enqueued, 0)
	given.Admissions = nil

	cases := []struct {
		name          string
		before, after *schedulingv1alpha1.QueueUnitStatus
		want          bool
	}{
		{"pod counts only", running(schedulingv1alpha1.Dequeued, 0), running(schedulingv1alpha1.Dequeued, 1), false},
		{"PodsReady turns True: all pods on nodes", running(schedulingv1alpha1.Dequeued, 1, podsReady(metav1.ConditionFalse)), running(schedulingv1alpha1.Dequeued, 2, podsReady(metav1.ConditionTrue)), true},
		{"PodsReady appears True", running(schedulingv1alpha1.Dequeued, 0), running(schedulingv1alpha1.Running, 2, podsReady(metav1.ConditionTrue)), true},
		{"PodsReady leaves True: a pod lost its node", running(schedulingv1alpha1.Running, 2, podsReady(metav1.ConditionTrue)), running(schedulingv1alpha1.Running, 1, podsReady(metav1.ConditionFalse)), true},
		{"PodsReady leaves True as the unit is evicted: koord-queue reads the phase", running(schedulingv1alpha1.Enqueued, 2, podsReady(metav1.ConditionTrue)), running(schedulingv1alpha1.Enqueued, 2, podsReady(metav1.ConditionFalse)), false},
		{"PodsReady appears False", running(schedulingv1alpha1.Dequeued, 0), running(schedulingv1alpha1.Dequeued, 0, podsReady(metav1.ConditionFalse)), false},
		{"phase Running alone: koord-queue reads it as Dequeued", running(schedulingv1alpha1.Dequeued, 1), running(schedulingv1alpha1.Running, 1), false},
		{"phase Running with PodsReady True", running(schedulingv1alpha1.Dequeued, 1), running(schedulingv1alpha1.Running, 2, podsReady(metav1.ConditionTrue)), true},
		{"phase Succeed", running(schedulingv1alpha1.Running, 2), running(schedulingv1alpha1.Succeed, 2), true},
		{"finished", running(schedulingv1alpha1.Running, 2), running(schedulingv1alpha1.Running, 2, finished), true},
		{"a condition's status changes", running(schedulingv1alpha1.Enqueued, 0, evicted(metav1.ConditionTrue)), running(schedulingv1alpha1.Enqueued, 0, evicted(metav1.ConditionFalse)), true},
		{"quota given back", running(schedulingv1alpha1.Enqueued, 0), given, true},
		{"quota resized", running(schedulingv1alpha1.Running, 1), resized, true},
		{"nothing", running(schedulingv1alpha1.Running, 1), running(schedulingv1alpha1.Running, 1), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeededNow(tc.before, tc.after); got != tc.want {
				t.Errorf("NeededNow() = %v, want %v", got, tc.want)
			}
		})
	}
}
