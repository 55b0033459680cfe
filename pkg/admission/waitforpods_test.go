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

// TestWaitForPodsRunningOpensOnThePods: the gate opens once the unit's pods
// are on nodes, before its extension's count of them is written.
func TestWaitForPodsRunningOpensOnThePods(t *testing.T) {
	c := teamACache("10", schedulingv1alpha1.AnnotationWaitForPodsRunning)
	c.UpsertUnit(wrappers.MakeQueueUnit("first", "ns").Quota("team-a").PodSet("main", 2, "cpu", "1").Consumer().
		Phase(schedulingv1alpha1.Running).RunningAdmission("main", 2, 1).Obj())
	next := wrappers.MakeQueueUnit("next", "ns").Quota("team-a").PodSet("main", 1, "cpu", "1").Obj()
	next.CreationTimestamp = metav1.NewTime(time.Unix(100, 0))
	c.UpsertUnit(next)
	admitted := func() (out []string) {
		for _, a := range c.cycle(time.Unix(200, 0), -1).Admissions {
			out = append(out, a.Unit)
		}
		return out
	}
	c.UpsertPod(wrappers.MakePod("first-a", "ns").Controller("batch/v1", "Job", "first").OfUnit("first", "main").Quota("team-a").Requests("cpu", "1").Node("n").Obj())
	if got := admitted(); len(got) != 0 {
		t.Fatalf("one of first's two pods on a node: admitted %v, want none", got)
	}
	c.UpsertPod(wrappers.MakePod("first-b", "ns").Controller("batch/v1", "Job", "first").OfUnit("first", "main").Quota("team-a").Requests("cpu", "1").Node("n").Obj())
	if diff := cmp.Diff([]string{"ns/next"}, admitted()); diff != "" {
		t.Errorf("both of first's pods on nodes, one counted (-want +got):\n%s", diff)
	}
}

// TestInQueuePreemptionTakesUnitsNotFullyRunning: in-queue preemption reads
// "not running" as the gate does: a lower-priority unit one of whose pods no
// node took is a victim, though its phase says Running; one whose pods are
// all on nodes is not, whether its extension has counted them yet
// (admissions[].running) or only the pods say so: evicting a unit whose
// pods run, or ran their course, would stop work, not free room sooner.
func TestInQueuePreemptionTakesUnitsNotFullyRunning(t *testing.T) {
	pod := func(name string) *wrappers.PodWrapper {
		return wrappers.MakePod("low-"+name, "ns").Controller("batch/v1", "Job", "low").OfUnit("low", "main").Quota("team-a").Requests("cpu", "1")
	}
	for name, tc := range map[string]struct {
		counted     int64 // admissions[].running as the extension wrote it
		pods        []*corev1.Pod
		wantVictims []string
	}{
		"one of its two pods on a node":         {counted: 1, wantVictims: []string{"ns/low"}},
		"both its pods on nodes":                {counted: 2},
		"both on nodes, one not counted yet":    {counted: 1, pods: []*corev1.Pod{pod("a").Node("n").Obj(), pod("b").Node("n").Obj()}},
		"one on a node, one succeeded there":    {pods: []*corev1.Pod{pod("a").Node("n").Obj(), pod("b").Node("n").Phase(corev1.PodSucceeded).Obj()}},
		"pods of its job named no pod set":      {pods: []*corev1.Pod{pod("a").OfUnit("low", "").Node("n").Obj(), pod("b").OfUnit("low", "").Node("n").Obj()}},
		"one on a node, one waiting for one":    {counted: 1, pods: []*corev1.Pod{pod("a").Node("n").Obj(), pod("b").Obj()}, wantVictims: []string{"ns/low"}},
		"one on a node, one failed there":       {pods: []*corev1.Pod{pod("a").Node("n").Obj(), pod("b").Node("n").Phase(corev1.PodFailed).Obj()}, wantVictims: []string{"ns/low"}},
		"one on a node, one being deleted":      {pods: []*corev1.Pod{pod("a").Node("n").Obj(), pod("b").Node("n").Deleting().Obj()}, wantVictims: []string{"ns/low"}},
		"both on nodes, but of another pod set": {pods: []*corev1.Pod{pod("a").OfUnit("low", "other").Node("n").Obj(), pod("b").OfUnit("low", "other").Node("n").Obj()}, wantVictims: []string{"ns/low"}},
		// A tenant's own pods that name the unit, made by something else
		// than its job, do not make it run (nor do they spare it).
		"both on nodes, made by a ReplicaSet": {pods: []*corev1.Pod{
			wrappers.MakePod("decoy-a", "ns").Controller("apps/v1", "ReplicaSet", "decoy").OfUnit("low", "main").Quota("team-a").Requests("cpu", "1").Node("n").Obj(),
			wrappers.MakePod("decoy-b", "ns").Controller("apps/v1", "ReplicaSet", "decoy").OfUnit("low", "main").Quota("team-a").Requests("cpu", "1").Node("n").Obj()},
			wantVictims: []string{"ns/low"}},
		"both on nodes, of its job, not named for it": {pods: []*corev1.Pod{
			wrappers.MakePod("low-a", "ns").Controller("batch/v1", "Job", "low").Quota("team-a").Requests("cpu", "1").Node("n").Obj(),
			wrappers.MakePod("low-b", "ns").Controller("batch/v1", "Job", "low").Quota("team-a").Requests("cpu", "1").Node("n").Obj()}},
	} {
		t.Run(name, func(t *testing.T) {
			c := teamACache("2", schedulingv1alpha1.AnnotationEnableQueueUnitPreemption)
			c.UpsertUnit(wrappers.MakeQueueUnit("low", "ns").Quota("team-a").Priority(1).PodSet("main", 2, "cpu", "1").Consumer().
				Phase(schedulingv1alpha1.Running).RunningAdmission("main", 2, tc.counted).Obj())
			for _, p := range tc.pods {
				c.UpsertPod(p)
			}
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
