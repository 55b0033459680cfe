package admission

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// teamACache is a Cache with a 32-cpu node and quota team-a of max maxCPU,
// whose Queue has the annotation switchAnnotation set to "true".
func teamACache(maxCPU, switchAnnotation string) *Cache {
	c := NewCache()
	c.UpsertNode(wrappers.Node("n", "32", "64Gi"))
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("team-a", "quotas").Max(corev1.ResourceCPU, maxCPU).Obj())
	c.UpsertQueue(&schedulingv1alpha1.Queue{
		ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team-a",
			Annotations: map[string]string{switchAnnotation: "true"}},
	})
	return c
}

// TestWaitForPodsRunningCountsScheduledPods: a wait-for-pods-running queue
// stays shut while a unit it admitted has a pod set not all of whose pods
// are on nodes, though its phase says Running (one pod runs), and its head
// says which pod set is short; once all are scheduled it admits the next.
func TestWaitForPodsRunningCountsScheduledPods(t *testing.T) {
	c := teamACache("10", schedulingv1alpha1.AnnotationWaitForPodsRunning)
	first := func(scheduled int64) *schedulingv1alpha1.QueueUnit {
		return wrappers.MakeQueueUnit("first", "ns").Quota("team-a").PodSet("main", 2, "cpu", "1").
			Phase(schedulingv1alpha1.Running).RunningAdmission("main", 2, scheduled).Obj()
	}
	c.UpsertUnit(first(1))
	next := wrappers.MakeQueueUnit("next", "ns").Quota("team-a").PodSet("main", 1, "cpu", "1").Obj()
	next.CreationTimestamp = metav1.NewTime(time.Unix(100, 0))
	c.UpsertUnit(next)

	type outcome struct {
		Admitted []string
		Waits    map[string]string
	}
	cycle := func() outcome {
		var o outcome
		res := c.cycle(time.Unix(200, 0), -1)
		for _, a := range res.Admissions {
			o.Admitted = append(o.Admitted, a.Unit)
		}
		for _, w := range res.Waits {
			if o.Waits == nil {
				o.Waits = map[string]string{}
			}
			o.Waits[w.Unit] = w.Reason
		}
		return o
	}
	want := outcome{Waits: map[string]string{"ns/next": "queue team-a waits for ns/first to be running (wait-for-pods-running): pod set main has 1 of 2 pods scheduled"}}
	if diff := cmp.Diff(want, cycle()); diff != "" {
		t.Errorf("one of first's two pods scheduled (-want +got):\n%s", diff)
	}
	c.UpsertUnit(first(2))
	if diff := cmp.Diff(outcome{Admitted: []string{"ns/next"}}, cycle()); diff != "" {
		t.Errorf("both of first's pods scheduled (-want +got):\n%s", diff)
	}
}

// TestInQueuePreemptionTakesUnitsNotFullyRunning: in-queue preemption reads
// "not running" as the gate does: a lower-priority unit one of whose pods no
// node took is a victim, though its phase says Running; one whose pods are
// all on nodes is not.
func TestInQueuePreemptionTakesUnitsNotFullyRunning(t *testing.T) {
	for name, tc := range map[string]struct {
		scheduled   int64
		wantVictims []string
	}{
		"one of its two pods on a node": {scheduled: 1, wantVictims: []string{"ns/low"}},
		"both its pods on nodes":        {scheduled: 2},
	} {
		t.Run(name, func(t *testing.T) {
			c := teamACache("2", schedulingv1alpha1.AnnotationEnableQueueUnitPreemption)
			c.UpsertUnit(wrappers.MakeQueueUnit("low", "ns").Quota("team-a").Priority(1).PodSet("main", 2, "cpu", "1").
				Phase(schedulingv1alpha1.Running).RunningAdmission("main", 2, tc.scheduled).Obj())
			c.UpsertUnit(wrappers.MakeQueueUnit("high", "ns").Quota("team-a").Priority(10).PodSet("main", 2, "cpu", "1").Obj())
			now := time.Unix(200, 0)
			c.cycle(now, -1) // high first waits up to the preemption delay for quota to free
			var victims []string
			for _, p := range c.cycle(now.Add(policy.DefaultPreemptionDelay), -1).Preemptions {
				victims = append(victims, p.Victims...)
			}
			if diff := cmp.Diff(tc.wantVictims, victims); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
		})
	}
}
