package admission

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// admittedUnit is a unit of a batch Job of two pods of cpu each, admitted
// in quota team as the writer leaves it.
func admittedUnit(name, cpu string) *schedulingv1alpha1.QueueUnit {
	u := wrappers.MakeQueueUnit(name, "ns").Quota("team").Consumer().PodSet("main", 2, "cpu", cpu).Obj()
	queueunit.Admit(u, "team", queueunit.Request(u), nil, nil, metav1.NewTime(time.Unix(100, 0)))
	return u
}

// jobPod is pod i of the Job name, on node n1, asking cpu.
func jobPod(name string, i int, cpu string) *wrappers.PodWrapper {
	return wrappers.MakePod(name+"-"+string(rune('a'+i)), "ns").Controller("batch/v1", "Job", name).Quota("team").Requests("cpu", cpu).Node("n1")
}

// TestQuotaIsHeldUntilThePodsAreGone: a unit's quota is charged from its
// admission until the last of its job's pods has left its node, whatever
// its phase says meanwhile; the unit waiting behind it is admitted only
// into room the pods have left.
func TestQuotaIsHeldUntilThePodsAreGone(t *testing.T) {
	cases := map[string]struct {
		// after is what becomes of the running unit while its two pods
		// are still on their nodes (being deleted).
		after func(c *Cache, u *schedulingv1alpha1.QueueUnit)
		// wantWaiting: the unit itself is queued again once its pods go.
		wantWaiting bool
	}{
		"its job finished": {
			after: func(c *Cache, u *schedulingv1alpha1.QueueUnit) {
				queueunit.FollowJob(u, queueunit.JobState{Finished: true, Succeeded: true}, metav1.Now())
				c.UpsertUnit(u)
			},
		},
		"it was evicted and its extension saw its pods as gone": {
			after: func(c *Cache, u *schedulingv1alpha1.QueueUnit) {
				queueunit.Evict(u, schedulingv1alpha1.EvictedByPreemption, "preempted", metav1.Now())
				queueunit.FollowJob(u, queueunit.JobState{Suspended: true}, metav1.Now())
				c.UpsertUnit(u)
			},
			wantWaiting: true,
		},
		"its unit was deleted with its job, the pods orphaned": {
			after: func(c *Cache, u *schedulingv1alpha1.QueueUnit) {
				c.DeleteUnit(u.Namespace, u.Name)
				for i := range 2 {
					// The garbage collector takes the orphans' owner
					// reference away; the release's annotation stays.
					c.UpsertPod(wrappers.MakePod("run-"+string(rune('a'+i)), "ns").OfUnit("run", "main").Quota("team").Requests("cpu", "2").Node("n1").Deleting().Obj())
				}
			},
		},
		"its unit was deleted, the pods unannotated and orphaned": {
			after: func(c *Cache, u *schedulingv1alpha1.QueueUnit) {
				c.DeleteUnit(u.Namespace, u.Name)
				for i := range 2 {
					c.UpsertPod(wrappers.MakePod("run-"+string(rune('a'+i)), "ns").Quota("team").Requests("cpu", "2").Node("n1").Deleting().Obj())
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := teamCache("4")
			run := admittedUnit("run", "2")
			c.UpsertUnit(run)
			for i := range 2 {
				c.UpsertPod(jobPod("run", i, "2").Deleting().Obj())
			}
			next := wrappers.MakeQueueUnit("next", "ns").Quota("team").Request(corev1.ResourceCPU, "4").Obj()
			next.CreationTimestamp = metav1.NewTime(time.Unix(200, 0))
			c.UpsertUnit(next)

			tc.after(c, run.DeepCopy())
			if res := c.cycle(time.Unix(300, 0), -1); len(res.Admissions) > 0 {
				t.Fatalf("admitted %v while the pods of run hold team's 4 cpu", res.Admissions)
			}
			if used := c.core.Quotas().Used("team")[corev1.ResourceCPU]; used.String() != "4" {
				t.Errorf("team uses %s cpu while run's pods are on their nodes, want 4", used.String())
			}

			for i := range 2 {
				c.DeletePod("ns", "run-"+string(rune('a'+i)))
			}
			res := c.cycle(time.Unix(400, 0), -1)
			var admitted []string
			for _, a := range res.Admissions {
				admitted = append(admitted, a.Unit)
			}
			want := []string{"ns/next"}
			if tc.wantWaiting {
				want = []string{"ns/run"} // first in line, and fits again
			}
			if diff := cmp.Diff(want, admitted); diff != "" {
				t.Errorf("admitted once the pods are gone (-want +got):\n%s", diff)
			}
		})
	}
}

// TestALeavingUnitSaysWhatItWaitsFor: a unit whose quota was given back
// while its pods are still on their nodes is out of its queue, and says
// why; a deleted unit's pods are shown under its name until they are gone.
func TestALeavingUnitSaysWhatItWaitsFor(t *testing.T) {
	c := teamCache("8")
	run := admittedUnit("run", "1")
	c.UpsertUnit(run)
	c.UpsertPod(jobPod("run", 0, "1").Obj())
	queueunit.Evict(run, schedulingv1alpha1.EvictedByPreemption, "preempted", metav1.Now())
	queueunit.FollowJob(run, queueunit.JobState{Suspended: true}, metav1.Now())
	c.UpsertUnit(run)

	v, ok := c.QueueUnit("ns", "run")
	if !ok || !strings.Contains(v.Reason, "waiting for 1 pod(s) of its job still hold cpu=1 of quota team on their nodes to leave them") {
		t.Errorf("the evicted unit's view: %+v, want it to say its pod holds its quota", v)
	}
	c.DeleteUnit("ns", "run")
	if v, ok := c.QueueUnit("ns", "run"); !ok || !strings.HasPrefix(v.Reason, "deleted; 1 pod(s) of its job still hold cpu=1") {
		t.Errorf("the deleted unit's view: %+v (shown: %v), want it to say its pod is still charged", v, ok)
	}
	c.DeletePod("ns", "run-a")
	if _, ok := c.QueueUnit("ns", "run"); ok {
		t.Errorf("the deleted unit is still shown once its pod is gone")
	}
	if used := c.core.Quotas().Used("team")[corev1.ResourceCPU]; !used.IsZero() {
		t.Errorf("team uses %s cpu once the pod is gone", used.String())
	}
}

// TestPodsPastTheirAdmissionAreCharged: pods grown, or added, past what
// their unit was admitted with are charged what they hold.
func TestPodsPastTheirAdmissionAreCharged(t *testing.T) {
	cases := map[string]struct {
		pods []*corev1.Pod
		want string
	}{
		"as admitted": {
			pods: []*corev1.Pod{jobPod("run", 0, "1").Obj(), jobPod("run", 1, "1").Obj()},
			want: "2",
		},
		"a pod's template grown by hand": {
			pods: []*corev1.Pod{jobPod("run", 0, "1").Obj(), jobPod("run", 1, "3").Obj()},
			want: "4",
		},
		"a pod added by hand": {
			pods: []*corev1.Pod{jobPod("run", 0, "1").Obj(), jobPod("run", 1, "1").Obj(), jobPod("run", 2, "1").Obj()},
			want: "3",
		},
		"a child made under the job's unit by its annotation": {
			pods: []*corev1.Pod{jobPod("run", 0, "1").Obj(), jobPod("run", 1, "1").Obj(),
				wrappers.MakePod("child", "ns").Controller("batch/v1", "Job", "child").OfUnit("run", "main").Requests("cpu", "8").Node("n1").Obj()},
			want: "10",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := teamCache("100")
			c.UpsertUnit(admittedUnit("run", "1"))
			for _, p := range tc.pods {
				c.UpsertPod(p)
			}
			if used := c.core.Quotas().Used("team")[corev1.ResourceCPU]; used.String() != tc.want {
				t.Errorf("team uses %s cpu, want %s", used.String(), tc.want)
			}
		})
	}
}

