package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestWaitForPodsRunningWaitsForEveryPod: in a wait-for-pods-running queue,
// a Job of two pods only one of which can be scheduled (both must go to
// kwok-node-0, and neither beside the other) holds the queue shut though
// its first pod runs: the next Job waits, saying which pod set is short.
// Once the half-placed Job is deleted, the next one is admitted and runs.
func TestWaitForPodsRunningWaitsForEveryPod(t *testing.T) {
	t.Parallel()
	const ns, quota = "wait-for-pods", "gated"
	create(t, namespaceObj(ns))
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "10").
		Annotation(schedulingv1alpha1.AnnotationWaitForPodsRunning, "true").Obj())

	half := batchJob(ns, "half", quota, "1")
	half.Spec.Parallelism, half.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
	podLabels := map[string]string{"e2e": "half"}
	half.Spec.Template.Labels = podLabels
	half.Spec.Template.Annotations = map[string]string{cluster.PodRunTimeAnnotation: "10m"}
	half.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "kwok-node-0"}
	half.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: podLabels},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
	create(t, half)
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		u, err := unitPhase(ctx, ns, half.Name)
		if err != nil {
			return err
		}
		if u.Status.Phase != schedulingv1alpha1.Running || len(u.Status.Admissions) != 1 || u.Status.Admissions[0].Running != 1 {
			return fmt.Errorf("half: phase %s, admissions %+v; want Running with 1 of its 2 pods on a node", u.Status.Phase, u.Status.Admissions)
		}
		if n := livePods(ctx, t, ns, half.Name, false); n != 2 {
			return fmt.Errorf("half has %d pods, want 2 (one of them unschedulable)", n)
		}
		return nil
	})

	next := batchJob(ns, "next", quota, "1")
	create(t, next)
	const why = "queue gated waits for wait-for-pods/half to be running (wait-for-pods-running): pod set main has 1 of 2 pods scheduled"
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitPhase(ctx, ns, next.Name)
		if err != nil {
			return err
		}
		if queueunit.HoldsQuota(u) {
			t.Fatalf("next was admitted (phase %s) while half has one of its two pods on a node", u.Status.Phase)
		}
		if u.Status.Message != why {
			return fmt.Errorf("next: phase %s, message %q; want it to wait, saying %q", u.Status.Phase, u.Status.Message, why)
		}
		view, err := unitView(ctx, ns, next.Name)
		if err != nil {
			return err
		}
		if !strings.Contains(view.Reason, "pod set main has 1 of 2 pods scheduled") {
			return fmt.Errorf("next: the visibility API says %q; want it to name pod set main", view.Reason)
		}
		return nil
	})

	if err := k8sClient.Delete(context.Background(), half, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	waitJobsComplete(t, 2*time.Minute, ns, next.Name)
}
