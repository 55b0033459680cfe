package admission

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestClusterCapacityIsTheSumOfItsNodes: random node changes and removals
// (some nodes offering nothing, some naming a resource at zero); after each,
// the kept sum names the resources a sum over the nodes names, at the same
// amounts.
func TestClusterCapacityIsTheSumOfItsNodes(t *testing.T) {
	resources := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, "nvidia.com/gpu"}
	amounts := []string{"0", "500m", "1", "4", "1Gi", "96"}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		k := newCapacitySum()
		for step := range 300 {
			name := fmt.Sprintf("node-%d", rng.IntN(12))
			switch rng.IntN(4) {
			case 0:
				k.remove(name)
			case 1:
				k.set(name, nil)
			default:
				capacity := corev1.ResourceList{}
				for _, r := range resources {
					if rng.IntN(2) == 0 {
						capacity[r] = resource.MustParse(amounts[rng.IntN(len(amounts))])
					}
				}
				k.set(name, capacity)
			}
			want := corev1.ResourceList{}
			for _, capacity := range k.nodes {
				for r, q := range capacity {
					sum := want[r]
					sum.Add(q)
					want[r] = sum
				}
			}
			got := k.sum()
			if len(got) != len(want) {
				t.Fatalf("seed %d step %d: sum names %v, the nodes %v", seed, step, got, want)
			}
			for r, q := range want {
				if g, ok := got[r]; !ok || g.Cmp(q) != 0 {
					t.Fatalf("seed %d step %d: %s is %v, the nodes sum to %v", seed, step, r, got[r], q)
				}
			}
		}
	}
}
