package topology_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/topology"
)

// benchCluster is 5,000 nodes in 10 blocks × 25 racks × 20 hosts, 8 GPUs
// each, up to 4 of them held by pods already.
func benchCluster() ([]topology.Node, map[string]corev1.ResourceList) {
	rng := rand.New(rand.NewPCG(1, 2))
	var nodes []topology.Node
	held := map[string]corev1.ResourceList{}
	for b := range 10 {
		for r := range 25 {
			for h := range 20 {
				name := fmt.Sprintf("node-%d-%d-%d", b, r, h)
				nodes = append(nodes, topology.Node{Name: name, Schedulable: true,
					Labels:      map[string]string{blockLabel: fmt.Sprintf("block-%d", b), rackLabel: fmt.Sprintf("rack-%d", r), hostLabel: name},
					Allocatable: list("cpu", "96", "memory", "1Ti", string(gpu), "8", "pods", "110")})
				if used := rng.IntN(5); used > 0 {
					held[name] = list("cpu", fmt.Sprint(used*8), "memory", fmt.Sprintf("%dGi", used*64), string(gpu), fmt.Sprint(used))
				}
			}
		}
	}
	return nodes, held
}

// benchUnits are 10,000 waiting units, 90% of them asking for a level:
// racks required or preferred, blocks, hosts, in six request shapes.
func benchUnits() [][]topology.PodSet {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := []corev1.ResourceList{
		list("cpu", "8", "memory", "64Gi", string(gpu), "1"),
		list("cpu", "16", "memory", "128Gi", string(gpu), "2"),
		list("cpu", "4", "memory", "32Gi", string(gpu), "1"),
		list("cpu", "32", "memory", "256Gi", string(gpu), "4"),
		list("cpu", "2", "memory", "8Gi"),
		list("cpu", "12", "memory", "96Gi", string(gpu), "1"),
	}
	pick := func(counts ...int32) int32 { return counts[rng.IntN(len(counts))] }
	units := make([][]topology.PodSet, 10000)
	for i := range units {
		per := shapes[rng.IntN(len(shapes))]
		var ps topology.PodSet
		switch p := rng.IntN(10); {
		case p < 4:
			ps = topology.PodSet{Count: pick(4, 8, 16), Ask: required(rackLabel)}
		case p < 6:
			ps = topology.PodSet{Count: pick(16, 32, 64), Ask: required(blockLabel)}
		case p < 8:
			ps = topology.PodSet{Count: pick(8, 24), Ask: preferred(rackLabel)}
		case p < 9:
			ps = topology.PodSet{Count: pick(1, 2, 4), Ask: required(hostLabel)}
		default:
			ps = topology.PodSet{Count: 4}
		}
		ps.Name, ps.PerPod = "worker", per
		units[i] = []topology.PodSet{ps}
	}
	return units
}

// BenchmarkNewSnapshot builds the domain tree of 5,000 nodes.
func BenchmarkNewSnapshot(b *testing.B) {
	nodes, held := benchCluster()
	b.ReportAllocs()
	for b.Loop() {
		topology.NewSnapshot(levels, nodes, held)
	}
}

// BenchmarkTreeSnapshot builds a snapshot of 5,000 nodes from their
// domain tree, as each cycle does while the nodes do not change.
func BenchmarkTreeSnapshot(b *testing.B) {
	nodes, held := benchCluster()
	tree := topology.NewTree(levels, nodes)
	b.ReportAllocs()
	for b.Loop() {
		tree.Snapshot(held)
	}
}

// BenchmarkCycle is one admission cycle's topology work: a snapshot of
// 5,000 nodes × 3 levels built, then each of 10,000 waiting units tried
// in turn, those that fit taking their room.
func BenchmarkCycle(b *testing.B) {
	nodes, held := benchCluster()
	units := benchUnits()
	b.ReportAllocs()
	var fit int
	for b.Loop() {
		s := topology.NewSnapshot(levels, nodes, held)
		fit = 0
		for _, u := range units {
			r, err := s.Place(u)
			if err != nil {
				b.Fatal(err)
			}
			if r.Fits() {
				fit++
			}
		}
	}
	b.ReportMetric(float64(fit), "fit/cycle")
}

// BenchmarkTreeChanged changes the domain tree of 5,000 nodes as a node's
// cordon does, against NewTree's building it again.
func BenchmarkTreeChanged(b *testing.B) {
	nodes, _ := benchCluster()
	tree := topology.NewTree(levels, nodes)
	cordoned := map[string]bool{}
	now := func(name string) (topology.Node, bool) { return topology.Node{}, !cordoned[name] }
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		name := nodes[i%len(nodes)].Name
		cordoned[name] = true
		if tree.Changed([]string{name}, now) == nil {
			b.Fatal("no tree changed")
		}
		delete(cordoned, name)
		i++
	}
}
