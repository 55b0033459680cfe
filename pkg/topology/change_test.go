package topology

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestAChangedTreeIsTheTreeBuiltAfresh: on random clusters whose nodes
// come, go, are cordoned and uncordoned, change labels, allocatable and
// taints, a tree Changed step after step is the tree NewTree builds over
// the nodes of the moment (its domains, their order and members, each
// node's facts), places a unit as that one does, and follows what the
// pods hold with Occupancy.On; the tree it was changed from is left as it
// was. It is nil only when the resources the nodes name changed.
func TestAChangedTreeIsTheTreeBuiltAfresh(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 13))
		list, held := randomCluster(rng)
		nodes := map[string]Node{}
		for _, n := range list {
			nodes[n.Name] = n
		}
		tree := NewTree(propLevels, list)
		for step := range 25 {
			where := fmt.Sprintf("seed %d step %d", seed, step)
			var names []string
			for range 1 + rng.IntN(4) {
				name := fmt.Sprintf("n%02d", rng.IntN(len(list)+3)) // some new
				names = append(names, name)
				n, ok := nodes[name]
				switch p := rng.IntN(10); {
				case !ok || p < 2:
					nodes[name] = randomNode(rng, name)
				case p < 4:
					n.Schedulable = !n.Schedulable
					nodes[name] = n
				case p < 5:
					delete(nodes, name)
				case p < 7:
					// Hosts named after other nodes, or none: a node without
					// one can share its name with a host of its rack.
					n.Labels = randomNode(rng, name).Labels
					switch rng.IntN(3) {
					case 0:
						n.Labels["host"] = fmt.Sprintf("n%02d", rng.IntN(len(list)+3))
					case 1:
						delete(n.Labels, "host")
					}
					nodes[name] = n
				case p < 8:
					n.Allocatable = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(rng.IntN(33))*500, resource.DecimalSI),
						"gpu": *resource.NewQuantity(int64(rng.IntN(9)), resource.DecimalSI)}
					nodes[name] = n
				default:
					n.Taints = []corev1.Taint{{Key: "dedicated", Value: fmt.Sprint(rng.IntN(2)), Effect: corev1.TaintEffectNoSchedule}}[:rng.IntN(2)]
					nodes[name] = n
				}
			}
			now := func(name string) (Node, bool) {
				n, ok := nodes[name]
				return n, ok && n.Schedulable
			}
			before := describeTree(tree)
			changed := tree.change(names, now)
			if diff := cmp.Diff(before, describeTree(tree)); diff != "" {
				t.Fatalf("%s: changing %v changed the tree it was made from (-before +after):\n%s", where, names, diff)
			}
			fresh := NewTree(propLevels, slices.Collect(maps.Values(nodes)))
			if changed == nil {
				if slices.Equal(fresh.names, tree.names) {
					t.Fatalf("%s: changing %v made no tree, with the same resources %v", where, names, tree.names)
				}
				tree = fresh
				continue
			}
			if diff := cmp.Diff(describeTree(fresh), describeTree(changed)); diff != "" {
				t.Fatalf("%s: changed %v (-built afresh +changed):\n%s", where, names, diff)
			}
			// What the pods hold, followed onto the changed tree.
			for _, name := range names {
				if rng.IntN(2) == 0 {
					held[name] = corev1.ResourceList{"gpu": *resource.NewQuantity(int64(rng.IntN(5)), resource.DecimalSI)}
				}
			}
			resources, amounts := heldAmounts(held)
			followed := tree.Occupancy(resources, maps.All(amounts)).On(changed)
			followed.Update(resources, func(yield func(string, []int64) bool) {
				for name, a := range amounts {
					if slices.Contains(names, name) && !yield(name, a) {
						return
					}
				}
			})
			got, want := followed.Snapshot(), fresh.Snapshot(held)
			if diff := cmp.Diff(freeByNode(want), freeByNode(got)); diff != "" {
				t.Fatalf("%s: free after %v (-built afresh +followed):\n%s", where, names, diff)
			}
			unit := randomUnit(rng)
			gone := map[string]corev1.ResourceList{}
			for _, name := range names {
				if h, ok := held[name]; ok {
					gone[name] = h
				}
			}
			wantRes, err := want.PlaceWithout(unit, nil, gone)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			gotRes, err := got.PlaceWithout(unit, nil, gone)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if diff := cmp.Diff(wantRes, gotRes); diff != "" {
				t.Fatalf("%s: placed %+v without %v (-built afresh +changed):\n%s", where, unit, names, diff)
			}
			wantRes, err = want.PlaceFor("u", unit)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			gotRes, err = got.PlaceFor("u", unit)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if diff := cmp.Diff(wantRes, gotRes); diff != "" {
				t.Fatalf("%s: placed %+v (-built afresh +changed):\n%s", where, unit, diff)
			}
			if diff := cmp.Diff(freeByNode(want), freeByNode(got)); diff != "" {
				t.Fatalf("%s: free after placing %+v (-built afresh +changed):\n%s", where, unit, diff)
			}
			tree = changed
		}
	}
}

// treeFacts is what a Tree says, by names rather than positions.
type treeFacts struct {
	Names   []corev1.ResourceName
	Tainted bool
	// Levels are each level's domains, in order; Members each domain's
	// members ("node x", "domain y"), Nodes its nodes, in order.
	Levels  [][]string
	Members map[string][]string
	Nodes   map[string][]string
	// Facts are each node's domain, allocatable, labels and taints.
	Facts map[string]string
}

func describeTree(t *Tree) treeFacts {
	f := treeFacts{Names: t.names, Tainted: t.tainted, Members: map[string][]string{}, Nodes: map[string][]string{}, Facts: map[string]string{}}
	for _, level := range t.byLevel {
		var out []string
		for _, d := range level {
			dom := t.domains[d]
			out = append(out, fmt.Sprint(dom.values))
			key := fmt.Sprint(dom.values)
			for _, m := range dom.members {
				if m.node {
					f.Members[key] = append(f.Members[key], "node "+t.nodes[m.idx].name)
				} else {
					f.Members[key] = append(f.Members[key], "domain "+t.lastValue(m.idx))
				}
			}
			for _, n := range dom.nodes {
				f.Nodes[key] = append(f.Nodes[key], t.nodes[n].name)
			}
		}
		f.Levels = append(f.Levels, out)
	}
	r := len(t.names)
	for n, nd := range t.nodes {
		if nd.empty {
			continue
		}
		var in []string
		if nd.domain >= 0 {
			in = t.domains[nd.domain].values
		}
		f.Facts[nd.name] = fmt.Sprint(in, t.allocatable[n*r:(n+1)*r], nd.labels, nd.taints)
	}
	return f
}

// heldAmounts is held as SnapshotHolding reads it.
func heldAmounts(held map[string]corev1.ResourceList) ([]corev1.ResourceName, map[string][]int64) {
	resources := []corev1.ResourceName{corev1.ResourceCPU, "gpu"}
	out := map[string][]int64{}
	for name, l := range held {
		a := make([]int64, len(resources))
		for i, r := range resources {
			q := l[r]
			a[i] = amount(r, q)
		}
		out[name] = a
	}
	return resources, out
}

// freeByNode is what each node of s has free, by name.
func freeByNode(s *Snapshot) map[string][]int64 {
	r := len(s.names)
	out := map[string][]int64{}
	for n, nd := range s.nodes {
		if !nd.empty {
			out[nd.name] = s.free[n*r : (n+1)*r]
		}
	}
	return out
}
