package admission

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/test/testenv"
	"github.com/koord-queue/koord-queue/test/wrappers"
)

// TestQueueStatus: a Queue's status lists its pending units in order with
// 1-based positions, counts pending and admitted units, and says whether
// its quota is usable.
func TestQueueStatus(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "2").Obj())
	create(t, wrappers.MakeQueueUnit("admitted", ns).Quota(ns).Request(corev1.ResourceCPU, "2").Obj())
	waitPhase(t, ns, "admitted", schedulingv1alpha1.Dequeued)
	create(t,
		wrappers.MakeQueueUnit("low", ns).Quota(ns).Priority(1).Request(corev1.ResourceCPU, "1").Obj(),
		wrappers.MakeQueueUnit("high", ns).Quota(ns).Priority(9).Request(corev1.ResourceCPU, "1").Obj(),
	)
	want := []schedulingv1alpha1.QueueItemDetail{
		{Name: "high", Namespace: ns, Priority: 9, Position: 1},
		{Name: "low", Namespace: ns, Priority: 1, Position: 2},
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		q := &schedulingv1alpha1.Queue{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: schedulingv1alpha1.QueueNamespace, Name: ns}, q); err != nil {
			return err
		}
		if diff := cmp.Diff(want, q.Status.QueueItemDetails[schedulingv1alpha1.QueueItemDetailsActive]); diff != "" {
			return fmt.Errorf("queueItemDetails[active] (-want +got):\n%s", diff)
		}
		if q.Status.Pending != 2 || q.Status.Admitted != 1 {
			return fmt.Errorf("pending %d admitted %d, want 2 and 1", q.Status.Pending, q.Status.Admitted)
		}
		if !meta.IsStatusConditionTrue(q.Status.Conditions, admission.QueueConditionReady) {
			return fmt.Errorf("conditions %+v, want Ready", q.Status.Conditions)
		}
		return nil
	})
}
