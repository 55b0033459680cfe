package topology_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/topology"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

var levels = topology.Levels{Topology: "default", Labels: []string{blockLabel, rackLabel, hostLabel}}

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// cluster is 2 blocks × 4 racks × 2 hosts, as a cloud provider labels
// them, each host with 32 cpu and 4 GPUs: a rack holds 8 one-GPU pods.
func cluster() []topology.Node {
	var nodes []topology.Node
	for _, b := range []string{"a", "b"} {
		for r := 1; r <= 4; r++ {
			for h := 1; h <= 2; h++ {
				name := fmt.Sprintf("host-%s%d-%d", b, r, h)
				nodes = append(nodes, topology.Node{Name: name, Schedulable: true,
					Labels:      map[string]string{blockLabel: "block-" + b, rackLabel: fmt.Sprintf("rack-%s%d", b, r), hostLabel: name},
					Allocatable: list("cpu", "32", "memory", "128Gi", string(gpu), "4", "pods", "110")})
			}
		}
	}
	return nodes
}

func gpus(pods int32, ask topology.Ask) topology.PodSet {
	return topology.PodSet{Name: "worker", Count: pods, PerPod: list("cpu", "2", string(gpu), "1"), Ask: ask}
}

func required(level string) topology.Ask  { return topology.Ask{Level: level, Required: true} }
func preferred(level string) topology.Ask { return topology.Ask{Level: level} }

func rack(block, rack string, pods int32) topology.Domain {
	return topology.Domain{Values: []string{"block-" + block, "rack-" + rack}, Pods: pods}
}

func placed(level int, domains ...topology.Domain) outcome {
	return outcome{Placements: []topology.Placement{{PodSet: "worker", Level: level, Domains: domains}}}
}

// outcome is what a test compares of a Result: its placements, or the
// pod set that does not fit and the reason in words.
type outcome struct {
	Placements     []topology.Placement
	PodSet, Reason string
}

func failed(podSet, reason string) outcome { return outcome{PodSet: podSet, Reason: reason} }

func view(r topology.Result) outcome {
	return outcome{Placements: r.Placements, PodSet: r.Shortfall.PodSet, Reason: r.Reason()}
}

