package admission

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestTheQuotaWhoseMinChangeBrokeTheRuleWaits: an old quota's min is raised
// so that its and its younger sibling's mins exceed their parent's. The old
// quota, whose change broke the rule, is invalid and its new unit waits
// saying so; the younger sibling, unchanged, keeps admitting.
func TestTheQuotaWhoseMinChangeBrokeTheRuleWaits(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	org, aOld, bYoung := ns+"-org", ns+"-a-old", ns+"-b-young"
	create(t, wrappers.MakeElasticQuota(org, ns).IsParent().Min(corev1.ResourceCPU, "10").Max(corev1.ResourceCPU, "40").Obj())
	create(t, wrappers.MakeElasticQuota(aOld, ns).Parent(org).Min(corev1.ResourceCPU, "5").Max(corev1.ResourceCPU, "40").Obj())
	create(t, wrappers.MakeElasticQuota(bYoung, ns).Parent(org).Min(corev1.ResourceCPU, "5").Max(corev1.ResourceCPU, "40").Obj())
	unit := func(name, quotaName string) *schedulingv1alpha1.QueueUnit {
		return wrappers.MakeQueueUnit(name, ns).Quota(quotaName).Request(corev1.ResourceCPU, "1").Obj()
	}
	create(t, unit("a1", aOld), unit("b1", bYoung))
	waitPhase(t, ns, "a1", schedulingv1alpha1.Dequeued)
	waitPhase(t, ns, "b1", schedulingv1alpha1.Dequeued)

	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		eq := &elasticquotav1alpha1.ElasticQuota{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: aOld}, eq); err != nil {
			return err
		}
		eq.Spec.Min[corev1.ResourceCPU] = resource.MustParse("8")
		return env.Client.Update(ctx, eq)
	})
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		if ok, err := hasEvent(ctx, ns, aOld, "QuotaInvalid"); err != nil || !ok {
			return fmt.Errorf("no QuotaInvalid event on %s (err %v)", aOld, err)
		}
		return nil
	})
	create(t, unit("a2", aOld), unit("b2", bYoung))
	waitPhase(t, ns, "b2", schedulingv1alpha1.Dequeued)
	waitMessage(t, ns, "a2", fmt.Sprintf("quota %q: its change to a cpu min of 8", aOld), "whose change broke the rule",
		"children's mins add up to more than the parent's min")
	staysEnqueued(t, ns, "a2")
}
