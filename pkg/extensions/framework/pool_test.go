package framework

import (
	"context"
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

func TestPoolRequirements(t *testing.T) {
	cases := map[string]struct {
		selector metav1.LabelSelector
		want     []corev1.NodeSelectorRequirement
	}{
		"match labels, by key": {
			selector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a", "pool": "a100"}},
			want:     []corev1.NodeSelectorRequirement{in("pool", "a100"), in("zone", "a")},
		},
		"expressions keep their operator, after the labels": {
			selector: metav1.LabelSelector{
				MatchLabels: map[string]string{"pool": "a100"},
				MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "gpu", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"t4"}},
					{Key: "dedicated", Operator: metav1.LabelSelectorOpExists},
				},
			},
			want: []corev1.NodeSelectorRequirement{
				in("pool", "a100"),
				{Key: "gpu", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"t4"}},
				{Key: "dedicated", Operator: corev1.NodeSelectorOpExists},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, poolRequirements(&tc.selector)); diff != "" {
				t.Errorf("requirements (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequirePool(t *testing.T) {
	pool := []corev1.NodeSelectorRequirement{in("pool", "a100")}
	cases := map[string]struct {
		template corev1.PodTemplateSpec
		want     corev1.PodTemplateSpec
	}{
		"a template with no affinity requires the pool": {
			template: requiring(),
			want:     requiring(term(in("pool", "a100"))),
		},
		"every term of the template's own also requires the pool": {
			template: requiring(term(in("zone", "a")), term(in("zone", "b"))),
			want:     requiring(term(in("zone", "a"), in("pool", "a100")), term(in("zone", "b"), in("pool", "a100"))),
		},
		"a template that requires the pool already is unchanged": {
			template: requiring(term(in("pool", "a100"), in("zone", "a"))),
			want:     requiring(term(in("pool", "a100"), in("zone", "a"))),
		},
		"only the terms lacking the pool get it": {
			template: requiring(term(in("pool", "a100")), term(in("zone", "b"))),
			want:     requiring(term(in("pool", "a100")), term(in("zone", "b"), in("pool", "a100"))),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmpl := tc.template.DeepCopy()
			requirePool(&tmpl.Spec, pool)
			if diff := cmp.Diff(tc.want, *tmpl); diff != "" {
				t.Errorf("template (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPoolAffinityRoundTrip releases a pod set with a pool's affinity and
// suspends it again: the template comes back as it was queued, through the
// originals kept on the unit, whether it had an affinity of its own or none.
func TestPoolAffinityRoundTrip(t *testing.T) {
	pool := &nodePool{Profile: "a100", Requirements: []corev1.NodeSelectorRequirement{in("pool", "a100")}}
	own := requiring(term(in("zone", "a")))
	own.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{
		{Weight: 1, Preference: term(in("disk", "ssd"))}}
	cases := map[string]struct {
		queued   corev1.PodTemplateSpec
		released corev1.PodTemplateSpec
	}{
		"no affinity of its own": {
			queued:   requiring(),
			released: requiring(term(in("pool", "a100"))),
		},
		"an affinity of its own": {
			queued: own,
			released: func() corev1.PodTemplateSpec {
				t := own.DeepCopy()
				t.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0] = term(in("zone", "a"), in("pool", "a100"))
				return *t
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmpl := tc.queued.DeepCopy()
			sets := []PodSet{{Name: "main", Template: tmpl}}
			u := wrappers.MakeQueueUnit("u", "ns").Obj()
			keepOriginals(u, recordOriginals(sets))

			if missed := applyPodSetUpdates(sets, nil, pool); !missed.empty() {
				t.Errorf("missed %+v", missed)
			}
			if diff := cmp.Diff(tc.released, *tmpl); diff != "" {
				t.Errorf("released template (-want +got):\n%s", diff)
			}
			originals, err := originalsOf(u)
			if err != nil {
				t.Fatal(err)
			}
			if !restorePodSets(sets, originals) {
				t.Errorf("restorePodSets changed nothing")
			}
			if diff := cmp.Diff(tc.queued, *tmpl); diff != "" {
				t.Errorf("suspended template (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPoolOnMadeUpPodSetsIsReported(t *testing.T) {
	pool := &nodePool{Profile: "a100", Requirements: []corev1.NodeSelectorRequirement{in("pool", "a100")}}
	sets := []PodSet{MadeUpPodSet("driver", 1, "spark", nil), MadeUpPodSet("executor", 2, "spark", nil)}
	missed := applyPodSetUpdates(sets, nil, pool)
	want := "The required node affinity of node pool a100 was not put on pod sets driver, executor: " +
		"their pods are made by the framework from templates the job does not hold"
	if diff := cmp.Diff(want, missed.String()); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	if sets[0].Template.Spec.Affinity != nil {
		t.Errorf("a made-up template got an affinity: %+v", sets[0].Template.Spec.Affinity)
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

	if !completeOriginals(originals, sets) || completeOriginals(originals, sets) {
		t.Errorf("completeOriginals should change the originals once")
	}
	applyPodSetUpdates(sets, nil, &nodePool{Profile: "a100", Requirements: []corev1.NodeSelectorRequirement{in("pool", "a100")}})
	restorePodSets(sets, originals)
	if diff := cmp.Diff(queued, *tmpl); diff != "" {
		t.Errorf("suspended template (-want +got):\n%s", diff)
	}
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
			scheme := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{elasticquotav1alpha1.AddToScheme, quotav1alpha1.AddToScheme, schedulingv1alpha1.AddToScheme} {
				if err := add(scheme); err != nil {
					t.Fatal(err)
				}
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).
				WithIndex(&elasticquotav1alpha1.ElasticQuota{}, IndexQuotaName, QuotaNameIndex).Build()
			r := &JobReconciler{client: c}
			p, err := r.poolOf(context.Background(), wrappers.MakeQueueUnit("u", "team").Quota("team").Obj())
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if p != nil {
				got = p.Profile
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pool (-want +got):\n%s", diff)
			}
		})
	}
}
