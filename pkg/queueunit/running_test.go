package queueunit_test

import (
	"testing"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestFullyRunning: what wait-for-pods-running waits for, a unit admitted
// with every pod set's pods on nodes, and the pod set it names while it
// waits.
func TestFullyRunning(t *testing.T) {
	cases := map[string]struct {
		unit          *schedulingv1alpha1.QueueUnit
		wantRunning   bool
		wantShortfall string
	}{
		"every pod set has all its pods scheduled": {
			unit: wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.Running).
				RunningAdmission("master", 1, 1).RunningAdmission("worker", 2, 2).Obj(),
			wantRunning: true,
		},
		"a Dequeued unit whose pods are all scheduled runs, whatever its phase says": {
			unit:        wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.Dequeued).RunningAdmission("main", 2, 2).Obj(),
			wantRunning: true,
		},
		"one pod of two scheduled is not fully running": {
			unit:          wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.Running).RunningAdmission("main", 2, 1).Obj(),
			wantShortfall: "pod set main has 1 of 2 pods scheduled",
		},
		"the first pod set that is short is named": {
			unit: wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.Running).
				RunningAdmission("master", 1, 1).RunningAdmission("worker", 3, 0).RunningAdmission("ps", 2, 1).Obj(),
			wantShortfall: "pod set worker has 0 of 3 pods scheduled",
		},
		"a pod set of no pods needs none": {
			unit: wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.Running).
				RunningAdmission("head", 1, 1).RunningAdmission("idle", 0, 0).Obj(),
			wantRunning: true,
		},
		"an admitted unit without admissions yet is not running": {
			unit: wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.Dequeued).Obj(),
		},
		"a Reserved unit waits for its checks, however many pods it counts": {
			unit:          wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.Reserved).RunningAdmission("main", 1, 0).Obj(),
			wantShortfall: "pod set main has 0 of 1 pods scheduled",
		},
		"an evicted unit whose pods still run is not running": {
			unit: wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.Enqueued).RunningAdmission("main", 1, 1).Obj(),
		},
		"a finished unit is not running": {
			unit: wrappers.MakeQueueUnit("u", "ns").Phase(schedulingv1alpha1.Succeed).RunningAdmission("main", 1, 1).Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := queueunit.FullyRunning(tc.unit); got != tc.wantRunning {
				t.Errorf("FullyRunning = %v, want %v", got, tc.wantRunning)
			}
			if got := queueunit.RunningShortfall(tc.unit); got != tc.wantShortfall {
				t.Errorf("RunningShortfall = %q, want %q", got, tc.wantShortfall)
			}
		})
	}
}
