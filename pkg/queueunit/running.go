package queueunit

import (
	"fmt"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// FullyRunning reports whether an admitted unit's job has every pod it was
// admitted for on a node: each of its admissions (at least one) has running
// >= replicas, running counting the pods with a node assigned. Koord-Queue's
// wait-for-pods-running keeps a queue shut until each unit it admitted is
// fully running, not until its first pod runs: a job half of whose pods
// cannot be scheduled still holds the queue.
func FullyRunning(u *schedulingv1alpha1.QueueUnit) bool {
	return Admitted(u.EffectivePhase()) && len(u.Status.Admissions) > 0 && shortPodSet(u) == nil
}

// RunningShortfall says which pod set keeps a unit from being fully
// running, as "pod set main has 1 of 2 pods scheduled"; empty when none
// does (every admission is running, or the unit has none yet).
func RunningShortfall(u *schedulingv1alpha1.QueueUnit) string {
	a := shortPodSet(u)
	if a == nil {
		return ""
	}
	return fmt.Sprintf("pod set %s has %d of %d pods scheduled", a.Name, a.Running, a.Replicas)
}

// shortPodSet is the first admission with fewer pods running than replicas.
func shortPodSet(u *schedulingv1alpha1.QueueUnit) *schedulingv1alpha1.Admission {
	for i := range u.Status.Admissions {
		if a := &u.Status.Admissions[i]; a.Running < a.Replicas {
			return a
		}
	}
	return nil
}
