package framework

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/pool"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// requiring is a template whose required node affinity has these terms.
func requiring(terms ...corev1.NodeSelectorTerm) corev1.PodTemplateSpec {
	t := wrappers.PodTemplate("cpu", "1")
	if len(terms) > 0 {
		t.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	return t
}

func term(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: reqs}
}

func notIn(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpNotIn, Values: values}
}

// onPool is the placement of a unit of pool a100's tree.
var onPool = &placement{Placement: pool.Placement{Pool: &pool.Pool{Profile: "a100", Requirements: []corev1.NodeSelectorRequirement{in("pool", "a100")}}}}

// offPools is the placement of a unit of the classic tree in a cluster
// whose pools are a100 (pool=a100) and h100 (pool=h100 and gpu-health not
// bad).
func offPools(t *testing.T) *placement {
	t.Helper()
	var p placement
	for _, profile := range []*quotav1alpha1.ElasticQuotaProfile{
		{ObjectMeta: metav1.ObjectMeta{Name: "a100"}, Spec: quotav1alpha1.ElasticQuotaProfileSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a100"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "h100"}, Spec: quotav1alpha1.ElasticQuotaProfileSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "h100"}, MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "gpu-health", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"bad"}}}}}},
	} {
		avoided, ok := pool.OutsideOf(profile)
		if !ok {
			t.Fatalf("profile %s has no pool", profile.Name)
		}
		p.Avoid = append(p.Avoid, avoided)
	}
	return &p
}

// inRacks is the placement of pod set main admitted to racks of block b1
// (status.topologyAssignments).
func inRacks(racks ...string) *placement {
	a := schedulingv1alpha1.PodSetTopologyAssignment{Name: "main", Topology: "default", Levels: []string{"block", "rack"}}
	for _, r := range racks {
		a.Domains = append(a.Domains, schedulingv1alpha1.TopologyDomainAssignment{Values: []string{"b1", r}, Count: 4})
	}
	u := &schedulingv1alpha1.QueueUnit{Status: schedulingv1alpha1.QueueUnitStatus{TopologyAssignments: []schedulingv1alpha1.PodSetTopologyAssignment{a}}}
	return &placement{Domains: domainsOf(u)}
}

func TestPlacedAffinity(t *testing.T) {
	cases := map[string]struct {
		template corev1.PodTemplateSpec
		place    *placement
		want     corev1.PodTemplateSpec
	}{
		"a template with no affinity requires the pool": {
			template: requiring(),
			place:    onPool,
			want:     requiring(term(in("pool", "a100"))),
		},
		"every term of the template's own also requires the pool": {
			template: requiring(term(in("zone", "a")), term(in("zone", "b"))),
			place:    onPool,
			want:     requiring(term(in("zone", "a"), in("pool", "a100")), term(in("zone", "b"), in("pool", "a100"))),
		},
		"a template that requires the pool already is unchanged": {
			template: requiring(term(in("pool", "a100"), in("zone", "a"))),
			place:    onPool,
			want:     requiring(term(in("pool", "a100"), in("zone", "a"))),
		},
		"only the terms lacking the pool get it": {
			template: requiring(term(in("pool", "a100")), term(in("zone", "b"))),
			place:    onPool,
			want:     requiring(term(in("pool", "a100")), term(in("zone", "b"), in("pool", "a100"))),
		},
		// Off h100 (pool=h100 and gpu-health not bad) is pool not h100, or
		// gpu-health bad: two terms.
		"a template with no affinity keeps off every pool, a pool of two requirements in two terms": {
			template: requiring(),
			place:    offPools(t),
			want: requiring(
				term(notIn("pool", "a100"), notIn("pool", "h100")),
				term(notIn("pool", "a100"), in("gpu-health", "bad")),
			),
		},
		"each term of the template's own keeps off the pools": {
			template: requiring(term(in("zone", "a")), term(in("zone", "b"))),
			place:    offPools(t),
			want: requiring(
				term(in("zone", "a"), notIn("pool", "a100"), notIn("pool", "h100")),
				term(in("zone", "a"), notIn("pool", "a100"), in("gpu-health", "bad")),
				term(in("zone", "b"), notIn("pool", "a100"), notIn("pool", "h100")),
				term(in("zone", "b"), notIn("pool", "a100"), in("gpu-health", "bad")),
			),
		},
		// The Job's own nodeSelector (pool: a100) is left as it is: with
		// the affinity, no node fits, and its pods wait.
		"a template requiring a pool's nodes is narrowed, not widened": {
			template: func() corev1.PodTemplateSpec {
				t := requiring(term(in("pool", "a100")))
				t.Spec.NodeSelector = map[string]string{"pool": "a100"}
				return t
			}(),
			place: offPools(t),
			want: func() corev1.PodTemplateSpec {
				t := requiring(
					term(in("pool", "a100"), notIn("pool", "a100"), notIn("pool", "h100")),
					term(in("pool", "a100"), notIn("pool", "a100"), in("gpu-health", "bad")),
				)
				t.Spec.NodeSelector = map[string]string{"pool": "a100"}
				return t
			}(),
		},
		"a term that keeps off a pool already is not split for it": {
			template: requiring(term(in("gpu-health", "bad"), notIn("pool", "a100"))),
			place:    offPools(t),
			want:     requiring(term(in("gpu-health", "bad"), notIn("pool", "a100"))),
		},
		"a pod set admitted to a rack requires the rack, under its block": {
			template: requiring(),
			place:    inRacks("r1"),
			want:     requiring(term(in("block", "b1"), in("rack", "r1"))),
		},
		"the pool and the rack narrow each term of the template's own, never widening it": {
			template: requiring(term(in("zone", "a")), term(in("zone", "b"))),
			place:    &placement{Placement: onPool.Placement, Domains: inRacks("r1").Domains},
			want: requiring(term(in("zone", "a"), in("pool", "a100"), in("block", "b1"), in("rack", "r1")),
				term(in("zone", "b"), in("pool", "a100"), in("block", "b1"), in("rack", "r1"))),
		},
		"a pod set spread over two racks may run in either": {
			template: requiring(term(in("zone", "a"))),
			place:    inRacks("r1", "r2"),
			want:     requiring(term(in("zone", "a"), in("block", "b1"), in("rack", "r1")), term(in("zone", "a"), in("block", "b1"), in("rack", "r2"))),
		},
		"another pod set's domains leave this one as it is": {
			template: requiring(term(in("zone", "a"))),
			place:    &placement{Domains: map[string][]corev1.NodeSelectorTerm{"other": inRacks("r1").Domains["main"]}},
			want:     requiring(term(in("zone", "a"))),
		},
		"match fields stay in every term": {
			template: requiring(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{in("metadata.name", "n1")}}),
			place:    offPools(t),
			want: requiring(
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{notIn("pool", "a100"), notIn("pool", "h100")},
					MatchFields: []corev1.NodeSelectorRequirement{in("metadata.name", "n1")}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{notIn("pool", "a100"), in("gpu-health", "bad")},
					MatchFields: []corev1.NodeSelectorRequirement{in("metadata.name", "n1")}},
			),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmpl := tc.template.DeepCopy()
			placed, err := placedAffinity(tmpl.Spec.Affinity, tc.place, "main")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.template, *tmpl); diff != "" {
				t.Errorf("placedAffinity changed its argument (-want +got):\n%s", diff)
			}
			tmpl.Spec.Affinity = placed
			if diff := cmp.Diff(tc.want, *tmpl); diff != "" {
				t.Errorf("template (-want +got):\n%s", diff)
			}
			again, err := placedAffinity(placed, tc.place, "main")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(placed, again); diff != "" {
				t.Errorf("placed twice (-once +twice):\n%s", diff)
			}
		})
	}
}

