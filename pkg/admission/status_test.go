package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

func TestChecksVerdict(t *testing.T) {
	reserved := func(states ...string) *schedulingv1alpha1.QueueUnit {
		u := &schedulingv1alpha1.QueueUnit{Status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Reserved}}
		for i := 0; i < len(states); i += 2 {
			u.Status.AdmissionChecks = append(u.Status.AdmissionChecks, schedulingv1alpha1.AdmissionCheckState{
				Name: states[i], State: schedulingv1alpha1.CheckState(states[i+1])})
		}
		return u
	}
	both := queueChecks{names: []string{"a", "b"}, known: true}
	cases := map[string]struct {
		unit       *schedulingv1alpha1.QueueUnit
		current    queueChecks
		wantReady  bool
		wantFailed string
	}{
		"all Ready":                                  {unit: reserved("a", "Ready", "b", "Ready"), current: both, wantReady: true},
		"one Pending":                                {unit: reserved("a", "Ready", "b", "Pending"), current: both},
		"Retry sends it back":                        {unit: reserved("a", "Ready", "b", "Retry"), current: both, wantFailed: "b"},
		"a Pending check taken off the queue":        {unit: reserved("a", "Ready", "b", "Pending"), current: queueChecks{names: []string{"a"}, known: true}, wantReady: true},
		"a Rejected check taken off the queue":       {unit: reserved("a", "Ready", "b", "Rejected"), current: queueChecks{names: []string{"a"}, known: true}, wantReady: true},
		"every check taken off the queue":            {unit: reserved("a", "Pending"), current: queueChecks{known: true}, wantReady: true},
		"an unknown queue changes nothing":           {unit: reserved("a", "Ready", "b", "Pending"), current: queueChecks{}},
		"a unit that is not Reserved has no verdict": {unit: &schedulingv1alpha1.QueueUnit{}, current: both},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ready, failed := checksVerdict(tc.unit, tc.current)
			gotFailed := ""
			if failed != nil {
				gotFailed = failed.Name
			}
			if ready != tc.wantReady || gotFailed != tc.wantFailed {
				t.Errorf("checksVerdict = %v, %q; want %v, %q", ready, gotFailed, tc.wantReady, tc.wantFailed)
			}
		})
	}
}

func TestSetChecksPassedResetsRemovedChecks(t *testing.T) {
	now := metav1.Now()
	u := &schedulingv1alpha1.QueueUnit{Status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Reserved,
		AdmissionChecks: []schedulingv1alpha1.AdmissionCheckState{{Name: "kept", State: schedulingv1alpha1.CheckStateReady}, {Name: "gone", State: schedulingv1alpha1.CheckStatePending}}}}
	setChecksPassed(u, queueChecks{names: []string{"kept"}, known: true}, "team-a", now)
	want := []schedulingv1alpha1.AdmissionCheckState{
		{Name: "kept", State: schedulingv1alpha1.CheckStateReady},
		{Name: "gone", State: schedulingv1alpha1.CheckStateReady, Message: "removed from queue team-a: counts as Ready", LastTransitionTime: now},
	}
	if diff := cmp.Diff(want, u.Status.AdmissionChecks); diff != "" {
		t.Errorf("admission checks (-want +got):\n%s", diff)
	}
	if wantMsg := "admitted: every admission check is Ready ([gone] removed from queue team-a, so counted as Ready)"; u.Status.Message != wantMsg {
		t.Errorf("message %q, want %q", u.Status.Message, wantMsg)
	}
	if u.Status.Phase != schedulingv1alpha1.Dequeued {
		t.Errorf("phase %s, want Dequeued", u.Status.Phase)
	}
}