// TestPodsNoUnitClaimsAreChargedAsKoordSchedulerDoes: pods of no queued
// job count where koord-scheduler charges them: their quota, or, for the
// system and default quotas, out of what the classic tree hands out.
func TestPodsNoUnitClaimsAreChargedAsKoordSchedulerDoes(t *testing.T) {
	c := NewCache()
	c.UpsertNode(wrappers.Node("n1", "10", "100Gi"))
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "quotas").Max("cpu", "10").Obj())
	c.UpsertElasticQuota(wrappers.MakeElasticQuota(elasticquotav1alpha1.SystemQuotaName, "quotas").
		Annotation(elasticquotav1alpha1.AnnotationQuotaNamespaces, `["kube-system"]`).Obj())
	c.UpsertElasticQuota(wrappers.MakeElasticQuota(elasticquotav1alpha1.RootQuotaName, "quotas").Obj())
	for _, q := range []string{"team", elasticquotav1alpha1.RootQuotaName} {
		c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: q}})
	}
	c.UpsertPod(wrappers.MakePod("bare", "ns").Quota("team").Requests("cpu", "2").Node("n1").Obj())
	c.UpsertPod(wrappers.MakePod("pending", "ns").Quota("team").Requests("cpu", "2").Obj())
	c.UpsertPod(wrappers.MakePod("agent-x", "kube-system").Controller("apps/v1", "DaemonSet", "agent").Requests("cpu", "3").Node("n1").Obj())
	c.UpsertPod(wrappers.MakePod("done", "kube-system").Requests("cpu", "3").Node("n1").Phase(corev1.PodSucceeded).Obj())

	got := map[string]string{}
	for _, q := range []string{"team", elasticquotav1alpha1.RootQuotaName} {
		used := c.core.Quotas().Used(q)[corev1.ResourceCPU]
		got[q] = used.String()
	}
	want := map[string]string{"team": "2", elasticquotav1alpha1.RootQuotaName: "5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
	unqueued := func() string {
		root, _ := c.Queue(elasticquotav1alpha1.RootQuotaName)
		held := root.QuotaTree.Unqueued[corev1.ResourceCPU]
		return held.String()
	}
	if got := unqueued(); got != "5" {
		t.Errorf("the classic tree's unqueued pods hold cpu %s, want 5 (the bare pod and the DaemonSet's)", got)
	}
	c.UpsertUnit(wrappers.MakeQueueUnit("big", "ns").Quota("team").Request(corev1.ResourceCPU, "6").Obj())
	if res := c.cycle(time.Unix(100, 0), -1); len(res.Admissions) > 0 {
		t.Errorf("admitted %v into the 5 cpu the pods leave of 10", res.Admissions)
	}
	c.DeletePod("kube-system", "agent-x")
	if res := c.cycle(time.Unix(200, 0), -1); len(res.Admissions) != 1 {
		t.Errorf("admitted %v once the DaemonSet's pod is gone, want big", res.Admissions)
	}
	if got := unqueued(); got != "2" {
		t.Errorf("once the DaemonSet's pod is gone the unqueued pods hold cpu %s, want 2", got)
	}
}