func TestPlace(t *testing.T) {
	// busy holds n GPUs on each host of the racks named.
	busy := func(n string, racks ...string) map[string]corev1.ResourceList {
		held := map[string]corev1.ResourceList{}
		for _, r := range racks {
			for h := 1; h <= 2; h++ {
				held[fmt.Sprintf("host-%s-%d", r, h)] = list(string(gpu), n)
			}
		}
		return held
	}
	cases := map[string]struct {
		nodes   []topology.Node
		held    map[string]corev1.ResourceList
		assumed []topology.Domain
		units   [][]topology.PodSet
		want    []outcome
	}{
		"8-pod jobs asking a rack land each in one rack": {
			units: [][]topology.PodSet{{gpus(8, required(rackLabel))}, {gpus(8, required(rackLabel))}, {gpus(8, required(rackLabel))}},
			want:  []outcome{placed(1, rack("a", "a1", 8)), placed(1, rack("a", "a2", 8)), placed(1, rack("a", "a3", 8))},
		},
		"the rack with the least room to spare is chosen": {
			// a1 and a2 have 4 free, a3 6, the rest 8.
			held:  merge(busy("2", "a1", "a2"), busy("1", "a3")),
			units: [][]topology.PodSet{{gpus(5, required(rackLabel))}, {gpus(4, required(rackLabel))}},
			want:  []outcome{placed(1, rack("a", "a3", 5)), placed(1, rack("a", "a1", 4))},
		},
		"a job that fits no rack waits, saying how much the largest has": {
			held:  busy("1", "a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4"),
			units: [][]topology.PodSet{{gpus(8, required(rackLabel))}, {gpus(6, required(rackLabel))}},
			want: []outcome{
				failed("worker", "needs 8 × 1 nvidia.com/gpu within one `cloud.provider.com/topology-rack`; the largest free one has 6"),
				placed(1, rack("a", "a1", 6)),
			},
		},
		"a required block takes the block that holds the job": {
			units: [][]topology.PodSet{{gpus(20, required(blockLabel))}, {gpus(20, required(blockLabel))}, {gpus(20, required(blockLabel))}},
			want: []outcome{
				placed(0, topology.Domain{Values: []string{"block-a"}, Pods: 20}),
				placed(0, topology.Domain{Values: []string{"block-b"}, Pods: 20}),
				failed("worker", "needs 20 × 1 nvidia.com/gpu within one `cloud.provider.com/topology-block`; the largest free one has 12"),
			},
		},
		"a preferred rack falls back to the fewest racks of one block": {
			held:  busy("1", "a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4"),
			units: [][]topology.PodSet{{gpus(8, preferred(rackLabel))}},
			want:  []outcome{placed(1, rack("a", "a1", 6), rack("a", "a2", 2))},
		},
		"a preferred rack that one rack holds gets that rack": {
			held:  busy("1", "a1", "a2", "a3", "a4", "b1", "b2", "b3"),
			units: [][]topology.PodSet{{gpus(8, preferred(rackLabel))}},
			want:  []outcome{placed(1, rack("b", "b4", 8))},
		},
		"a preferred rack no block holds spreads over the fewest racks": {
			held:  busy("1", "a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4"),
			units: [][]topology.PodSet{{gpus(30, preferred(rackLabel))}, {gpus(19, preferred(rackLabel))}},
			want: []outcome{
				placed(1, rack("a", "a1", 6), rack("a", "a2", 6), rack("a", "a3", 6), rack("a", "a4", 6), rack("b", "b1", 6)),
				failed("worker", "needs 19 × 1 nvidia.com/gpu within as few `cloud.provider.com/topology-rack` as hold them; all of them together have 18"),
			},
		},
		"a preferred host no rack holds goes to the fewest racks, then the fewest hosts in them": {
			// Free GPUs by host: a1 4 0, a2 4 0, a3 3 3, a4 3 3; block b full.
			held: merge(busy("4", "b1", "b2", "b3", "b4"), busy("1", "a3", "a4"),
				map[string]corev1.ResourceList{"host-a1-2": list(string(gpu), "4"), "host-a2-2": list(string(gpu), "4")}),
			units: [][]topology.PodSet{{gpus(8, preferred(hostLabel))}},
			// Racks a3 (6) and a1 (the tightest that holds the last 2),
			// not the two hosts with 4 in racks a1 and a2.
			want: []outcome{placed(2,
				topology.Domain{Values: []string{"block-a", "rack-a1", "host-a1-1"}, Pods: 4},
				topology.Domain{Values: []string{"block-a", "rack-a3", "host-a3-1"}, Pods: 3},
				topology.Domain{Values: []string{"block-a", "rack-a3", "host-a3-2"}, Pods: 1})},
		},
		"the pod sets of a unit each take their room": {
			units: [][]topology.PodSet{{
				{Name: "launcher", Count: 1, PerPod: list("cpu", "1"), Ask: required(hostLabel)},
				gpus(8, required(rackLabel)),
			}, {gpus(8, required(rackLabel))}},
			want: []outcome{
				{Placements: []topology.Placement{
					{PodSet: "launcher", Level: 2, Domains: []topology.Domain{{Values: []string{"block-a", "rack-a1", "host-a1-1"}, Pods: 1}}},
					{PodSet: "worker", Level: 1, Domains: []topology.Domain{rack("a", "a1", 8)}},
				}},
				placed(1, rack("a", "a2", 8)),
			},
		},
		"a unit whose second pod set does not fit takes nothing": {
			units: [][]topology.PodSet{
				{gpus(8, required(rackLabel)), {Name: "big", Count: 9, PerPod: list(string(gpu), "1"), Ask: required(rackLabel)}},
				{gpus(8, required(rackLabel))},
			},
			want: []outcome{
				failed("big", "needs 9 × 1 nvidia.com/gpu within one `cloud.provider.com/topology-rack`; the largest free one has 8"),
				placed(1, rack("a", "a1", 8)),
			},
		},
		"a pod set asking for no level is not placed": {
			units: [][]topology.PodSet{{gpus(8, topology.Ask{})}},
			want:  []outcome{placed(-1)},
		},
		"pods admitted to a rack and not yet on nodes keep their room": {
			assumed: []topology.Domain{rack("a", "a1", 8), rack("a", "a2", 3)},
			// a1 is full, a2 has 5 free: without them a1 would be chosen.
			units: [][]topology.PodSet{{gpus(5, required(rackLabel))}},
			want:  []outcome{placed(1, rack("a", "a2", 5))},
		},
		"a node without a rack label counts in its block only": {
			nodes: []topology.Node{
				{Name: "loose", Schedulable: true, Labels: map[string]string{blockLabel: "block-c", hostLabel: "loose"}, Allocatable: list("cpu", "64", string(gpu), "16")},
				{Name: "racked", Schedulable: true, Labels: map[string]string{blockLabel: "block-c", rackLabel: "rack-c1", hostLabel: "racked"}, Allocatable: list("cpu", "64", string(gpu), "4")},
			},
			units: [][]topology.PodSet{{gpus(9, required(rackLabel))}, {gpus(20, required(blockLabel))}},
			want: []outcome{
				failed("worker", "needs 9 × 1 nvidia.com/gpu within one `cloud.provider.com/topology-rack`; the largest free one has 4"),
				placed(0, topology.Domain{Values: []string{"block-c"}, Pods: 20}),
			},
		},
		"a node that is not schedulable is left out": {
			nodes: []topology.Node{
				{Name: "cordoned", Labels: map[string]string{blockLabel: "block-c", rackLabel: "rack-c1"}, Allocatable: list("cpu", "64", string(gpu), "8")},
				{Name: "ready", Schedulable: true, Labels: map[string]string{blockLabel: "block-c", rackLabel: "rack-c1"}, Allocatable: list("cpu", "64", string(gpu), "4")},
			},
			units: [][]topology.PodSet{{gpus(5, required(rackLabel))}},
			want:  []outcome{failed("worker", "needs 5 × 1 nvidia.com/gpu within one `cloud.provider.com/topology-rack`; the largest free one has 4")},
		},
		"a resource no node has fits nowhere": {
			units: [][]topology.PodSet{{{Name: "worker", Count: 2, PerPod: list("cpu", "1", "example.com/fpga", "1"), Ask: required(rackLabel)}}},
			want:  []outcome{failed("worker", "needs 2 × 1 example.com/fpga within one `cloud.provider.com/topology-rack`; the largest free one has 0")},
		},
		"no node with the label says so": {
			nodes: []topology.Node{{Name: "bare", Schedulable: true, Allocatable: list("cpu", "64", string(gpu), "4")}},
			units: [][]topology.PodSet{{gpus(2, required(rackLabel))}},
			want:  []outcome{failed("worker", "needs 2 × 1 nvidia.com/gpu within one `cloud.provider.com/topology-rack`; no schedulable node has that label")},
		},
		"the scarcest resource is the one named": {
			units: [][]topology.PodSet{{{Name: "worker", Count: 3, PerPod: list("cpu", "24", string(gpu), "1"), Ask: required(rackLabel)}}},
			want:  []outcome{failed("worker", "needs 3 × 24 cpu within one `cloud.provider.com/topology-rack`; the largest free one has 2")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes := tc.nodes
			if nodes == nil {
				nodes = cluster()
			}
			s := topology.NewSnapshot(levels, nodes, tc.held)
			if tc.assumed != nil {
				if got := s.Assume("", gpus(11, required(rackLabel)), tc.assumed); got != 11 {
					t.Fatalf("assumed %d pods, want 11", got)
				}
			}
			var got []outcome
			for _, unit := range tc.units {
				r, err := s.Place(unit)
				if err != nil {
					t.Fatalf("place: %v", err)
				}
				got = append(got, view(r))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

func merge(maps ...map[string]corev1.ResourceList) map[string]corev1.ResourceList {
	out := map[string]corev1.ResourceList{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestPlaceRefusesALevelTheTopologyLacks(t *testing.T) {
	s := topology.NewSnapshot(levels, cluster(), nil)
	_, err := s.Place([]topology.PodSet{gpus(2, topology.Ask{Level: "example.com/pod", Required: true, Key: topology.AnnotationPodSetRequiredTopology})})
	want := `pod set "worker": koord-queue/podset-required-topology asks for topology level "example.com/pod", which topology "default" does not have: its levels are ` +
		"cloud.provider.com/topology-block, cloud.provider.com/topology-rack, kubernetes.io/hostname"
	if err == nil || err.Error() != want {
		t.Errorf("want error %q, got %v", want, err)
	}
}

func TestNodeSelector(t *testing.T) {
	got := levels.NodeSelector([]topology.Domain{rack("a", "a1", 6), rack("a", "a2", 2)})
	term := func(r string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: blockLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"block-a"}},
			{Key: rackLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{r}},
		}}
	}
	want := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term("rack-a1"), term("rack-a2")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node selector (-want +got):\n%s", diff)
	}
}

// TestPlaceHostileAmounts: counts and quantities far beyond any cluster
// neither panic nor wrap around.
func TestPlaceHostileAmounts(t *testing.T) {
	nodes := cluster()
	nodes[0].Allocatable = list("cpu", "1e30", "memory", "1e30", string(gpu), "9e18", "pods", "110")
	s := topology.NewSnapshot(levels, nodes, map[string]corev1.ResourceList{"host-a1-2": list(string(gpu), "1e40")})
	units := [][]topology.PodSet{
		{gpus(2147483647, required(blockLabel))},
		{gpus(2147483647, preferred(hostLabel))},
		{{Name: "huge", Count: 3, PerPod: list("cpu", "1e25", string(gpu), "1e25"), Ask: required(rackLabel)}},
		{{Name: "nothing", Count: 2147483647, PerPod: list("cpu", "0"), Ask: preferred(rackLabel)}},
		{{Name: "tiny", Count: 5, PerPod: list("memory", "1n"), Ask: required(hostLabel)}},
	}
	var got []outcome
	for _, u := range units {
		r, err := s.Place(u)
		if err != nil {
			t.Fatalf("place: %v", err)
		}
		got = append(got, view(r))
	}
	want := []outcome{
		// host-a1-1 counts as 2^62 GPUs: more pods than any count.
		placed(0, topology.Domain{Values: []string{"block-a"}, Pods: 2147483647}),
		// It has room for as many again.
		placed(2, topology.Domain{Values: []string{"block-a", "rack-a1", "host-a1-1"}, Pods: 2147483647}),
		// Both amounts count as 2^62; the first units took more cpu than
		// GPUs, so cpu is the scarcer. host-a1-2's pods, which hold more
		// GPUs than it has, do not make GPUs scarcer.
		failed("huge", "needs 3 × 10e24 cpu within one `cloud.provider.com/topology-rack`; the largest free one has 0"),
		{Placements: []topology.Placement{{PodSet: "nothing", Level: 1, Domains: []topology.Domain{rack("a", "a1", 2147483647)}}}},
		{Placements: []topology.Placement{{PodSet: "tiny", Level: 2, Domains: []topology.Domain{{Values: []string{"block-a", "rack-a1", "host-a1-1"}, Pods: 5}}}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if _, err := s.Place(make([]topology.PodSet, 9)); err == nil || err.Error() != "9 pod sets: a unit has at most 8" {
		t.Errorf("nine pod sets: want an error, got %v", err)
	}
}

func TestFromNode(t *testing.T) {
	node := func(mutate func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{rackLabel: "r1"}},
			Status: corev1.NodeStatus{Allocatable: list(string(gpu), "8"),
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
		mutate(n)
		return n
	}
	cases := map[string]struct {
		node *corev1.Node
		want topology.Node
	}{
		"a ready node is schedulable": {
			node: node(func(*corev1.Node) {}),
			want: topology.Node{Name: "n", Labels: map[string]string{rackLabel: "r1"}, Allocatable: list(string(gpu), "8"), Amounts: []topology.Amount{{Name: gpu, Value: 8}}, Schedulable: true},
		},
		"a cordoned node is not": {
			node: node(func(n *corev1.Node) { n.Spec.Unschedulable = true }),
			want: topology.Node{Name: "n", Labels: map[string]string{rackLabel: "r1"}, Allocatable: list(string(gpu), "8"), Amounts: []topology.Amount{{Name: gpu, Value: 8}}},
		},
		"a node not ready is not": {
			node: node(func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }),
			want: topology.Node{Name: "n", Labels: map[string]string{rackLabel: "r1"}, Allocatable: list(string(gpu), "8"), Amounts: []topology.Amount{{Name: gpu, Value: 8}}},
		},
		"the taints that keep pods off are kept, not those that only weigh": {
			node: node(func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{
					{Key: "dedicated", Value: "train", Effect: corev1.TaintEffectNoSchedule},
					{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule},
					{Key: "draining", Effect: corev1.TaintEffectNoExecute},
				}
			}),
			want: topology.Node{Name: "n", Labels: map[string]string{rackLabel: "r1"}, Allocatable: list(string(gpu), "8"), Amounts: []topology.Amount{{Name: gpu, Value: 8}}, Schedulable: true,
				Taints: []corev1.Taint{{Key: "dedicated", Value: "train", Effect: corev1.TaintEffectNoSchedule}, {Key: "draining", Effect: corev1.TaintEffectNoExecute}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, topology.FromNode(tc.node)); diff != "" {
				t.Errorf("node (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlaceOnTheNodesPodsCanUse: a pod set is placed only on the nodes its
// pods can be scheduled to: those its nodeSelector and required node
// affinity select, whose NoSchedule and NoExecute taints it tolerates.
func TestPlaceOnTheNodesPodsCanUse(t *testing.T) {
	const model = "example.com/gpu-model"
	// models labels block a's nodes a100, block b's h100, and host-a1-1
	// h100 as well.
	models := func(nodes []topology.Node) {
		for i := range nodes {
			n := &nodes[i]
			m := "h100"
			if n.Labels[blockLabel] == "block-a" && n.Name != "host-a1-1" {
				m = "a100"
			}
			n.Labels[model] = m
		}
	}
	// dedicated taints block b's nodes for training.
	dedicated := func(nodes []topology.Node) {
		for i := range nodes {
			if nodes[i].Labels[blockLabel] == "block-b" {
				nodes[i].Taints = []corev1.Taint{{Key: "dedicated", Value: "train", Effect: corev1.TaintEffectNoSchedule}}
			}
		}
	}
	on := func(ps topology.PodSet, spec corev1.PodSpec) topology.PodSet {
		ps.Nodes = topology.SelectionOf(&spec)
		return ps
	}
	asking := func(name corev1.ResourceName) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{name: resource.MustParse("1")}}}}}
	}
	h100 := corev1.PodSpec{NodeSelector: map[string]string{model: "h100"}}
	tolerates := corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "train", Effect: corev1.TaintEffectNoSchedule}}}
	notA1 := corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: rackLabel, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"rack-a1"}}}}},
	}}}}
	cases := map[string]struct {
		change []func([]topology.Node)
		units  [][]topology.PodSet
		want   []outcome
	}{
		"a pod set selecting a GPU model lands in a rack of that model": {
			change: []func([]topology.Node){models},
			units:  [][]topology.PodSet{{on(gpus(8, required(rackLabel)), h100)}, {gpus(8, required(rackLabel))}},
			want:   []outcome{placed(1, rack("b", "b1", 8)), placed(1, rack("a", "a1", 8))},
		},
		"a rack half of whose nodes the pods cannot use holds half": {
			change: []func([]topology.Node){models},
			units:  [][]topology.PodSet{{on(gpus(4, required(rackLabel)), h100)}, {on(gpus(5, required(blockLabel)), h100)}},
			// a1 has 4 on its h100 host, the tightest fit; block a has no
			// more h100 room, block b all of its own.
			want: []outcome{placed(1, rack("a", "a1", 4)), placed(0, topology.Domain{Values: []string{"block-b"}, Pods: 5})},
		},
		"no rack with room of the nodes the pods can use: it says so": {
			change: []func([]topology.Node){models, func(nodes []topology.Node) {
				for i := range nodes {
					if nodes[i].Labels[blockLabel] == "block-b" {
						nodes[i].Labels[model] = "a100"
					}
				}
			}},
			units: [][]topology.PodSet{{on(gpus(5, required(rackLabel)), h100)}},
			want: []outcome{failed("worker",
				"needs 5 × 1 nvidia.com/gpu within one `cloud.provider.com/topology-rack` of the nodes its pods can use; the largest free one has 4")},
		},
		"tainted nodes are left to pods that tolerate their taints": {
			change: []func([]topology.Node){dedicated},
			units: [][]topology.PodSet{
				{gpus(20, required(blockLabel))}, {gpus(20, required(blockLabel))},
				{on(gpus(20, required(blockLabel)), tolerates)},
			},
			want: []outcome{
				placed(0, topology.Domain{Values: []string{"block-a"}, Pods: 20}),
				failed("worker", "needs 20 × 1 nvidia.com/gpu within one `cloud.provider.com/topology-block` of the nodes its pods can use; the largest free one has 12"),
				placed(0, topology.Domain{Values: []string{"block-b"}, Pods: 20}),
			},
		},
		"nodes tainted for their GPUs are left to pods that ask for GPUs": {
			change: []func([]topology.Node){func(nodes []topology.Node) {
				for i := range nodes {
					if nodes[i].Labels[blockLabel] == "block-b" {
						nodes[i].Taints = []corev1.Taint{{Key: string(gpu), Value: "present", Effect: corev1.TaintEffectNoSchedule}}
					}
				}
			}},
			// As the ExtendedResourceToleration admission plugin would, a
			// pod asking for GPUs tolerates them.
			units: [][]topology.PodSet{
				{on(gpus(20, required(blockLabel)), asking(gpu))},
				{on(topology.PodSet{Name: "worker", Count: 110, PerPod: list("cpu", "2"), Ask: required(blockLabel)}, asking("cpu"))},
				{on(gpus(20, required(blockLabel)), asking(gpu))},
			},
			want: []outcome{
				placed(0, topology.Domain{Values: []string{"block-a"}, Pods: 20}),
				failed("worker", "needs 110 × 2 cpu within one `cloud.provider.com/topology-block` of the nodes its pods can use; the largest free one has 108"),
				placed(0, topology.Domain{Values: []string{"block-b"}, Pods: 20}),
			},
		},
		"a required node affinity keeps the pods off a rack": {
			units: [][]topology.PodSet{{on(gpus(8, required(rackLabel)), notA1)}},
			want:  []outcome{placed(1, rack("a", "a2", 8))},
		},
		"the pod sets of a unit each keep to their own nodes": {
			change: []func([]topology.Node){models},
			units: [][]topology.PodSet{{
				{Name: "launcher", Count: 1, PerPod: list("cpu", "1"), Ask: required(hostLabel)},
				on(gpus(8, required(rackLabel)), h100),
			}},
			want: []outcome{{Placements: []topology.Placement{
				{PodSet: "launcher", Level: 2, Domains: []topology.Domain{{Values: []string{"block-a", "rack-a1", "host-a1-1"}, Pods: 1}}},
				{PodSet: "worker", Level: 1, Domains: []topology.Domain{rack("b", "b1", 8)}},
			}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes := cluster()
			for _, change := range tc.change {
				change(nodes)
			}
			s := topology.NewSnapshot(levels, nodes, nil)
			var got []outcome
			for _, unit := range tc.units {
				r, err := s.Place(unit)
				if err != nil {
					t.Fatalf("place: %v", err)
				}
				got = append(got, view(r))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlaceWithout: a unit placed as if some pods were gone sees their
// room given back, those on nodes and those an owner took, and the
// snapshot is left as it was.
func TestPlaceWithout(t *testing.T) {
	// Every host is full: 4 GPUs held of 4.
	full := map[string]corev1.ResourceList{}
	for _, n := range cluster() {
		full[n.Name] = list(string(gpu), "4")
	}
	eight := []topology.PodSet{gpus(8, required(rackLabel))}
	cases := map[string]struct {
		// assumed: 4 pods of owner "v" assumed in rack b1 (given room there first).
		assumed bool
		owners  []string
		held    map[string]corev1.ResourceList
		want    outcome
	}{
		"the pods gone from both hosts of a rack free it": {
			held: map[string]corev1.ResourceList{"host-a2-1": list(string(gpu), "4"), "host-a2-2": list(string(gpu), "4")},
			want: placed(1, rack("a", "a2", 8)),
		},
		"pods gone from two racks free neither": {
			held: map[string]corev1.ResourceList{"host-a1-1": list(string(gpu), "4"), "host-a2-1": list(string(gpu), "4"), "gone-node": list(string(gpu), "64")},
			want: failed("worker", "needs 8 × 1 nvidia.com/gpu within one `cloud.provider.com/topology-rack`; the largest free one has 4"),
		},
		"the room an owner took is given back": {
			assumed: true, owners: []string{"v"},
			held: map[string]corev1.ResourceList{"host-b1-2": list(string(gpu), "4")},
			want: placed(1, rack("b", "b1", 8)),
		},
		"another owner's room is not": {
			assumed: true, owners: []string{"w"},
			held: map[string]corev1.ResourceList{"host-b1-2": list(string(gpu), "4")},
			want: failed("worker", "needs 8 × 1 nvidia.com/gpu within one `cloud.provider.com/topology-rack`; the largest free one has 4"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			held := merge(full)
			if tc.assumed {
				held["host-b1-1"] = list(string(gpu), "0")
			}
			s := topology.NewSnapshot(levels, cluster(), held)
			if tc.assumed {
				if got := s.Assume("v", gpus(4, required(rackLabel)), []topology.Domain{rack("b", "b1", 4)}); got != 4 {
					t.Fatalf("assumed %d pods, want 4", got)
				}
			}
			r, err := s.PlaceWithout(eight, tc.owners, tc.held)
			if err != nil {
				t.Fatalf("place without: %v", err)
			}
			if diff := cmp.Diff(tc.want, view(r)); diff != "" {
				t.Errorf("placed without (-want +got):\n%s", diff)
			}
			// Nothing was taken, nor given back for good.
			after, err := s.Place([]topology.PodSet{gpus(1, required(hostLabel))})
			if err != nil {
				t.Fatalf("place: %v", err)
			}
			if diff := cmp.Diff(failed("worker", "needs 1 × 1 nvidia.com/gpu within one `kubernetes.io/hostname`; the largest free one has 0"), view(after)); diff != "" {
				t.Errorf("placed after (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShortfallUnfreed(t *testing.T) {
	rackSet := func(required bool, room int64) topology.Shortfall {
		return topology.Shortfall{PodSet: "worker", Pods: 8, Resource: gpu, PerPod: resource.MustParse("1"), Level: "rack", Required: required, Room: room}
	}
	cases := map[string]struct {
		f    topology.Shortfall
		want string
	}{
		"required":              {f: rackSet(true, 6), want: "no `rack` with room for 8 × 1 nvidia.com/gpu (the largest would have room for 6)"},
		"preferred":             {f: rackSet(false, 6), want: "no room for 8 × 1 nvidia.com/gpu in `rack` domains (all of them together would have room for 6)"},
		"no node has the label": {f: rackSet(true, -1), want: "no `rack` for 8 × 1 nvidia.com/gpu: no schedulable node has that label"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.f.Unfreed(); got != tc.want {
				t.Errorf("Unfreed() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestANodeOfNoDomainDoesNotNarrowTheMessage: a node no pod set can use
// but that belongs to no domain (a control-plane node without the levels'
// labels, tainted) counts nowhere either way: the message does not say
// that the room is of the nodes the pods can use.
func TestANodeOfNoDomainDoesNotNarrowTheMessage(t *testing.T) {
	nodes := append(cluster(), topology.Node{Name: "control-plane", Schedulable: true, Allocatable: list("cpu", "8"),
		Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}})
	r, err := topology.NewSnapshot(levels, nodes, nil).Place([]topology.PodSet{gpus(9, required(rackLabel))})
	if err != nil {
		t.Fatal(err)
	}
	want := failed("worker", "needs 9 × 1 nvidia.com/gpu within one `cloud.provider.com/topology-rack`; the largest free one has 8")
	if diff := cmp.Diff(want, view(r)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestAPlacementThatCannotBeRecordedTakesNothing: a pod set preferring a
// host, spread over more hosts than a unit's status records, is refused
// (Unrecordable) and leaves the snapshot as it was, so that a unit tried
// after it in the same cycle finds the room.
func TestAPlacementThatCannotBeRecordedTakesNothing(t *testing.T) {
	var nodes []topology.Node
	hosts := schedulingv1alpha1.MaxTopologyDomains + 4
	for h := range hosts {
		name := fmt.Sprintf("host-%d", h)
		nodes = append(nodes, topology.Node{Name: name, Schedulable: true,
			Labels:      map[string]string{blockLabel: "block-a", rackLabel: "rack-a1", hostLabel: name},
			Allocatable: list("cpu", "2", string(gpu), "1", "pods", "110")})
	}
	s := topology.NewSnapshot(levels, nodes, nil)
	sets := []topology.PodSet{gpus(int32(hosts), preferred(hostLabel))}
	wide, err := s.PlaceFor("team/wide", sets)
	if err != nil {
		t.Fatal(err)
	}
	if why := wide.Unrecordable(levels, sets); why == "" {
		t.Fatalf("a pod set over %d hosts is recordable: %+v", hosts, wide.Placements)
	}
	next, err := s.Place([]topology.PodSet{gpus(int32(hosts), required(rackLabel))})
	if err != nil {
		t.Fatal(err)
	}
	if !next.Fits() {
		t.Errorf("after a placement that cannot be recorded, the rack's %d GPUs: %s", hosts, next.Reason())
	}
}

// TestAnOwnersRoomOutlivesItsShape: a unit's room is given back as it was
// taken even after more shapes than a snapshot keeps were made since, so
// that its shape was reused for another request, and when it took room
// twice with others' placements between.
func TestAnOwnersRoomOutlivesItsShape(t *testing.T) {
	s := topology.NewSnapshot(levels, cluster(), nil)
	if res, err := s.PlaceFor("team/a", []topology.PodSet{gpus(4, required(hostLabel))}); err != nil || !res.Fits() {
		t.Fatalf("team/a: %v, %s", err, res.Reason())
	}
	for i := range 20 { // more shapes than a snapshot keeps
		ps := topology.PodSet{Name: "worker", Count: 1, PerPod: list("cpu", fmt.Sprintf("%dm", (i+1)*50)), Ask: preferred(hostLabel)}
		if res, err := s.PlaceFor(fmt.Sprintf("team/cpu-%d", i), []topology.PodSet{ps}); err != nil || !res.Fits() {
			t.Fatalf("team/cpu-%d: %v, %s", i, err, res.Reason())
		}
	}
	// team/a again, after the others: its room in two runs.
	if res, err := s.PlaceFor("team/a", []topology.PodSet{gpus(4, required(hostLabel))}); err != nil || !res.Fits() {
		t.Fatalf("team/a again: %v, %s", err, res.Reason())
	}
	// Every GPU of the cluster, which only team/a's going frees.
	res, err := s.PlaceWithout([]topology.PodSet{gpus(64, preferred(blockLabel))}, []string{"team/a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Fits() {
		t.Errorf("without team/a, the cluster's 64 GPUs: %s", res.Reason())
	}
}
