package queueunit

import (
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// NeededNow reports whether a change of a unit's status from before to
// after is one its readers act on at once, and so must be written at once:
// a new phase (Running, Succeed, Failed: users, the dashboard, koord-queue's
// accounting), quota given back or resized (the admissions koord-queue
// frees quota by), or a condition that appears or changes status other
// than PodsReady. What remains (pod counts, each pod set's running count,
// PodsReady and the messages) refreshes what is already known, and may
// wait a moment to go with the next change: a job's pods start and stop in
// bursts, and each step of a burst is otherwise a write.
//
// PodsReady may wait too: koord-queue reads it only for
// wait-for-pods-running queues, which a short wait delays by as much.
func NeededNow(before, after *schedulingv1alpha1.QueueUnitStatus) bool {
	if before.Phase != after.Phase || len(before.Admissions) != len(after.Admissions) {
		return true
	}
	for i := range after.Admissions {
		a, b := &after.Admissions[i], &before.Admissions[i]
		if a.Name != b.Name || a.Replicas != b.Replicas || !resources.Equal(a.Resources, b.Resources) {
			return true
		}
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