// TestPodsSeenBeforeTheirUnitAreChargedOnce: pods that reach the Cache
// before their unit, as when the pod feed lists before the units' informer
// at a start, are charged as nobody's until the unit claims them, and then
// as the unit's only.
func TestPodsSeenBeforeTheirUnitAreChargedOnce(t *testing.T) {
	cases := map[string]func(i int) *corev1.Pod{
		"pods the release named their unit on": func(i int) *corev1.Pod {
			return jobPod("run", i, "2").OfUnit("run", "main").Obj()
		},
		"pods whose controller is the unit's job": func(i int) *corev1.Pod {
			return jobPod("run", i, "2").Obj()
		},
	}
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) {
			c := teamCache("8")
			for i := range 2 {
				c.UpsertPod(pod(i))
			}
			used := func() string {
				q := c.core.Quotas().Used("team")[corev1.ResourceCPU]
				return q.String()
			}
			if got := used(); got != "4" {
				t.Fatalf("before the unit: team uses %s cpu, want the pods' 4", got)
			}
			c.UpsertUnit(admittedUnit("run", "2"))
			if got := used(); got != "4" {
				t.Errorf("once the unit is seen: team uses %s cpu, want 4 (its pods counted once)", got)
			}
			c.UpsertUnit(wrappers.MakeQueueUnit("next", "ns").Quota("team").Request(corev1.ResourceCPU, "4").Obj())
			if res := c.cycle(time.Unix(300, 0), -1); len(res.Admissions) != 1 {
				t.Errorf("admitted %v into the 4 cpu run's pods leave of 8, want next", res.Admissions)
			}
		})
	}
}
