package pool_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/pool"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
)

func node(name, poolName string, ready, cordoned bool, pairs ...string) corev1.Node {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": poolName}},
		Spec:       corev1.NodeSpec{Unschedulable: cordoned},
		Status: corev1.NodeStatus{
			Allocatable: qt.Res(pairs...),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
		},
	}
}

func profile(ratio *string) *quotav1alpha1.ElasticQuotaProfile {
	return &quotav1alpha1.ElasticQuotaProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "a100", Namespace: "kube-system"},
		Spec: quotav1alpha1.ElasticQuotaProfileSpec{QuotaName: "a100-root", ResourceRatio: ratio,
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a100"}}},
	}
}

func str(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for name, q := range l {
		out[string(name)] = q.String()
	}
	return out
}

func TestOf(t *testing.T) {
	deleting := node("a-5", "a100", true, false, "cpu", "32", "memory", "256Gi", "nvidia.com/gpu", "8")
	deleting.DeletionTimestamp = &metav1.Time{}
	nodes := []corev1.Node{
		node("a-1", "a100", true, false, "cpu", "32", "memory", "256Gi", "nvidia.com/gpu", "8"),
		node("a-2", "a100", true, false, "cpu", "32", "memory", "256Gi", "nvidia.com/gpu", "8"),
		node("a-3", "a100", true, true, "cpu", "32", "memory", "256Gi", "nvidia.com/gpu", "8"),   // cordoned
		node("a-4", "a100", false, false, "cpu", "32", "memory", "256Gi", "nvidia.com/gpu", "8"), // NotReady
		node("h-1", "h100", true, false, "cpu", "64", "memory", "512Gi", "nvidia.com/gpu", "8"),
		deleting, // counts nowhere
	}
	cases := map[string]struct {
		ratio                     *string
		total, unschedulable, now map[string]string
	}{
		"whole pool": {
			total:         map[string]string{"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "32"},
			unschedulable: map[string]string{"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "16"},
			now:           map[string]string{"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "16"},
		},
		"ratio 0.9, rounded down as koord-manager does": {
			ratio:         ptr.To("0.9"),
			total:         map[string]string{"cpu": "115200m", "memory": "989560464998", "nvidia.com/gpu": "28"},
			unschedulable: map[string]string{"cpu": "57600m", "memory": "494780232499", "nvidia.com/gpu": "14"},
			now:           map[string]string{"cpu": "57600m", "memory": "494780232499", "nvidia.com/gpu": "14"},
		},
		"a ratio out of range counts as 1": {
			ratio:         ptr.To("1.5"),
			total:         map[string]string{"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "32"},
			unschedulable: map[string]string{"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "16"},
			now:           map[string]string{"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "16"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := pool.Of(profile(tc.ratio), nodes)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.total, str(got.Total)); diff != "" {
				t.Errorf("Total (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.unschedulable, str(got.Unschedulable)); diff != "" {
				t.Errorf("Unschedulable (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.now, str(got.Schedulable())); diff != "" {
				t.Errorf("Schedulable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOfRefusesABadSelector(t *testing.T) {
	p := profile(nil)
	p.Spec.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Near"}}}
	if _, err := pool.Of(p, nil); err == nil {
		t.Error("a selector with operator Near: want an error")
	}
	p.Spec.NodeSelector = nil
	if _, err := pool.Of(p, nil); err == nil {
		t.Error("no selector: want an error")
	}
}
