package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestMaximumExecutionTimeDeactivates: a unit admitted with
// spec.maximumExecutionTimeSeconds 1 is, a second later, deactivated and
// evicted with reason MaximumExecutionTimeExceeded and an event; once its
// pods are gone it stays out of its queue, and the unit waiting for its
// quota is admitted. A unit without the limit runs on.
func TestMaximumExecutionTimeDeactivates(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	q := ns + "-q"
	create(t, wrappers.MakeElasticQuota(q, ns).Max(corev1.ResourceCPU, "4").Obj())
	limited := wrappers.MakeQueueUnit("limited", ns).Quota(q).Request(corev1.ResourceCPU, "2").Consumer().Obj()
	limited.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](1)
	create(t, limited, wrappers.MakeQueueUnit("unlimited", ns).Quota(q).Request(corev1.ResourceCPU, "2").Consumer().Obj())
	waitPhase(t, ns, "unlimited", schedulingv1alpha1.Dequeued)
	create(t, wrappers.MakeQueueUnit("next", ns).Quota(q).Request(corev1.ResourceCPU, "2").Consumer().Obj())

	// "limited" may still wait when "unlimited" is admitted, so wait for
	// the eviction itself rather than for a phase it had before admission.
	evicted := waitUnit(t, ns, "limited", func(u *schedulingv1alpha1.QueueUnit) error {
		if u.EffectivePhase() != schedulingv1alpha1.Enqueued || meta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitEvicted) == nil {
			return fmt.Errorf("phase %s, want Enqueued with an Evicted condition", u.EffectivePhase())
		}
		return nil
	})
	if evicted.IsActive() {
		t.Errorf("spec.active %v, want false", ptr.Deref(evicted.Spec.Active, true))
	}
	if got := conditionReason(evicted, schedulingv1alpha1.QueueUnitEvicted); got != "True/MaximumExecutionTimeExceeded" {
		t.Errorf("Evicted condition %q, want True/MaximumExecutionTimeExceeded", got)
	}
	if c := meta.FindStatusCondition(evicted.Status.Conditions, schedulingv1alpha1.QueueUnitEvicted); c == nil || !strings.Contains(c.Message, "maximum execution time of 1s") {
		t.Errorf("Evicted condition %+v, want its message to say the limit", c)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		if ok, err := hasEvent(ctx, ns, "limited", "MaximumExecutionTimeExceeded"); err != nil || !ok {
			return fmt.Errorf("no MaximumExecutionTimeExceeded event on the unit (err %v)", err)
		}
		return nil
	})

	podsGone(t, ns, "limited")
	waitPhase(t, ns, "next", schedulingv1alpha1.Dequeued)
	waitMessage(t, ns, "limited", "inactive: spec.active is false")
	staysEnqueued(t, ns, "limited")
	if u, _ := getUnit(context.Background(), ns, "unlimited"); u.EffectivePhase() != schedulingv1alpha1.Dequeued {
		t.Errorf("unlimited phase %s, want it still Dequeued", u.EffectivePhase())
	}
}
