package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestReclaimAcrossNamespacesNamesNoOtherUnit: tenant B's units borrow
// tenant A's idle min; when A needs it back, B's victim is told it was
// preempted by "a unit of another namespace", in its Evicted condition,
// its message and its Preempted event, and A's unit does not name B's
// victim while it waits for it.
func TestReclaimAcrossNamespacesNamesNoOtherUnit(t *testing.T) {
	startKoordQueue(t, fastOptions())
	nsA := namespace(t)
	nsB := nsA + "-b"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsB}})
	_, a, b := siblings(t, nsA, "8", "4")
	create(t, wrappers.MakeQueueUnit("borrower-one", nsB).Quota(b).Request(corev1.ResourceCPU, "4").Consumer().Obj())
	waitPhase(t, nsB, "borrower-one", schedulingv1alpha1.Dequeued)
	create(t, wrappers.MakeQueueUnit("borrower-two", nsB).Quota(b).Request(corev1.ResourceCPU, "4").Consumer().Obj())
	waitPhase(t, nsB, "borrower-two", schedulingv1alpha1.Dequeued)

	create(t, wrappers.MakeQueueUnit("claimant", nsA).Quota(a).Request(corev1.ResourceCPU, "4").Consumer().Obj())
	victim := waitPhase(t, nsB, "borrower-two", schedulingv1alpha1.Enqueued)
	told := "preempted by a unit of another namespace to reclaim the min of quota " + a
	if c := meta.FindStatusCondition(victim.Status.Conditions, schedulingv1alpha1.QueueUnitEvicted); c == nil || c.Message != told {
		t.Errorf("victim's Evicted condition %+v, want the message %q", c, told)
	}
	claimant := waitMessage(t, nsA, "claimant", "preempting 1 unit(s) to reclaim the min of quota "+a+": a unit of another namespace")
	if strings.Contains(claimant.Status.Message, "borrower") {
		t.Errorf("the claimant's message names the victim: %q", claimant.Status.Message)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		events := &corev1.EventList{}
		if err := env.Client.List(ctx, events, client.InNamespace(nsB)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "borrower-two" && e.Reason == "Preempted" {
				if e.Message != told {
					t.Errorf("the victim's Preempted event says %q, want %q", e.Message, told)
				}
				return nil
			}
		}
		return fmt.Errorf("no Preempted event on the victim")
	})
	podsGone(t, nsB, "borrower-two")
	waitPhase(t, nsA, "claimant", schedulingv1alpha1.Dequeued)
}
