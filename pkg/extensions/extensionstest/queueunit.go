package extensionstest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// QueueUnitWrapper builds a QueueUnit.
type QueueUnitWrapper struct{ schedulingv1alpha1.QueueUnit }

// MakeQueueUnit starts a unit with no pod sets and no status.
func MakeQueueUnit(name, namespace string) *QueueUnitWrapper {
	return &QueueUnitWrapper{schedulingv1alpha1.QueueUnit{ObjectMeta: meta(name, namespace)}}
}

// PodSet adds a pod set of count pods requesting name, quantity pairs.
func (w *QueueUnitWrapper) PodSet(name string, count int32, requests ...string) *QueueUnitWrapper {
	w.Spec.PodSets = append(w.Spec.PodSets, schedulingv1alpha1.PodSet{Name: name, Count: count, Template: PodTemplate(requests...)})
	return w
}

// Phase sets the phase.
func (w *QueueUnitWrapper) Phase(p schedulingv1alpha1.QueueUnitPhase) *QueueUnitWrapper {
	w.Status.Phase = p
	return w
}

// Admission adds an admission of replicas to a pod set.
func (w *QueueUnitWrapper) Admission(name string, replicas int64) *QueueUnitWrapper {
	w.Status.Admissions = append(w.Status.Admissions, schedulingv1alpha1.Admission{Name: name, Replicas: replicas})
	return w
}

// Condition sets a condition.
func (w *QueueUnitWrapper) Condition(typ string, status metav1.ConditionStatus, reason string) *QueueUnitWrapper {
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason})
	return w
}

// Obj returns the unit.
func (w *QueueUnitWrapper) Obj() *schedulingv1alpha1.QueueUnit { return &w.QueueUnit }
