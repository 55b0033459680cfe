package extensions

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestPodGate: behind the real API server, the pod webhook creates the pods
// of a queued Job that its unit's admission does not cover at koord-queue's
// scheduling gate, and a released Job's pods as they are; the Job's
// reconciler opens the gate of those its admission covers once it is
// admitted, and keeps the others gated. The test plays the Job controller:
// it makes the Job's pods.
func TestPodGate(t *testing.T) {
	t.Parallel()
	ns := newNamespaceWithPodGate(t)
	j := extensionstest.MakeJob("train", ns).Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
	create(t, j)
	unitKey := client.ObjectKey{Namespace: ns, Name: j.Name}
	unitWhere(t, unitKey, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
	newPod := func(name string) *corev1.Pod {
		t.Helper()
		p := wrappers.MakePod(name, ns).ControlledBy(j, batchv1.SchemeGroupVersion.WithKind("Job")).Requests("cpu", "1").Obj()
		create(t, p)
		return p
	}

	// Un-suspended by hand while its unit waits, the Job controller makes
	// its pods before the reconciler suspends the Job again.
	updateJob(t, j, func() { j.Spec.Suspend = ptr.To(false) })
	early := newPod("train-early")
	if !gated(early) {
		t.Errorf("a pod of a Job whose unit waits was created ungated: %v", early.Spec.SchedulingGates)
	}
	jobWhere(t, job.Integration(), client.ObjectKeyFromObject(j), "suspended again", func(j framework.GenericJob) bool { return j.IsSuspended() })
	podWhere(t, early, "still gated while its unit waits", gated)

	t.Run("a bare pod that names a quota is refused", func(t *testing.T) {
		err := k8s.Create(context.Background(), wrappers.MakePod("bare", ns).Quota("team-a").Requests("cpu", "1").Obj())
		if !apierrors.IsForbidden(err) {
			t.Errorf("got %v, want the pod refused", err)
		}
	})

	// Admitted and released: the gated pod is let through, and a new pod
	// of the released Job is created as it is, up to what the admission
	// covers.
	admit(t, unitKey)
	jobWhere(t, job.Integration(), client.ObjectKeyFromObject(j), "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })
	podWhere(t, early, "let through once its unit is admitted", func(p *corev1.Pod) bool { return !gated(p) })
	if second := newPod("train-second"); gated(second) {
		t.Errorf("a pod of a released Job that its admission covers was created gated: %v", second.Spec.SchedulingGates)
	}
	third := newPod("train-third")
	if !gated(third) {
		t.Errorf("a third pod of a Job admitted with two was created ungated")
	}
	// One of the two goes: the third takes its place.
	if err := k8s.Delete(context.Background(), early); err != nil {
		t.Fatal(err)
	}
	podWhere(t, third, "let through once a pod of its pod set is gone", func(p *corev1.Pod) bool { return !gated(p) })
}

func gated(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == schedulingv1alpha1.SchedulingGateAdmission
	})
}

// podWhere waits for pod to satisfy cond.
func podWhere(t *testing.T, pod *corev1.Pod, what string, cond func(*corev1.Pod) bool) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return fmt.Errorf("waiting for pod %s: %s: %w", pod.Name, what, err)
		}
		if !cond(pod) {
			return fmt.Errorf("waiting for pod %s: %s; last seen: gates %v", pod.Name, what, pod.Spec.SchedulingGates)
		}
		return nil
	})
}

// TestPodGateHoldsABurstToItsAdmission: the pods of a released Job created
// all at once, as the Job controller makes them, each asked for before
// the controllers' cache shows the others: the admission's pods are let
// through and the rest are gated.
func TestPodGateHoldsABurstToItsAdmission(t *testing.T) {
	t.Parallel()
	ns := newNamespaceWithPodGate(t)
	j := extensionstest.MakeJob("burst", ns).Quota("team-a").Parallelism(3).Request("cpu", "1").Obj()
	create(t, j)
	unitKey := client.ObjectKey{Namespace: ns, Name: j.Name}
	unitWhere(t, unitKey, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
	admit(t, unitKey)
	jobWhere(t, job.Integration(), client.ObjectKeyFromObject(j), "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })

	const burst = 12
	pods := make([]*corev1.Pod, burst)
	errs := make([]error, burst)
	var wg sync.WaitGroup
	for i := range pods {
		pods[i] = wrappers.MakePod(fmt.Sprintf("burst-%d", i), ns).ControlledBy(j, batchv1.SchemeGroupVersion.WithKind("Job")).Requests("cpu", "1").Obj()
		wg.Go(func() { errs[i] = k8s.Create(context.Background(), pods[i]) })
	}
	wg.Wait()
	ungated := 0
	for i, p := range pods {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !gated(p) {
			ungated++
		}
	}
	if ungated != 3 {
		t.Errorf("%d of a burst of %d pods of a Job admitted with 3 were created ungated, want 3", ungated, burst)
	}
}
