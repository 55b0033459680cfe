package frameworktest

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// CheckHeldInvalid queues obj, a new job of integ that cannot be queued as
// it is, and checks that the extension says so everywhere a user looks: its
// unit is held inactive (so never admitted), with a True InvalidJob
// condition, and the job has a Warning InvalidJob event; both messages
// contain want (the field to fix). scheme must know integ's types.
func CheckHeldInvalid(t *testing.T, scheme *runtime.Scheme, integ framework.Integration, obj client.Object, want string) {
	t.Helper()
	ctx := context.Background()
	c := ClientBuilder(t, scheme).WithObjects(obj).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, obj).Build()
	recorder := record.NewFakeRecorder(100)
	r := framework.NewJobReconciler(c, c, recorder, integ)
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	var u schedulingv1alpha1.QueueUnit
	if err := c.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: integ.UnitName(obj.GetName())}, &u); err != nil {
		t.Fatalf("getting the unit: %v", err)
	}
	if u.IsActive() {
		t.Errorf("the unit is active; want it held inactive")
	}
	cond := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitInvalidJob)
	switch {
	case cond == nil:
		t.Errorf("the unit has no %s condition; conditions: %v", schedulingv1alpha1.QueueUnitInvalidJob, u.Status.Conditions)
	case cond.Status != "True" || cond.Reason != framework.ReasonInvalidJob || !strings.Contains(cond.Message, want):
		t.Errorf("condition %s = %s, %s, %q; want True, %s, saying %q", cond.Type, cond.Status, cond.Reason, cond.Message, framework.ReasonInvalidJob, want)
	}
	close(recorder.Events)
	var events []string
	found := false
	for e := range recorder.Events {
		events = append(events, e)
		found = found || strings.HasPrefix(e, corev1.EventTypeWarning+" "+framework.ReasonInvalidJob+" ") && strings.Contains(e, want)
	}
	if !found {
		t.Errorf("events %q; want a Warning %s saying %q", events, framework.ReasonInvalidJob, want)
	}
}
