package admission

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/topology"
)

const rackLabel = "example.com/rack"

// TestUnitsAskingForARack: on two racks of two 2-cpu nodes, one node
// holding a pod of 1 cpu, a unit asking for 5 × 1 cpu within one rack fits
// its quota and no rack: it waits saying so, while a unit of 3 behind it
// is admitted to the rack with the least to spare, written in its status.
func TestUnitsAskingForARack(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.Topology(ns, rackLabel, corev1.LabelHostname))
	for _, rack := range []string{"r1", "r2"} {
		for _, host := range []string{"a", "b"} {
			name := fmt.Sprintf("%s-%s-%s", ns, rack, host)
			node := wrappers.Node(name, "2", "8Gi")
			node.Labels = map[string]string{rackLabel: ns + "-" + rack, corev1.LabelHostname: name}
			status := node.Status
			create(t, node)
			node.Status = status
			if err := env.Client.Status().Update(context.Background(), node); err != nil {
				t.Fatal(err)
			}
			// The API server taints a new node not-ready
			// (TaintNodesByCondition); kube-controller-manager, which
			// no integration test runs, lifts it once the node is Ready.
			node.Spec.Taints = nil
			if err := env.Client.Update(context.Background(), node); err != nil {
				t.Fatal(err)
			}
		}
	}
	create(t, wrappers.MakePod("other", ns).Requests("cpu", "1").Node(ns+"-r1-a").Obj())
	rackUnit := func(name string, pods int32) *schedulingv1alpha1.QueueUnit {
		return wrappers.MakeQueueUnit(name, ns).Quota(ns).PodSet("main", pods, "cpu", "1").
			PodSetAnnotation(topology.AnnotationPodSetRequiredTopologyKueue, rackLabel).Obj()
	}
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "100").Annotation(schedulingv1alpha1.AnnotationTopology, ns).Obj())
	create(t, rackUnit("big", 5))
	waitMessage(t, ns, "big", "needs 5 × 1 cpu within one `example.com/rack`; the largest free one has 4")
	create(t, rackUnit("small", 3))
	u := waitPhase(t, ns, "small", schedulingv1alpha1.Dequeued)
	want := []schedulingv1alpha1.PodSetTopologyAssignment{{Name: "main", Topology: ns, Levels: []string{rackLabel},
		Domains: []schedulingv1alpha1.TopologyDomainAssignment{{Values: []string{ns + "-r1"}, Count: 3}}}}
	if diff := cmp.Diff(want, u.Status.TopologyAssignments); diff != "" {
		t.Errorf("small's topology assignments (-want +got):\n%s", diff)
	}
	staysEnqueued(t, ns, "big")
}
