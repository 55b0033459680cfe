package admission

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestSeed004SecondJobWaits is the Koord-Queue documentation's example:
// team-a has max 4 CPU / 8Gi, two 4-CPU jobs: the second waits with a
// reason until the first finishes.
func TestSeed004SecondJobWaits(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota("team-a", ns).Max(corev1.ResourceCPU, "4").Max(corev1.ResourceMemory, "8Gi").
		Min(corev1.ResourceCPU, "4").Min(corev1.ResourceMemory, "8Gi").Parent("").Obj())
	create(t, wrappers.MakeQueueUnit("my-job", ns).Quota("team-a").Request(corev1.ResourceCPU, "4").Request(corev1.ResourceMemory, "8Gi").Consumer().Obj())
	admitted := waitPhase(t, ns, "my-job", schedulingv1alpha1.Dequeued)
	if got := conditionReason(admitted, schedulingv1alpha1.QueueUnitAdmitted); got != "True/Admitted" {
		t.Errorf("Admitted condition %q, want True/Admitted", got)
	}
	if len(admitted.Status.Admissions) != 1 || admitted.Status.Admissions[0].Resources.Cpu().String() != "4" {
		t.Errorf("admissions %+v, want one holding cpu 4", admitted.Status.Admissions)
	}

	create(t, wrappers.MakeQueueUnit("my-job-blocked", ns).Quota("team-a").Request(corev1.ResourceCPU, "4").Request(corev1.ResourceMemory, "8Gi").Consumer().Obj())
	waitMessage(t, ns, "my-job-blocked", "team-a", "cpu")
	staysEnqueued(t, ns, "my-job-blocked")
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		if ok, err := hasEvent(ctx, ns, "my-job-blocked", "FailedScheduling"); err != nil || !ok {
			return errors.Join(err, errors.New("no FailedScheduling event"))
		}
		return nil
	})

	finish(t, ns, "my-job")
	waitPhase(t, ns, "my-job-blocked", schedulingv1alpha1.Dequeued)
}
