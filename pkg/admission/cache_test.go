package admission

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestDuplicateQuotaNames: quota names are global in Koordinator. Of two
// ElasticQuotas with one name in two namespaces, whatever order they arrive
// in, the older is used, the other is reported (in the visibility API, and
// to the Queue status writer, which raises a Warning event on it:
// TestDuplicateQuotaNameWarnedOnce in pkg/queue), and deleting the one used
// uses the other.
func TestDuplicateQuotaNames(t *testing.T) {
	at := func(ns string, sec int64, max string) *elasticquotav1alpha1.ElasticQuota {
		return &elasticquotav1alpha1.ElasticQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team", UID: types.UID(ns), CreationTimestamp: metav1.Unix(sec, 0)},
			Spec:       elasticquotav1alpha1.ElasticQuotaSpec{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(max)}},
		}
	}
	older, newer := at("first", 100, "4"), at("second", 200, "8")
	type seen struct {
		Namespace, Max string
		Ignored        []string
		Duplicates     []string
	}
	for name, order := range map[string][]*elasticquotav1alpha1.ElasticQuota{
		"older first": {older, newer},
		"newer first": {newer, older},
	} {
		t.Run(name, func(t *testing.T) {
			c := NewCache()
			for _, eq := range order {
				c.UpsertElasticQuota(eq)
			}
			look := func() seen {
				v := c.views.quotaView("team")
				s := seen{Namespace: v.Namespace, Max: v.Max.Cpu().String(), Ignored: v.IgnoredDuplicates}
				for _, dup := range c.DuplicateQuotas() {
					s.Duplicates = append(s.Duplicates, dup.Namespace+"/"+dup.Name)
				}
				return s
			}
			want := seen{Namespace: "first", Max: "4", Ignored: []string{"second/team"}, Duplicates: []string{"second/team"}}
			if diff := cmp.Diff(want, look()); diff != "" {
				t.Errorf("with both (-want +got):\n%s", diff)
			}
			c.DeleteElasticQuota("first", "team")
			if diff := cmp.Diff(seen{Namespace: "second", Max: "8"}, look()); diff != "" {
				t.Errorf("after the one used is deleted (-want +got):\n%s", diff)
			}
			e := c.core.Quotas()
			if why := e.NeverFits("team", e.Vector(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")})); why != "" {
				t.Errorf("6 cpu can never fit team after second/team (max 8) took over: %s", why)
			}
		})
	}
}

// TestVisibilityShowsTheQuotaRule: the visibility API says which rule chose
// a unit's quota, as docs/tasks/read-the-queue.md promises.
func TestVisibilityShowsTheQuotaRule(t *testing.T) {
	c := NewCache()
	c.UpsertElasticQuota(&elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "ml"},
		Spec: elasticquotav1alpha1.ElasticQuotaSpec{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}})
	unit := func(name string, labels map[string]string) *schedulingv1alpha1.QueueUnit {
		return &schedulingv1alpha1.QueueUnit{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, Labels: labels},
			Spec: schedulingv1alpha1.QueueUnitSpec{Resource: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}
	}
	c.UpsertUnit(unit("by-namespace", nil))
	c.UpsertUnit(unit("by-label", map[string]string{elasticquotav1alpha1.LabelQuotaName: "ml"}))
	got := map[string]string{}
	for _, name := range []string{"by-namespace", "by-label"} {
		v, ok := c.QueueUnit("ml", name)
		if !ok {
			t.Fatalf("unit %s not in the visibility API", name)
		}
		got[name] = v.Queue + " by " + v.QuotaRule
	}
	want := map[string]string{"by-namespace": "ml by namespace name", "by-label": "ml by label"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queue and quota rule (-want +got):\n%s", diff)
	}
}

