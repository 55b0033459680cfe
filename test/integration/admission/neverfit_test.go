package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestRequestsTooLargeToCount: a request koord-queue cannot count (memory
// 1e40, or a pod set whose count times request overflows) is never charged
// as 0 and admitted: the unit waits, saying it can never be admitted, and
// units behind it are admitted.
func TestRequestsTooLargeToCount(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	quota := ns + "-team"
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Max(corev1.ResourceMemory, "100Gi").Obj())
	create(t,
		wrappers.MakeQueueUnit("huge-memory", ns).Quota(quota).Priority(100).Request(corev1.ResourceCPU, "1").Request(corev1.ResourceMemory, "1e40").Obj(),
		wrappers.MakeQueueUnit("huge-pod-set", ns).Quota(quota).Priority(100).PodSet("workers", 2000000000, "cpu", "9223372036").Obj(),
	)
	for _, name := range []string{"huge-memory", "huge-pod-set"} {
		waitMessage(t, ns, name, "can never be admitted")
	}
	create(t, wrappers.MakeQueueUnit("ordinary", ns).Quota(quota).Request(corev1.ResourceCPU, "1").Obj())
	waitPhase(t, ns, "ordinary", schedulingv1alpha1.Dequeued)
	for _, name := range []string{"huge-memory", "huge-pod-set"} {
		staysEnqueued(t, ns, name)
	}
}

// TestUnitThatCanNeverFitSaysSo: a unit asking more than its quota's max
// is told it can never be admitted, not the ordinary "used of max" wait.
func TestUnitThatCanNeverFitSaysSo(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	quota := ns + "-team"
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	create(t, wrappers.MakeQueueUnit("too-big", ns).Quota(quota).Request(corev1.ResourceCPU, "5").Obj())
	waitMessage(t, ns, "too-big", "request cpu 5 exceeds max 4 of "+quota+": it can never be admitted")
}
