package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestLimitRangeDefaultsAreCharged: in a namespace whose LimitRange gives
// each container a default request of 2 CPU, two 2-pod Jobs whose
// containers request nothing ask 4 CPU each in a 4-CPU quota, as their
// pods will hold: the first is admitted, the second waits until the
// first's pods have left their nodes, and the tenant's pods on nodes
// (Terminating included) never hold more than the quota's max.
func TestLimitRangeDefaultsAreCharged(t *testing.T) {
	t.Parallel()
	const ns, quota = "hostile-limitrange", "limitrange"
	create(t, namespaceObj(ns))
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	// The cluster admin's: the tenant's edit role cannot write LimitRanges.
	create(t, wrappers.MakeLimitRange("defaults", ns).Container(nil, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}).Obj())
	tn := newTenant(t, ns)
	monitor := monitorPods(ns)

	// Both at once: a unit asking nothing would fit beside the other
	// whatever its pods hold.
	first, second := requestingNothing(ns, "first", quota), requestingNothing(ns, "second", quota)
	tn.create(t, first)
	tn.create(t, second)
	var ran, waiting string // the Job whose pods run first, the other
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := k8sClient.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return err
		}
		running := map[string]int{}
		var held resource.Quantity
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				running[p.Labels[batchv1.JobNameLabel]]++
				held.Add(resources.PodRequests(&p.Spec)[corev1.ResourceCPU])
			}
		}
		if held.Cmp(resource.MustParse("4")) > 0 {
			t.Fatalf("the tenant's pods on nodes %v hold %s cpu, over its quota's max of 4", running, held.String())
		}
		if running[first.Name] < 2 && running[second.Name] < 2 {
			return fmt.Errorf("pods on nodes: %v; want one Job's 2 running", running)
		}
		ran, waiting = first.Name, second.Name
		if running[first.Name] < 2 {
			ran, waiting = second.Name, first.Name
		}
		// The other waits, saying why (a message is written after a
		// cycle decided it); admitted, its pods would be on nodes soon.
		u, err := unitPhase(ctx, ns, waiting)
		switch {
		case err != nil:
			return err
		case queueunit.HoldsQuota(u) || u.Status.Message == "" || u.Status.Message == "Enqueued":
			return fmt.Errorf("%s's pods run; %s's unit holds quota %v, says %q: want it waiting, saying why", ran, waiting, queueunit.HoldsQuota(u), u.Status.Message)
		}
		return nil
	})
	for _, name := range []string{first.Name, second.Name} {
		u, err := unitPhase(context.Background(), ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if cpu := u.Spec.Request[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("4")) != 0 {
			t.Errorf("%s's unit asks for %s cpu, want 4: 2 pods of the LimitRange's default 2", name, cpu.String())
		}
	}
	// The one that ran leaves: the other runs once its pods are gone.
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ran}}
	if err := tn.c.Delete(context.Background(), job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		if n := boundPods(ctx, t, ns, waiting); n < 2 {
			return fmt.Errorf("%d of the 2 pods of %s run", n, waiting)
		}
		return nil
	})
	if peak := monitor.Peak(); peak.Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("the tenant's pods held %s cpu on nodes at their peak, over its quota's max of 4", peak.String())
	}
}

// requestingNothing is a lingering Job of 2 pods whose container requests
// and limits nothing.
func requestingNothing(ns, name, quota string) *batchv1.Job {
	job := lingeringJob(ns, name, quota, "1", 2)
	job.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	return job
}