// TestPlacementIsBounded: keeping a template's own terms off pools of
// several requirements multiplies them; past pool.MaxPlacementTerms the job is
// not released, and the template is left as it was.
func TestPlacementIsBounded(t *testing.T) {
	var own []corev1.NodeSelectorTerm
	for i := range pool.MaxPlacementTerms/2 + 1 {
		own = append(own, term(in("zone", fmt.Sprint(i))))
	}
	tmpl := requiring(own...)
	queued := tmpl.DeepCopy()
	sets := []PodSet{{Name: "main", Template: &tmpl}}
	err := placementFits(sets, offPools(t), nil)
	want := "the job is not released: keeping its pods off node pools a100, h100 takes more than 64 required node affinity terms; give its pods fewer terms of their own"
	if err == nil || err.Error() != want {
		t.Errorf("placementFits = %v, want %q", err, want)
	}
	if diff := cmp.Diff(*queued, tmpl); diff != "" {
		t.Errorf("template (-want +got):\n%s", diff)
	}
	if err := placementFits([]PodSet{{Name: "main", Template: queued}}, onPool, nil); err != nil {
		t.Errorf("placementFits on a pool = %v, want nil", err)
	}
}

// TestPoolAffinityRoundTrip releases a pod set with a pool's affinity and
// suspends it again: the template comes back as it was queued, through the
// originals kept on the unit, whether it had an affinity of its own or none.
func TestPoolAffinityRoundTrip(t *testing.T) {
	own := requiring(term(in("zone", "a")))
	own.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{
		{Weight: 1, Preference: term(in("disk", "ssd"))}}
	withTerms := func(terms ...corev1.NodeSelectorTerm) corev1.PodTemplateSpec {
		t := own.DeepCopy()
		t.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = terms
		return *t
	}
	cases := map[string]struct {
		place    *placement
		queued   corev1.PodTemplateSpec
		released corev1.PodTemplateSpec
	}{
		"no affinity of its own": {
			place:    onPool,
			queued:   requiring(),
			released: requiring(term(in("pool", "a100"))),
		},
		"an affinity of its own": {
			place:    onPool,
			queued:   own,
			released: withTerms(term(in("zone", "a"), in("pool", "a100"))),
		},
		"the classic tree, no affinity of its own": {
			place:    offPools(t),
			queued:   requiring(),
			released: requiring(term(notIn("pool", "a100"), notIn("pool", "h100")), term(notIn("pool", "a100"), in("gpu-health", "bad"))),
		},
		"the classic tree, an affinity of its own": {
			place:  offPools(t),
			queued: own,
			released: withTerms(
				term(in("zone", "a"), notIn("pool", "a100"), notIn("pool", "h100")),
				term(in("zone", "a"), notIn("pool", "a100"), in("gpu-health", "bad"))),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmpl := tc.queued.DeepCopy()
			sets := []PodSet{{Name: "main", Template: tmpl}}
			u := wrappers.MakeQueueUnit("u", "ns").Obj()
			keepOriginals(u, recordOriginals(sets, nil))

			if missed := applyPodSetUpdates(sets, nil, tc.place, nil); !missed.empty() {
				t.Errorf("missed %+v", missed)
			}
			if diff := cmp.Diff(tc.released, *tmpl); diff != "" {
				t.Errorf("released template (-want +got):\n%s", diff)
			}
			originals, err := originalsOf(u)
			if err != nil {
				t.Fatal(err)
			}
			if !restorePodSets(sets, originals, nil) {
				t.Errorf("restorePodSets changed nothing")
			}
			if diff := cmp.Diff(tc.queued, *tmpl); diff != "" {
				t.Errorf("suspended template (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPoolOnMadeUpPodSetsIsReported(t *testing.T) {
	sets := []PodSet{MadeUpPodSet("driver", 1, "spark", nil), MadeUpPodSet("executor", 2, "spark", nil)}
	missed := applyPodSetUpdates(sets, nil, onPool, nil)
	want := "The required node affinity of node pool a100 was not put on pod sets driver, executor: " +
		"their pods are made by the framework from templates the job does not hold"
	if diff := cmp.Diff(want, missed.String()); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	if sets[0].Template.Spec.Affinity != nil {
		t.Errorf("a made-up template got an affinity: %+v", sets[0].Template.Spec.Affinity)
	}
}

// madeUpJob is a job of one made-up pod set, main, whose pods take their
// affinity from two fields: spec.affinity, and a template's that is set.
type madeUpJob struct {
	*fakeJob
	spec, template *corev1.Affinity
	overridden     []string
}

var _ JobWithMadeUpAffinity = (*madeUpJob)(nil)

func (j *madeUpJob) EditAffinities(podSet string, edit func(string, *corev1.Affinity) *corev1.Affinity) []string {
	if podSet != "main" {
		return nil
	}
	j.spec = edit("spec.affinity", j.spec)
	if j.template != nil {
		j.template = edit("spec.templates[main].affinity", j.template)
	}
	return j.overridden
}

// TestMadeUpAffinityRoundTrip: the fields a made-up pod set's pods take
// their affinity from are placed when the job is released, recorded in the
// unit's originals first, and given back when it is held again.
func TestMadeUpAffinityRoundTrip(t *testing.T) {
	affinity := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return requiring(terms...).Spec.Affinity
	}
	antiAffinity := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
	cases := map[string]struct {
		place                  *placement
		spec, template         *corev1.Affinity
		wantSpec, wantTemplate *corev1.Affinity
		overridden             []string
		wantMissed             missedUpdates
	}{
		"a job with no affinity gets the pool's": {
			place:      onPool,
			wantSpec:   affinity(term(in("pool", "a100"))),
			wantMissed: missedUpdates{Placement: onPool.String()},
		},
		"a template's own affinity is narrowed too, its pod anti-affinity kept": {
			place:    offPools(t),
			spec:     affinity(term(in("zone", "a"))),
			template: antiAffinity,
			wantSpec: affinity(
				term(in("zone", "a"), notIn("pool", "a100"), notIn("pool", "h100")),
				term(in("zone", "a"), notIn("pool", "a100"), in("gpu-health", "bad"))),
			wantTemplate: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}, NodeAffinity: affinity(
				term(notIn("pool", "a100"), notIn("pool", "h100")),
				term(notIn("pool", "a100"), in("gpu-health", "bad"))).NodeAffinity},
			wantMissed: missedUpdates{Placement: offPools(t).String()},
		},
		"what the job cannot change is reported": {
			place:      onPool,
			overridden: []string{"spec.podSpecPatch"},
			wantSpec:   affinity(term(in("pool", "a100"))),
			wantMissed: missedUpdates{Placement: onPool.String(), Overridden: []string{"spec.podSpecPatch"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := &madeUpJob{fakeJob: newFakeJob("ns", nil), spec: tc.spec.DeepCopy(), template: tc.template.DeepCopy(), overridden: tc.overridden}
			sets := []PodSet{MadeUpPodSet("main", 1, "main", nil)}
			u := wrappers.MakeQueueUnit("u", "ns").Obj()
			keepOriginals(u, recordOriginals(sets, job))

			if err := placementFits(sets, tc.place, job); err != nil {
				t.Fatal(err)
			}
			missed := applyPodSetUpdates(sets, nil, tc.place, job)
			if diff := cmp.Diff(tc.wantMissed, missed); diff != "" {
				t.Errorf("missed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSpec, job.spec); diff != "" {
				t.Errorf("released spec.affinity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTemplate, job.template); diff != "" {
				t.Errorf("released template affinity (-want +got):\n%s", diff)
			}
			if sets[0].Template.Spec.Affinity != nil {
				t.Errorf("the made-up template got an affinity: %+v", sets[0].Template.Spec.Affinity)
			}

			originals, err := originalsOf(u)
			if err != nil {
				t.Fatal(err)
			}
			if !restorePodSets(sets, originals, job) {
				t.Errorf("restorePodSets changed nothing")
			}
			if diff := cmp.Diff(tc.spec, job.spec); diff != "" {
				t.Errorf("held spec.affinity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.template, job.template); diff != "" {
				t.Errorf("held template affinity (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOriginalsFromBeforePoolsGetTheAffinity: originals recorded by a
// version that never changed affinity lack it; a release with a pool
// completes them from the template first, so that a suspension still takes
// the pool's affinity away.
func TestOriginalsFromBeforePoolsGetTheAffinity(t *testing.T) {
	queued := requiring(term(in("zone", "a")))
	tmpl := queued.DeepCopy()
	sets := []PodSet{{Name: "main", Template: tmpl}}
	originals := podSetOriginals{"main": {}} // as recorded before node pools

	if !completeOriginals(originals, sets, nil) || completeOriginals(originals, sets, nil) {
		t.Errorf("completeOriginals should change the originals once")
	}
	applyPodSetUpdates(sets, nil, onPool, nil)
	restorePodSets(sets, originals, nil)
	if diff := cmp.Diff(queued, *tmpl); diff != "" {
		t.Errorf("suspended template (-want +got):\n%s", diff)
	}
}

// TestOriginalsFromBeforeMadeUpAffinityGetIt: originals recorded by a
// version that never changed a made-up pod set's fields lack them; a
// release with a placement completes them from the job first, so that a
// suspension takes the placement away again.
func TestOriginalsFromBeforeMadeUpAffinityGetIt(t *testing.T) {
	job := &madeUpJob{fakeJob: newFakeJob("ns", nil)}
	sets := []PodSet{MadeUpPodSet("main", 1, "main", nil)}
	originals := recordOriginals(sets, nil) // as recorded before: no fields

	if !completeOriginals(originals, sets, job) || completeOriginals(originals, sets, job) {
		t.Errorf("completeOriginals should change the originals once")
	}
	applyPodSetUpdates(sets, nil, onPool, job)
	if job.spec == nil {
		t.Fatalf("released without the pool's affinity")
	}
	restorePodSets(sets, originals, job)
	if job.spec != nil {
		t.Errorf("held with affinity %+v, want none", job.spec)
	}
}

// quotaReconciler is a reconciler whose client serves objs (ElasticQuotas,
// their profiles) with the field index production registers.
func quotaReconciler(t *testing.T, objs ...client.Object) *JobReconciler {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{elasticquotav1alpha1.AddToScheme, quotav1alpha1.AddToScheme, schedulingv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, IndexQuotaName, QuotaNameIndex).Build()
	return &JobReconciler{client: c}
}

// TestPoolOfChoosesAsKoordQueue: with duplicates, the pool a unit's pods
// are sent to is the one whose capacity koord-queue admitted them against:
// of ElasticQuotas of one name (the unit's quota, or a parent), the oldest
// (quota.OlderFirst); of ElasticQuotaProfiles naming the tree's root,
// pool.ProfileOf's. The duplicates are made so that the first in a list
// (by namespace and name) is not the one koord-queue uses.
func TestPoolOfChoosesAsKoordQueue(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.NewTime(time.Unix(sec, 0)) }
	root := func(name, namespace, tree string, created metav1.Time) *wrappers.ElasticQuotaWrapper {
		w := wrappers.MakeElasticQuota(name, namespace).IsParent().
			Label(elasticquotav1alpha1.LabelQuotaTreeID, tree).Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true")
		w.CreationTimestamp = created
		return w
	}
	child := func(name, namespace, parent, tree string, created metav1.Time) *elasticquotav1alpha1.ElasticQuota {
		eq := wrappers.MakeElasticQuota(name, namespace).Parent(parent).Label(elasticquotav1alpha1.LabelQuotaTreeID, tree).Obj()
		eq.CreationTimestamp = created
		return eq
	}
	profile := func(name, namespace, quota string, created metav1.Time) *quotav1alpha1.ElasticQuotaProfile {
		return &quotav1alpha1.ElasticQuotaProfile{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, CreationTimestamp: created},
			Spec: quotav1alpha1.ElasticQuotaProfileSpec{QuotaName: quota,
				NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}}},
		}
	}
	cases := map[string]struct {
		objs []client.Object
		want string // the pool's profile; empty: none
	}{
		"of two quotas of the unit's name, the older": {
			objs: []client.Object{
				child("team", "z-older", "root-1", "t1", at(10)), child("team", "a-newer", "root-2", "t2", at(20)),
				root("root-1", "kube-system", "t1", at(1)).Obj(), root("root-2", "kube-system", "t2", at(1)).Obj(),
				profile("one", "kube-system", "root-1", at(1)), profile("two", "kube-system", "root-2", at(1)),
			},
			want: "one",
		},
		"of two roots of one name, the older": {
			objs: []client.Object{
				child("team", "team", "root", "t1", at(10)),
				root("root", "z-older", "t1", at(1)).Obj(), root("root", "a-newer", "t1", at(2)).Obj(),
				profile("one", "z-older", "root", at(1)), profile("two", "a-newer", "root", at(1)),
			},
			want: "one",
		},
		"of two profiles naming the root, the older": {
			objs: []client.Object{
				child("team", "team", "root", "t1", at(10)), root("root", "kube-system", "t1", at(1)).Obj(),
				profile("b-older", "kube-system", "root", at(1)), profile("a-newer", "kube-system", "root", at(2)),
			},
			want: "b-older",
		},
		"of two profiles naming the root, the one its label names": {
			objs: []client.Object{
				child("team", "team", "root", "t1", at(10)),
				root("root", "kube-system", "t1", at(1)).Label(elasticquotav1alpha1.LabelQuotaProfile, "a-newer").Obj(),
				profile("b-older", "kube-system", "root", at(1)), profile("a-newer", "kube-system", "root", at(2)),
			},
			want: "a-newer",
		},
		"a quota of the classic tree": {
			objs: []client.Object{wrappers.MakeElasticQuota("team", "team").Obj(), profile("one", "team", "team", at(1))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := quotaReconciler(t, tc.objs...)
			p, err := r.poolPlacementOf(context.Background(), wrappers.MakeQueueUnit("u", "team").Quota("team").Obj())
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if p != nil && p.Pool != nil {
				got = p.Pool.Profile
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pool (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlacementOf: a unit of a tree's quota keeps to the tree's pool; a unit
// of the classic tree keeps off the pool of every tree whose total
// koord-scheduler takes out of the classic tree's capacity.
func TestPlacementOf(t *testing.T) {
	root := func(name, tree, profile string) *wrappers.ElasticQuotaWrapper {
		return wrappers.MakeElasticQuota(name, "kube-system").IsParent().
			Label(elasticquotav1alpha1.LabelQuotaTreeID, tree).Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").
			Label(elasticquotav1alpha1.LabelQuotaProfile, profile)
	}
	profile := func(name, quota string, sel metav1.LabelSelector) *quotav1alpha1.ElasticQuotaProfile {
		return &quotav1alpha1.ElasticQuotaProfile{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
			Spec:       quotav1alpha1.ElasticQuotaProfileSpec{QuotaName: quota, NodeSelector: &sel},
		}
	}
	labelled := func(pool string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}}
	}
	pools := []client.Object{
		root("a100-root", "t1", "a100").Obj(), profile("a100", "a100-root", labelled("a100")),
		root("h100-root", "t2", "h100").Obj(), profile("h100", "h100-root", labelled("h100")),
		wrappers.MakeElasticQuota("gpu-team", "team").Parent("a100-root").Label(elasticquotav1alpha1.LabelQuotaTreeID, "t1").Obj(),
		wrappers.MakeElasticQuota("team", "team").Obj(),
	}
	cases := map[string]struct {
		quota string
		objs  []client.Object
		want  []string // the pool to keep to, or "!pool" for each to keep off
	}{
		"a quota of a tree keeps to its pool": {
			quota: "gpu-team", objs: pools, want: []string{"a100"},
		},
		"a quota of the classic tree keeps off every pool": {
			quota: "team", objs: pools, want: []string{"!a100", "!h100"},
		},
		"a quota that does not exist is of the classic tree": {
			quota: "nowhere", objs: pools, want: []string{"!a100", "!h100"},
		},
		"a tree ignoring the default tree is not kept off": {
			quota: "team",
			objs: append(slices.Clone(pools[2:]),
				root("a100-root", "t1", "a100").Label(elasticquotav1alpha1.LabelQuotaIgnoreDefaultTree, "true").Obj(), profile("a100", "a100-root", labelled("a100"))),
			want: []string{"!h100"},
		},
		"a profile whose selector does not parse, or chooses every node, is not kept off": {
			quota: "team",
			objs: append(slices.Clone(pools[4:]),
				root("a100-root", "t1", "a100").Obj(), profile("a100", "a100-root", metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: metav1.LabelSelectorOpIn}}}),
				root("h100-root", "t2", "h100").Obj(), profile("h100", "h100-root", metav1.LabelSelector{})),
		},
		"a profile naming a quota that is not a tree's root is not kept off": {
			quota: "team",
			objs: append(slices.Clone(pools[2:]),
				wrappers.MakeElasticQuota("a100-root", "kube-system").IsParent().Obj(), profile("a100", "a100-root", labelled("a100"))),
			want: []string{"!h100"},
		},
		"a cluster without profiles places nothing": {
			quota: "team", objs: []client.Object{wrappers.MakeElasticQuota("team", "team").Obj()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := quotaReconciler(t, tc.objs...)
			p, err := r.placementOf(context.Background(), wrappers.MakeQueueUnit("u", "team").Quota(tc.quota).Obj())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			switch {
			case p == nil:
			case p.Pool != nil:
				got = []string{p.Pool.Profile}
			default:
				for _, pool := range p.Avoid {
					got = append(got, "!"+pool.Profile)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
		})
	}
}
