package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestAdmissionChecks: a unit the queue's check selects stays Reserved,
// holding quota, until the check is Ready; Retry and Rejected send it back
// with a backoff and release its quota.
func TestAdmissionChecks(t *testing.T) {
	cache := startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "4").Obj())
	setQueueChecks(t, cache, ns, []schedulingv1alpha1.AdmissionCheckWithSelector{{
		Name:     "prov-req-check",
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"requires-provisioning": "true"}},
	}})

	setCheck := func(t *testing.T, name string, state schedulingv1alpha1.CheckState) {
		t.Helper()
		setStatus(t, ns, name, func(u *schedulingv1alpha1.QueueUnit) {
			u.Status.AdmissionChecks[0].State = state
			u.Status.AdmissionChecks[0].Message = "provisioning says " + string(state)
		})
	}

	t.Run("a unit the check does not select is admitted at once", func(t *testing.T) {
		create(t, wrappers.MakeQueueUnit("unchecked", ns).Quota(ns).Request(corev1.ResourceCPU, "1").Obj())
		waitPhase(t, ns, "unchecked", schedulingv1alpha1.Dequeued)
		finish(t, ns, "unchecked")
	})

	t.Run("Ready releases the unit", func(t *testing.T) {
		create(t, wrappers.MakeQueueUnit("ready", ns).Quota(ns).Label("requires-provisioning", "true").Request(corev1.ResourceCPU, "4").Obj())
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
			create(t, wrappers.MakeQueueUnit(name, ns).Quota(ns).Label("requires-provisioning", "true").Request(corev1.ResourceCPU, "4").Obj())
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

// setQueueChecks sets the admission checks of the Queue called name, once
// koord-queue has made it from its ElasticQuota, and waits until cache
// (koord-queue's) has seen them: units created after it are judged with
// them, whatever order koord-queue's informers deliver in.
func setQueueChecks(t *testing.T, cache *admission.Cache, name string, checks []schedulingv1alpha1.AdmissionCheckWithSelector) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		q := &schedulingv1alpha1.Queue{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: schedulingv1alpha1.QueueNamespace, Name: name}, q); err != nil {
			return err
		}
		q.Spec.AdmissionChecks = checks
		return env.Client.Update(ctx, q)
	})
	testenv.Eventually(t, testenv.DefaultTimeout, func(context.Context) error {
		if st, ok := cache.QueueState(name); ok && equality.Semantic.DeepEqual(st.Queue.Spec.AdmissionChecks, checks) {
			return nil
		}
		return fmt.Errorf("waiting for koord-queue to see the admission checks of Queue %s", name)
	})
}

// TestAdmissionCheckRemovedFromQueue: a Reserved unit waiting for a check
// that is then removed from its Queue does not wait for it forever, holding
// quota: the check counts as Ready, as in Koord-Queue, and an event says so.
func TestAdmissionCheckRemovedFromQueue(t *testing.T) {
	cache := startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "4").Obj())
	setQueueChecks(t, cache, ns, []schedulingv1alpha1.AdmissionCheckWithSelector{{Name: "kept"}, {Name: "removed"}})
	create(t, wrappers.MakeQueueUnit("checked", ns).Quota(ns).Request(corev1.ResourceCPU, "4").Obj())
	u := waitPhase(t, ns, "checked", schedulingv1alpha1.Reserved)
	if len(u.Status.AdmissionChecks) != 2 {
		t.Fatalf("admission checks %+v, want kept and removed", u.Status.AdmissionChecks)
	}
	setStatus(t, ns, "checked", func(u *schedulingv1alpha1.QueueUnit) {
		for i := range u.Status.AdmissionChecks {
			if u.Status.AdmissionChecks[i].Name == "kept" {
				u.Status.AdmissionChecks[i].State = schedulingv1alpha1.CheckStateReady
			}
		}
	})
	// "removed" is still Pending: the unit stays Reserved.
	waitPhase(t, ns, "checked", schedulingv1alpha1.Reserved)

	setQueueChecks(t, cache, ns, []schedulingv1alpha1.AdmissionCheckWithSelector{{Name: "kept"}})
	u = waitPhase(t, ns, "checked", schedulingv1alpha1.Dequeued)
	for _, c := range u.Status.AdmissionChecks {
		if c.State != schedulingv1alpha1.CheckStateReady {
			t.Errorf("check %s is %s, want Ready (kept: set so; removed: reset)", c.Name, c.State)
		}
	}
	if !strings.Contains(u.Status.Message, "removed") {
		t.Errorf("message %q, want it to say the check was removed from the queue", u.Status.Message)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		events := &corev1.EventList{}
		if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "checked" && e.Reason == queueunit.EventAdmissionCheck && strings.Contains(e.Message, "removed") {
				return nil
			}
		}
		return fmt.Errorf("no AdmissionCheck event saying the check was removed")
	})
}