// TestUpdatesOfWhatIsNotReadCostNothing: koord-scheduler rewrites every
// ElasticQuota's figures about once a second, and nodes report heartbeats.
// Such an update neither wakes the loop nor re-places a unit; one that
// changes a quota's limits or a node's capacity does both.
func TestUpdatesOfWhatIsNotReadCostNothing(t *testing.T) {
	quota := func() *elasticquotav1alpha1.ElasticQuota {
		return wrappers.MakeElasticQuota("ml", "ml").Max(corev1.ResourceCPU, "4").
			Annotation(elasticquotav1alpha1.AnnotationRuntime, `{"cpu":"1"}`).Obj()
	}
	node := func() *corev1.Node { return wrappers.Node("n1", "32", "64Gi") }
	cases := map[string]struct {
		quota func(*elasticquotav1alpha1.ElasticQuota)
		node  func(*corev1.Node)
		want  bool
	}{
		"koord-scheduler's figures and status.used": {
			quota: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Annotations[elasticquotav1alpha1.AnnotationRuntime] = `{"cpu":"3"}`
				eq.Annotations[elasticquotav1alpha1.AnnotationRequest] = `{"cpu":"5"}`
				eq.Status.Used = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
				eq.ResourceVersion = "2"
			},
		},
		"a quota's max": {
			quota: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Spec.Max[corev1.ResourceCPU] = resource.MustParse("6")
			},
			want: true,
		},
		"a node's heartbeat": {
			node: func(n *corev1.Node) {
				n.Status.Conditions[0].LastHeartbeatTime = metav1.Unix(200, 0)
				n.ResourceVersion = "2"
			},
		},
		"a node cordoned": {
			node: func(n *corev1.Node) { n.Spec.Unschedulable = true },
			want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCache()
			eq, n := quota(), node()
			c.UpsertElasticQuota(eq)
			c.UpsertNode(n)
			// Served by namespace: re-placed whenever quotas are rebuilt.
			c.UpsertUnit(&schedulingv1alpha1.QueueUnit{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "u"},
				Spec: schedulingv1alpha1.QueueUnitSpec{Resource: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}})
			c.takeDirty()
			<-c.Wake()

			if tc.quota != nil {
				eq = eq.DeepCopy()
				tc.quota(eq)
				c.UpsertElasticQuota(eq)
			} else {
				n = n.DeepCopy()
				tc.node(n)
				c.UpsertNode(n)
			}
			woken := len(c.Wake()) > 0
			replaced := len(c.dirty) > 0
			if woken != tc.want || (tc.quota != nil && replaced != tc.want) {
				t.Errorf("woke the loop: %v, re-placed units: %v; want %v", woken, replaced, tc.want)
			}
			if got := c.QuotaObject("ml"); got != eq {
				t.Errorf("the Cache keeps resourceVersion %s of the quota, want the latest (%s)", got.ResourceVersion, eq.ResourceVersion)
			}
		})
	}
}

// TestNodesNoneReadyGiveNothing: a cluster whose nodes are all seen, none
// Ready, has no capacity; nothing is admitted until one is Ready.
func TestNodesNoneReadyGiveNothing(t *testing.T) {
	c := NewCache()
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("ml", "ml").Max(corev1.ResourceCPU, "4").Obj())
	c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "ml"}})
	node := wrappers.Node("n1", "32", "64Gi")
	node.Status.Conditions[0].Status = corev1.ConditionFalse
	c.UpsertNode(node)
	c.UpsertUnit(wrappers.MakeQueueUnit("u", "ml").Quota("ml").Request(corev1.ResourceCPU, "1").Obj())
	if res := c.cycle(time.Unix(100, 0), -1); len(res.Admissions) != 0 {
		t.Fatalf("admitted %v with no Ready node", res.Admissions)
	}
	node = node.DeepCopy()
	node.Status.Conditions[0].Status = corev1.ConditionTrue
	c.UpsertNode(node)
	if res := c.cycle(time.Unix(101, 0), -1); len(res.Admissions) != 1 {
		t.Fatalf("admitted %v once the node is Ready, want the unit", res.Admissions)
	}
}

