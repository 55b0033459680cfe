package job

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
)

// TestQueuedJobEditedToANegativeAmount: a queued Job whose template is
// changed to ask a negative amount has its unit held inactive, with an
// InvalidJob condition and event naming the field, instead of resized to
// the smaller total; fixed, its unit is resized, active again, and the
// condition is gone.
func TestQueuedJobEditedToANegativeAmount(t *testing.T) {
	ctx := context.Background()
	scheme := testScheme(t)
	j := extensionstest.MakeJob("j", "ns").Quota("team-a").Suspend(true).Request("cpu", "4").Obj()
	c := frameworktest.ClientBuilder(t, scheme).WithObjects(j).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	recorder := record.NewFakeRecorder(100)
	r := framework.NewJobReconciler(c, c, recorder, Integration())
	reconcile := func() *schedulingv1alpha1.QueueUnit {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		var u schedulingv1alpha1.QueueUnit
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "j"}, &u); err != nil {
			t.Fatal(err)
		}
		return &u
	}
	setCPU := func(cpu string) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(j), j); err != nil {
			t.Fatal(err)
		}
		j.Spec.Template.Spec.Containers[0].Resources.Requests["cpu"] = resource.MustParse(cpu)
		if err := c.Update(ctx, j); err != nil {
			t.Fatal(err)
		}
	}

	if u := reconcile(); !u.IsActive() || apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitInvalidJob) != nil {
		t.Fatalf("a valid Job's unit: active %v, conditions %v; want active and no InvalidJob", u.IsActive(), u.Status.Conditions)
	}

	setCPU("-8")
	u := reconcile()
	const want = `pod set "main": containers[0] (main): resources.requests[cpu] is -8: a resource amount must not be negative`
	cond := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitInvalidJob)
	if u.IsActive() || cond == nil || !strings.Contains(cond.Message, want) {
		t.Errorf("after -8 cpu: active %v, InvalidJob condition %v; want inactive, saying %q", u.IsActive(), cond, want)
	}
	if got := u.Spec.Resource.Cpu().String(); got != "4" {
		t.Errorf("after -8 cpu the unit asks cpu %s; want the 4 it was queued with", got)
	}
	if e := <-recorder.Events; !strings.HasPrefix(e, "Warning InvalidJob ") || !strings.Contains(e, want) {
		t.Errorf("event %q; want Warning InvalidJob saying %q", e, want)
	}

	setCPU("2")
	u = reconcile()
	if !u.IsActive() || apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitInvalidJob) != nil {
		t.Errorf("fixed: active %v, conditions %v; want active and no InvalidJob", u.IsActive(), u.Status.Conditions)
	}
	if got := u.Spec.Resource.Cpu().String(); got != "2" {
		t.Errorf("fixed, the unit asks cpu %s; want 2", got)
	}
}
