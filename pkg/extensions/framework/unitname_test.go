package framework

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// TestJobControllingUnit: a unit's events wake the job of the reconciler's
// kind (any version of its group) that controls it, as Owns would, and no
// other.
func TestJobControllingUnit(t *testing.T) {
	ref := func(apiVersion, kind, name string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("u-" + name), Controller: &controller}
	}
	cases := map[string]struct {
		refs []metav1.OwnerReference
		want []reconcile.Request
	}{
		"controlled by a Job": {
			refs: []metav1.OwnerReference{ref("batch/v1", "Job", "train", true)},
			want: []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "train"}}},
		},
		"controlled by a Job of another version of the group": {
			refs: []metav1.OwnerReference{ref("batch/v2", "Job", "train", true)},
			want: []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "train"}}},
		},
		"owned by a Job that does not control it": {
			refs: []metav1.OwnerReference{ref("batch/v1", "Job", "train", false)},
		},
		"controlled by a kind of the same name in another group": {
			refs: []metav1.OwnerReference{ref("example.com/v1", "Job", "train", true), ref("batch/v1", "Job", "other", false)},
		},
		"controlled by another kind of the group": {
			refs: []metav1.OwnerReference{ref("batch/v1", "CronJob", "nightly", true)},
		},
		"no owner": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &JobReconciler{integ: Integration{GVK: jobGVK}}
			u := &schedulingv1alpha1.QueueUnit{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unit", OwnerReferences: tc.refs}}
			if diff := cmp.Diff(tc.want, r.jobControllingUnit(context.Background(), u)); diff != "" {
				t.Errorf("jobControllingUnit (-want +got):\n%s", diff)
			}
		})
	}
}
