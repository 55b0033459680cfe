package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/topology"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

const (
	blockLabel = "e2e.koord-queue.io/block"
	rackLabel  = "e2e.koord-queue.io/rack"
)

// TestJobsLandWithinOneRackOnKwok: 16 kwok nodes of 4 cpu in 2 blocks × 4
// racks × 2 hosts, a Topology of their labels, and a quota naming it. Three
// Jobs of 8 pods × 1 cpu, each asking for a rack as required, are admitted
// and every pod of each runs in one rack (the rack's node affinity given
// at release, which kube-scheduler honours). A Job of 12 pods fits the
// quota and no rack: it waits saying so, while a Job of 4 behind it is
// admitted.
func TestJobsLandWithinOneRackOnKwok(t *testing.T) {
	ns := "topology"
	create(t, namespaceObj(ns))
	var nodes []client.Object
	for b := range 2 {
		for r := range 4 {
			for h := range 2 {
				block, rack := fmt.Sprintf("b%d", b), fmt.Sprintf("b%d-r%d", b, r)
				nodes = append(nodes, cluster.FakeNode(fmt.Sprintf("tas-%s-h%d", rack, h), map[string]string{blockLabel: block, rackLabel: rack},
					corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
						corev1.ResourcePods: resource.MustParse("110")}))
			}
		}
	}
	create(t, nodes...)
	create(t, wrappers.Topology("tas-e2e", blockLabel, rackLabel, corev1.LabelHostname),
		wrappers.MakeElasticQuota("tas-team", ns).Max(corev1.ResourceCPU, "200").Annotation(schedulingv1alpha1.AnnotationTopology, "tas-e2e").Obj())

	rackJob := func(name string, pods int32) *batchv1.Job {
		job := batchJob(ns, name, "tas-team", "1")
		job.Spec.Parallelism, job.Spec.Completions = ptr.To(pods), ptr.To(pods)
		job.Spec.Template.Annotations = map[string]string{cluster.PodRunTimeAnnotation: "10m",
			topology.AnnotationPodSetRequiredTopologyKueue: rackLabel}
		return job
	}
	for _, name := range []string{"rack-a", "rack-b", "rack-c"} {
		create(t, rackJob(name, 8))
		waitAdmitted(t, ns, name)
	}
	racks := map[string]string{}
	for _, name := range []string{"rack-a", "rack-b", "rack-c"} {
		rack := waitPodsInOneRack(t, ns, name, 8)
		if other, ok := racks[rack]; ok {
			t.Errorf("%s and %s both run in rack %s, which holds one of them", other, name, rack)
		}
		racks[rack] = name
	}

	// 12 pods fit the quota (200 cpu) and no rack (8 cpu each).
	create(t, rackJob("too-big", 12))
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitPhase(ctx, ns, "too-big")
		if err != nil {
			return err
		}
		if queueunit.HoldsQuota(u) {
			t.Fatalf("too-big was admitted, and no rack holds it: %s", u.Status.Message)
		}
		if want := "needs 12 × 1 cpu within one `" + rackLabel + "`; the largest free one has 8"; !strings.Contains(u.Status.Message, want) {
			return fmt.Errorf("too-big: phase %s, message %q, want %q", u.EffectivePhase(), u.Status.Message, want)
		}
		return nil
	})
	t.Logf("too-big waits: %s", mustUnit(t, ns, "too-big").Status.Message)
	create(t, rackJob("small", 4))
	waitAdmitted(t, ns, "small")
	waitPodsInOneRack(t, ns, "small", 4)
	if u := mustUnit(t, ns, "too-big"); queueunit.HoldsQuota(u) {
		t.Fatalf("too-big was admitted, and no rack holds it: %s", u.Status.Message)
	}
}

// waitPodsInOneRack waits until n pods of the Job are bound, fails if two
// of them run in different racks, and returns the rack.
func waitPodsInOneRack(t *testing.T, ns, job string, n int) string {
	t.Helper()
	var rack string
	waitJobPods(t, ns, job, n, func(pod string, node *corev1.Node) {
		got := node.Labels[rackLabel]
		if got == "" || rack != "" && got != rack {
			t.Fatalf("pod %s of %s runs on node %s of rack %q, and another in rack %q", pod, job, node.Name, got, rack)
		}
		rack = got
	})
	return rack
}
