package framework

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// TestJobOfUnitName: a unit that goes wakes the job of the reconciler's
// kind it is named for, whoever controlled it, so that a job whose unit
// name was taken may have its own.
func TestJobOfUnitName(t *testing.T) {
	cases := map[string]struct {
		suffix, unit string
		want         []reconcile.Request
	}{
		"a batch Job's unit is named as the Job": {
			unit: "taken",
			want: []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "taken"}}},
		},
		"a TFJob's unit carries the suffix": {
			suffix: "-tf-qu", unit: "train-tf-qu",
			want: []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "train"}}},
		},
		"a unit without the kind's suffix names no job of it": {
			suffix: "-tf-qu", unit: "train",
		},
		"the suffix alone names no job": {
			suffix: "-tf-qu", unit: "-tf-qu",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &JobReconciler{integ: Integration{UnitSuffix: tc.suffix}}
			u := &schedulingv1alpha1.QueueUnit{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: tc.unit}}
			if diff := cmp.Diff(tc.want, r.jobOfUnitName(context.Background(), u)); diff != "" {
				t.Errorf("jobOfUnitName (-want +got):\n%s", diff)
			}
		})
	}
}
