package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