// TestNegativeAmountsKeepAUnitOut: a unit written by hand whose pod sets
// hide a negative amount in a total that is not (-8 cpu and two pods of 4)
// never enters its queue, and says why.
func TestNegativeAmountsKeepAUnitOut(t *testing.T) {
	c := NewCache()
	c.UpsertElasticQuota(&elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "ml"},
		Spec: elasticquotav1alpha1.ElasticQuotaSpec{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}})
	podSet := func(name, cpu string, count int32) schedulingv1alpha1.PodSet {
		return schedulingv1alpha1.PodSet{Name: name, Count: count, Template: wrappers.PodTemplate("cpu", cpu)}
	}
	c.UpsertUnit(&schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "sneaky", Labels: map[string]string{elasticquotav1alpha1.LabelQuotaName: "ml"}},
		Spec:       schedulingv1alpha1.QueueUnitSpec{PodSets: []schedulingv1alpha1.PodSet{podSet("master", "-8", 1), podSet("worker", "4", 2)}},
	})
	v, ok := c.QueueUnit("ml", "sneaky")
	if !ok {
		t.Fatal("unit sneaky not in the visibility API")
	}
	const want = `spec.podSet[master].template.spec: containers[0] (main): resources.requests[cpu] is -8: a resource amount must not be negative`
	if v.Reason != want {
		t.Errorf("reason = %q, want %q", v.Reason, want)
	}
	if pending, _ := c.core.QueueCounts("ml"); pending != 0 {
		t.Errorf("%d units pending in queue ml, want none", pending)
	}
}

// TestDeletedQuotaKeepsItsRunningUnitsCharged: a running unit charged
// through a namespace rule (no label), whose spec.queue pin was never
// written, keeps counting when its quota is deleted: its pods still run.
// Its usage goes only when it leaves.
func TestDeletedQuotaKeepsItsRunningUnitsCharged(t *testing.T) {
	c := NewCache()
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "team").Max(corev1.ResourceCPU, "4").Obj())
	u := wrappers.MakeQueueUnit("u", "team").Request(corev1.ResourceCPU, "3").Obj()
	queueunit.Admit(u, "team", queueunit.Request(u), nil, nil, metav1.Now())
	u.Status.Phase = schedulingv1alpha1.Running
	c.UpsertUnit(u)
	type usage struct {
		Cluster string
		Charged bool
		Problem string
	}
	look := func() usage {
		e := c.core.Quotas()
		_, charged := e.Charged("team/u")
		used := e.Used(elasticquotav1alpha1.RootQuotaName)
		return usage{Cluster: used.Cpu().String(), Charged: charged, Problem: c.units["team/u"].problem}
	}
	if diff := cmp.Diff(usage{Cluster: "3", Charged: true}, look()); diff != "" {
		t.Fatalf("running in team (-want +got):\n%s", diff)
	}
	c.DeleteElasticQuota("team", "team")
	if diff := cmp.Diff(usage{Cluster: "3", Charged: true}, look()); diff != "" {
		t.Errorf("its quota deleted (-want +got):\n%s", diff)
	}
	u = u.DeepCopy()
	u.Status.Admissions[0].Running = 1
	c.UpsertUnit(u)
	if diff := cmp.Diff(usage{Cluster: "3", Charged: true}, look()); diff != "" {
		t.Errorf("its quota deleted, its status changed since (-want +got):\n%s", diff)
	}
	u = u.DeepCopy()
	u.Status.Phase, u.Status.Admissions = schedulingv1alpha1.Succeed, nil
	c.UpsertUnit(u)
	if diff := cmp.Diff(usage{Cluster: "0"}, look()); diff != "" {
		t.Errorf("finished (-want +got):\n%s", diff)
	}
}

// TestUnitResizedWhileAdmittedKeepsItsCharge: a unit admitted at 2 pods
// whose spec says 6 since (its extension's resize raced the admission) is
// charged the 2 it was admitted with, by this koord-queue and by a restarted
// one, until it is queued again: a quota of max 4 is never charged 6.
func TestUnitResizedWhileAdmittedKeepsItsCharge(t *testing.T) {
	u := wrappers.MakeQueueUnit("u", "ns").Quota("team").PodSet("main", 2, "cpu", "1").Obj()
	u.Spec.Resource = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	queueunit.Admit(u, "team", queueunit.Request(u), nil, nil, metav1.Now())
	resized := u.DeepCopy()
	resized.Spec.PodSets[0].Count = 6
	resized.Spec.Resource = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")}
	used := func(c *Cache) string {
		u := c.core.Quotas().Used("team")
		return u.Cpu().String()
	}
	c := NewCache()
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "quotas").Max(corev1.ResourceCPU, "4").Obj())
	c.UpsertUnit(u)
	c.UpsertUnit(resized)
	restarted := NewCache()
	restarted.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "quotas").Max(corev1.ResourceCPU, "4").Obj())
	restarted.UpsertUnit(resized)
	got := map[string]string{"running": used(c), "restarted": used(restarted)}
	if diff := cmp.Diff(map[string]string{"running": "2", "restarted": "2"}, got); diff != "" {
		t.Errorf("cpu used in quota team (max 4) (-want +got):\n%s", diff)
	}
	if v, ok := c.QueueUnit("ns", "u"); !ok || v.Request.Cpu().String() != "2" {
		t.Errorf("the visibility API shows it charged %v, want 2 cpu", v.Request)
	}
}

