package topology_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/topology"
)

// TestReplay: on the 2 blocks of cluster(), block b held throughout by pods
// of no unit, what a unit placed in one Topology's snapshot takes is taken
// in the other's, and given back in both when it ends or is not admitted;
// Never tells a unit no domain could hold with only those pods on the
// nodes.
func TestReplay(t *testing.T) {
	var held []topology.Holding
	for r := 1; r <= 4; r++ {
		for h := 1; h <= 2; h++ {
			held = append(held, topology.Holding{Node: fmt.Sprintf("host-b%d-%d", r, h), Amounts: []int64{4}})
		}
	}
	c := &topology.Cluster{
		Topologies: map[string]topology.Levels{"default": levels, "racks": {Topology: "racks", Labels: []string{rackLabel, hostLabel}}},
		Nodes:      cluster(), Resources: []corev1.ResourceName{gpu}, Held: held,
		Units: map[string]topology.Unit{
			"ns/rack":  {Topology: "racks", PodSets: []topology.PodSet{gpus(8, required(rackLabel))}},
			"ns/block": {Topology: "default", PodSets: []topology.PodSet{gpus(32, required(blockLabel))}},
			"ns/huge":  {Topology: "default", PodSets: []topology.PodSet{gpus(40, required(blockLabel))}},
			"ns/plain": {},
		},
	}
	r := topology.NewReplay(c, func(string) bool { return true })
	var got []string
	place := func(key string) {
		why, ok := r.Place(key, nil)
		got = append(got, fmt.Sprintf("place %s: %t %s", key, ok, why))
	}
	place("ns/rack")
	r.Admit("ns/rack", nil)
	got = append(got, fmt.Sprintf("end cycle gives back: %t", r.EndCycle()))
	place("ns/block")
	place("ns/plain")
	got = append(got, fmt.Sprintf("end ns/rack gives back: %t", r.End("ns/rack")))
	place("ns/block")
	got = append(got, fmt.Sprintf("end cycle gives back: %t", r.EndCycle()))
	place("ns/block")
	r.Admit("ns/block", nil)
	for _, key := range []string{"ns/block", "ns/huge", "ns/plain"} {
		why, never := r.Never(key, nil)
		got = append(got, fmt.Sprintf("never %s: %t %s", key, never, why))
	}
	why, never := r.Never("ns/huge", map[string]int32{"worker": 32})
	got = append(got, fmt.Sprintf("never ns/huge with 32 pods: %t %s", never, why))

	want := []string{
		"place ns/rack: true ",
		"end cycle gives back: false",
		"place ns/block: false needs 32 × 1 nvidia.com/gpu within one `" + blockLabel + "`; the largest free one has 24",
		"place ns/plain: true ",
		"end ns/rack gives back: true",
		"place ns/block: true ",
		"end cycle gives back: true",
		"place ns/block: true ",
		"never ns/block: false ",
		"never ns/huge: true needs 40 × 1 nvidia.com/gpu within one `" + blockLabel + "`; the largest free one has 32",
		"never ns/plain: false ",
		"never ns/huge with 32 pods: false ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
