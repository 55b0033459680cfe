package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/test/testenv"
	"github.com/koord-queue/koord-queue/test/wrappers"
)

// TestAdmissionChecks: a unit the queue's check selects stays Reserved,
// holding quota, until the check is Ready; Retry and Rejected send it back
// with a backoff and release its quota.
func TestAdmissionChecks(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.ElasticQuota(ns, ns).Max(corev1.ResourceCPU, "4").Obj())
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		q := &schedulingv1alpha1.Queue{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: schedulingv1alpha1.QueueNamespace, Name: ns}, q); err != nil {
			return err
		}
		q.Spec.AdmissionChecks = []schedulingv1alpha1.AdmissionCheckWithSelector{{
			Name:     "prov-req-check",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"requires-provisioning": "true"}},
		}}
		return env.Client.Update(ctx, q)
	})

	setCheck := func(t *testing.T, name string, state schedulingv1alpha1.CheckState) {
		t.Helper()
		setStatus(t, ns, name, func(u *schedulingv1alpha1.QueueUnit) {
			u.Status.AdmissionChecks[0].State = state
			u.Status.AdmissionChecks[0].Message = "provisioning says " + string(state)
		})
	}

	t.Run("a unit the check does not select is admitted at once", func(t *testing.T) {
		create(t, wrappers.QueueUnit(ns, "unchecked").Quota(ns).Request(corev1.ResourceCPU, "1").Obj())
		waitPhase(t, ns, "unchecked", schedulingv1alpha1.Dequeued)
		finish(t, ns, "unchecked")
	})

	t.Run("Ready releases the unit", func(t *testing.T) {
		create(t, wrappers.QueueUnit(ns, "ready").Quota(ns).Label("requires-provisioning", "true").Request(corev1.ResourceCPU, "4").Obj())
		u := waitPhase(t, ns, "ready", schedulingv1alpha1.Reserved)
		if len(u.Status.AdmissionChecks) != 1 || u.Status.AdmissionChecks[0].State != schedulingv1alpha1.CheckStatePending {
			t.Fatalf("admission checks %+v, want prov-req-check Pending", u.Status.AdmissionChecks)
		}
		if len(u.Status.Admissions) == 0 {
			t.Errorf("a Reserved unit holds its quota: admissions must be set")
		}
		setCheck(t, "ready", schedulingv1alpha1.CheckStateReady)
		waitPhase(t, ns, "ready", schedulingv1alpha1.Dequeued)
		finish(t, ns, "ready")
	})

	for _, state := range []schedulingv1alpha1.CheckState{schedulingv1alpha1.CheckStateRetry, schedulingv1alpha1.CheckStateRejected} {
		t.Run(string(state)+" sends the unit back with a backoff and releases its quota", func(t *testing.T) {
			name := "check-" + strings.ToLower(string(state))
			create(t, wrappers.QueueUnit(ns, name).Quota(ns).Label("requires-provisioning", "true").Request(corev1.ResourceCPU, "4").Obj())
			waitPhase(t, ns, name, schedulingv1alpha1.Reserved)
			setCheck(t, name, state)
			u := waitPhase(t, ns, name, schedulingv1alpha1.Enqueued)
			if u.Status.RequeueState == nil || u.Status.RequeueState.Count != 1 || u.Status.RequeueState.RequeueAt == nil {
				t.Fatalf("requeueState %+v, want count 1 and a requeueAt", u.Status.RequeueState)
			}
			if len(u.Status.Admissions) != 0 {
				t.Errorf("admissions %+v, want the quota released", u.Status.Admissions)
			}
			// After the backoff it is tried again, and reserved again.
			u = waitPhase(t, ns, name, schedulingv1alpha1.Reserved)
			if u.Status.AdmissionChecks[0].State != schedulingv1alpha1.CheckStatePending {
				t.Errorf("check state %s after requeue, want Pending", u.Status.AdmissionChecks[0].State)
			}
			setCheck(t, name, schedulingv1alpha1.CheckStateReady)
			waitPhase(t, ns, name, schedulingv1alpha1.Dequeued)
			finish(t, ns, name)
		})
	}
}
