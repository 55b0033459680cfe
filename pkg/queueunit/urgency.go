package queueunit

import (
	"k8s.io/apimachinery/pkg/api/meta"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// NeededNow reports whether a change of a unit's status from before to
// after is one a reader acts on at once, and so must be written at once:
//   - a phase koord-queue tells apart (Succeed and Failed give the quota
//     back; an admitted unit that goes back to waiting);
//   - quota given back or resized (the admissions koord-queue frees quota
//     by);
//   - all an admitted job's pods on nodes, or no longer (PodsReady turning
//     True or leaving True: FullyRunning, what a wait-for-pods-running queue
//     waits for and what keeps a running unit from in-queue preemption; an
//     evicted unit is not FullyRunning whatever PodsReady says);
//   - any other condition that appears, goes or changes status.
//
// What remains waits a moment to go with the next change: pod counts, each
// pod set's running count, PodsReady appearing or staying False, messages,
// and the phase Running, which koord-queue reads as it reads Dequeued (both
// admitted). A job's pods start and stop in steps (created, on a node,
// running, done), each otherwise a write; so a job whose pods all land on
// nodes at once makes one write as it starts, the phase Running with it.
func NeededNow(before, after *schedulingv1alpha1.QueueUnitStatus) bool {
	if before.Phase != after.Phase && !(Admitted(before.Phase) && Admitted(after.Phase)) {
		return true
	}
	if len(before.Admissions) != len(after.Admissions) {
		return true
	}
	for i := range after.Admissions {
		a, b := &after.Admissions[i], &before.Admissions[i]
		if a.Name != b.Name || a.Replicas != b.Replicas || !resources.Equal(a.Resources, b.Resources) {
			return true
		}
	}
	if Admitted(after.Phase) && meta.IsStatusConditionTrue(before.Conditions, schedulingv1alpha1.QueueUnitPodsReady) !=
		meta.IsStatusConditionTrue(after.Conditions, schedulingv1alpha1.QueueUnitPodsReady) {
		return true
	}
	status := func(st *schedulingv1alpha1.QueueUnitStatus) map[string]string {
		m := map[string]string{}
		for _, c := range st.Conditions {
			if c.Type != schedulingv1alpha1.QueueUnitPodsReady {
				m[c.Type] = string(c.Status)
			}
		}
		return m
	}
	b, a := status(before), status(after)
	if len(a) != len(b) {
		return true
	}
	for typ, s := range a {
		if b[typ] != s {
			return true
		}
	}
	return false
}