// TestVisibilityShowsQuotaTrees: the visibility API shows each quota's tree
// (Koordinator's multiple quota trees), a tree root's capacity from its
// total-resource annotation, and the error of a root whose annotation is
// malformed (its tree then admits nothing).
func TestVisibilityShowsQuotaTrees(t *testing.T) {
	quota := func(name, parent, total string) *elasticquotav1alpha1.ElasticQuota {
		eq := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name,
			Labels: map[string]string{elasticquotav1alpha1.LabelQuotaTreeID: "t-" + name}}}
		if parent != "" {
			eq.Labels[elasticquotav1alpha1.LabelQuotaParent] = parent
			eq.Labels[elasticquotav1alpha1.LabelQuotaTreeID] = "t-" + parent
		} else {
			eq.Labels[elasticquotav1alpha1.LabelQuotaIsRoot] = "true"
			eq.Labels[elasticquotav1alpha1.LabelQuotaIsParent] = "true"
			eq.Annotations = map[string]string{elasticquotav1alpha1.AnnotationTotalResource: total}
		}
		return eq
	}
	c := NewCache()
	c.UpsertElasticQuota(quota("a100", "", `{"nvidia.com/gpu":"8"}`))
	c.UpsertElasticQuota(quota("team", "a100", ""))
	c.UpsertElasticQuota(quota("broken", "", `{"nvidia.com/gpu":`))
	type seen struct {
		Tree, Parent, Capacity string
		Failed                 bool
	}
	got := map[string]seen{}
	for _, v := range c.Quotas() {
		got[v.Name] = seen{Tree: v.Tree, Parent: v.Parent, Capacity: v.Capacity.Name("nvidia.com/gpu", resource.DecimalSI).String(), Failed: v.Error != ""}
	}
	want := map[string]seen{
		"a100":   {Tree: "t-a100", Capacity: "8"},
		"team":   {Tree: "t-a100", Parent: "a100", Capacity: "0"},
		"broken": {Tree: "t-broken", Capacity: "0", Failed: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("quota views (-want +got):\n%s", diff)
	}
}

// teamCache is a Cache with a 100-cpu node and quota team, of max maxCPU
// cpus, with its Queue.
func teamCache(maxCPU string) *Cache {
	c := NewCache()
	c.UpsertNode(wrappers.Node("n1", "100", "100Gi"))
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "quotas").Max("cpu", maxCPU).Obj())
	c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
	return c
}

// TestOnlyUnitsThatMayWaitAreExplained: every unit that changed and holds
// nothing is looked at for a new reason to wait (one in a queue, one left
// out for a problem its message states), but a finished unit, which never
// waits: a restart's finished units would each hold a write op for nothing.
func TestOnlyUnitsThatMayWaitAreExplained(t *testing.T) {
	c := teamCache("1")
	unit := func(name string) *schedulingv1alpha1.QueueUnit {
		return wrappers.MakeQueueUnit(name, "ns").Quota("team").Request(corev1.ResourceCPU, "2").Obj()
	}
	inactive := unit("inactive")
	inactive.Spec.Active = ptr.To(false)
	for _, u := range []*schedulingv1alpha1.QueueUnit{unit("waiting"), inactive, unit("succeeded"), unit("failed")} {
		switch u.Name {
		case "succeeded":
			u.Status.Phase = schedulingv1alpha1.Succeed
		case "failed":
			u.Status.Phase = schedulingv1alpha1.Failed
		}
		c.UpsertUnit(u)
	}
	got := c.takeDirty().explain
	slices.Sort(got)
	if diff := cmp.Diff([]string{"ns/inactive", "ns/waiting"}, got); diff != "" {
		t.Errorf("units to explain (-want +got):\n%s", diff)
	}
}
