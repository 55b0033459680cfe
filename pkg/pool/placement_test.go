package pool_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/pool"
)

func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func notIn(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpNotIn, Values: values}
}

func op(key string, o corev1.NodeSelectorOperator) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: o}
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
			if diff := cmp.Diff(tc.want, pool.Requirements(&tc.selector)); diff != "" {
				t.Errorf("requirements (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNegatedIsOutside: a node meets a requirement's negation exactly when
// it fails the requirement, whether it has the label or not (as the
// scheduler matches node affinity: a label selector of the same operators).
func TestNegatedIsOutside(t *testing.T) {
	operators := map[corev1.NodeSelectorOperator]selection.Operator{
		corev1.NodeSelectorOpIn: selection.In, corev1.NodeSelectorOpNotIn: selection.NotIn,
		corev1.NodeSelectorOpExists: selection.Exists, corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	}
	nodes := []map[string]string{nil, {"pool": "a100"}, {"pool": "h100"}, {"other": "x"}}
	for _, r := range []corev1.NodeSelectorRequirement{
		in("pool", "a100"), notIn("pool", "a100"), op("pool", corev1.NodeSelectorOpExists), op("pool", corev1.NodeSelectorOpDoesNotExist),
	} {
		n, ok := pool.Negated(r)
		if !ok {
			t.Fatalf("%v has no negation", r)
		}
		for _, node := range nodes {
			meets := func(req corev1.NodeSelectorRequirement) bool {
				r, err := labels.NewRequirement(req.Key, operators[req.Operator], req.Values)
				if err != nil {
					t.Fatal(err)
				}
				return r.Matches(labels.Set(node))
			}
			if meets(r) == meets(n) {
				t.Errorf("node labelled %v meets %v: %v, and its negation %v: %v", node, r, meets(r), n, meets(n))
			}
		}
	}
	if _, ok := pool.Negated(corev1.NodeSelectorRequirement{Key: "n", Operator: corev1.NodeSelectorOpGt, Values: []string{"1"}}); ok {
		t.Errorf("Gt has a negation")
	}
}

// TestNodeSelectorsChooseThePlacementsNodes: the node selectors of a
// placement choose its pool's nodes, or, off pools, the nodes outside
// every pool avoided, whether they have the pool's labels or not.
func TestNodeSelectorsChooseThePlacementsNodes(t *testing.T) {
	a100 := &quotav1alpha1.ElasticQuotaProfile{ObjectMeta: metav1.ObjectMeta{Name: "a100"}, Spec: quotav1alpha1.ElasticQuotaProfileSpec{
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a100"}}}}
	h100 := &quotav1alpha1.ElasticQuotaProfile{ObjectMeta: metav1.ObjectMeta{Name: "h100"}, Spec: quotav1alpha1.ElasticQuotaProfileSpec{
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "h100"}, MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "gpu-health", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"bad"}}}}}}
	offA100, _ := pool.OutsideOf(a100)
	offH100, _ := pool.OutsideOf(h100)
	nodes := map[string]map[string]string{
		"a100":     {"pool": "a100"},
		"h100":     {"pool": "h100"},
		"h100-bad": {"pool": "h100", "gpu-health": "bad"},
		"plain":    nil,
	}
	cases := map[string]struct {
		placement *pool.Placement
		want      []string
	}{
		"on a pool: its nodes": {
			placement: &pool.Placement{Pool: &pool.Pool{Profile: "a100", Requirements: pool.Requirements(a100.Spec.NodeSelector)}},
			want:      []string{"a100"},
		},
		"off pools: the nodes of none": {
			placement: &pool.Placement{Avoid: []pool.Pool{offA100, offH100}},
			want:      []string{"h100-bad", "plain"},
		},
		"anywhere": {want: []string{"a100", "h100", "h100-bad", "plain"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sels := tc.placement.NodeSelectors()
			var got []string
			for _, n := range slices.Sorted(maps.Keys(nodes)) {
				node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: nodes[n]}}
				meets := true
				for _, sel := range sels {
					s, err := nodeaffinity.NewNodeSelector(sel)
					if err != nil {
						t.Fatal(err)
					}
					meets = meets && s.Match(node)
				}
				if meets {
					got = append(got, n)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		})
	}
}
