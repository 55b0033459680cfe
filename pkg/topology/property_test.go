package topology

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

var propLevels = Levels{Topology: "t", Labels: []string{"block", "rack", "host"}}

// randomCluster makes up to 40 nodes whose labels are sometimes missing
// (a rack value repeats across blocks), whose pods sometimes hold more
// than the node has, and some of which are not schedulable.
func randomCluster(rng *rand.Rand) ([]Node, map[string]corev1.ResourceList) {
	nodes := make([]Node, 1+rng.IntN(40))
	held := map[string]corev1.ResourceList{}
	for i := range nodes {
		name := fmt.Sprintf("n%02d", i)
		nodes[i] = randomNode(rng, name)
		if rng.IntN(3) > 0 {
			held[name] = corev1.ResourceList{
				corev1.ResourceCPU: *resource.NewMilliQuantity(int64(rng.IntN(20))*500, resource.DecimalSI),
				"gpu":              *resource.NewQuantity(int64(rng.IntN(5)), resource.DecimalSI)}
		}
	}
	return nodes, held
}

// randomNode is a node of randomCluster's.
func randomNode(rng *rand.Rand, name string) Node {
	labels := map[string]string{}
	if rng.IntN(10) > 0 {
		labels["block"] = fmt.Sprintf("b%d", rng.IntN(3))
	}
	if rng.IntN(7) > 0 {
		labels["rack"] = fmt.Sprintf("r%d", rng.IntN(4))
	}
	if rng.IntN(20) > 0 {
		labels["host"] = name
	}
	alloc := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(rng.IntN(33))*500, resource.DecimalSI)}
	if rng.IntN(4) > 0 {
		alloc["gpu"] = *resource.NewQuantity(int64(rng.IntN(9)), resource.DecimalSI)
	}
	return Node{Name: name, Labels: labels, Allocatable: alloc, Schedulable: rng.IntN(10) > 0}
}

func randomUnit(rng *rand.Rand) []PodSet {
	sets := make([]PodSet, 1+rng.IntN(3))
	for i := range sets {
		per := corev1.ResourceList{}
		if c := rng.IntN(4); c > 0 {
			per[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(c)*750, resource.DecimalSI)
		}
		if g := rng.IntN(3); g > 0 {
			per["gpu"] = *resource.NewQuantity(int64(g), resource.DecimalSI)
		}
		if rng.IntN(30) == 0 {
			per["fpga"] = resource.MustParse("1")
		}
		var ask Ask
		if rng.IntN(8) > 0 {
			ask = Ask{Level: propLevels.Labels[rng.IntN(3)], Required: rng.IntN(2) == 0}
		}
		sets[i] = PodSet{Name: fmt.Sprintf("s%d", i), Count: int32(rng.IntN(13)), PerPod: per, Ask: ask}
	}
	return sets
}

// withAmounts is sets with their Amounts read.
func withAmounts(sets []PodSet) []PodSet {
	out := slices.Clone(sets)
	for i := range out {
		out[i].Amounts = AmountsOf(out[i].PerPod)
	}
	return out
}

// withNodeAmounts is nodes with their Amounts read.
func withNodeAmounts(nodes []Node) []Node {
	out := slices.Clone(nodes)
	for i := range out {
		out[i].Amounts = AmountsOf(out[i].Allocatable)
	}
	return out
}

// naiveCount is how many pods asking per a node with free (by the
// snapshot's resource order) has room for, counted afresh.
func naiveCount(s *Snapshot, free []int64, per corev1.ResourceList) int64 {
	pods := int64(maxPods)
	for name, q := range per {
		want := q.Value()
		if name == corev1.ResourceCPU {
			want = q.MilliValue()
		}
		if want <= 0 {
			continue
		}
		i, ok := s.resource(name)
		if !ok {
			return 0
		}
		pods = min(pods, max(free[i], 0)/want)
	}
	return pods
}

// naiveDomains counts, from the nodes' labels alone, the pods per of each
// domain of level has room for, by the domain's values joined.
func naiveDomains(s *Snapshot, nodes []Node, free []int64, per corev1.ResourceList, level int) map[string]int64 {
	r := len(s.names)
	out := map[string]int64{}
	for _, nd := range nodes {
		if !nd.Schedulable {
			continue
		}
		var values []string
		for _, key := range propLevels.Labels[:level+1] {
			v := nd.Labels[key]
			if v == "" {
				break
			}
			values = append(values, v)
		}
		if len(values) != level+1 {
			continue
		}
		n := slices.IndexFunc(s.nodes, func(x node) bool { return x.name == nd.Name })
		out[fmt.Sprint(values)] += naiveCount(s, free[n*r:(n+1)*r], per)
	}
	return out
}

// TestPlaceProperties: on random clusters and units, a required level is
// placed exactly when some domain has room for all the pods, in the
// domain with the least room to spare; a preferred one when the level's
// domains together have room; a placement takes exactly its pods' room,
// never from a node without it; a unit that does not fit takes nothing;
// and the counts kept per shape always equal a recount. Placed as if
// some pods were gone, a unit takes nothing, and fits at least when it
// fits now. Nothing panics.
func TestPlaceProperties(t *testing.T) {
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 7))
		nodes, held := randomCluster(rng)
		s := NewSnapshot(propLevels, nodes, held)
		// twin, built of the nodes' Amounts, places each unit with its
		// pod sets' Amounts read once.
		twin := NewSnapshot(propLevels, withNodeAmounts(nodes), held)
		initial := slices.Clone(s.free)
		r := len(s.names)
		for u := range 12 {
			unit := randomUnit(rng)
			before := slices.Clone(s.free)
			where := fmt.Sprintf("seed %d unit %d %+v", seed, u, unit)
			// As if some earlier units and some pods were gone: it takes
			// nothing, and fits at least when the unit fits now.
			var owners []string
			for o := range u {
				if rng.IntN(3) == 0 {
					owners = append(owners, fmt.Sprint(o))
				}
			}
			gone := map[string]corev1.ResourceList{}
			for name, h := range held {
				if rng.IntN(4) == 0 {
					gone[name] = h
				}
			}
			without, err := s.PlaceWithout(unit, owners, gone)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if !slices.Equal(before, s.free) {
				t.Fatalf("%s: placing without %v and %v changed the snapshot", where, owners, gone)
			}
			res, err := s.PlaceFor(fmt.Sprint(u), unit)
			if err != nil {
				t.Fatalf("seed %d unit %d: %v", seed, u, err)
			}
			twinRes, err := twin.PlaceFor(fmt.Sprint(u), withAmounts(unit))
			if err != nil {
				t.Fatalf("%s: with amounts: %v", where, err)
			}
			if diff := cmp.Diff(res, twinRes); diff != "" || !slices.Equal(s.free, twin.free) {
				t.Fatalf("%s: placed with amounts (-without +with):\n%s", where, diff)
			}
			if len(unit) == 1 && res.Fits() && !without.Fits() {
				t.Fatalf("%s: fits, but not as if %v and %v were gone: %s", where, owners, gone, without.Reason())
			}
			first := unit[0]
			if len(unit) == 1 && !first.Ask.IsZero() && first.Count > 0 {
				level := propLevels.Index(first.Ask.Level)
				counts := naiveDomains(s, nodes, before, first.PerPod, level)
				var largest, total int64
				best, bestCount := "", int64(-1)
				keys := make([]string, 0, len(counts))
				for k := range counts {
					keys = append(keys, k)
				}
				// Ties go to the first by values; fmt.Sprint of values
				// sorts as they do here (no value is a prefix of another
				// at one level).
				slices.Sort(keys)
				for _, k := range keys {
					c := counts[k]
					largest, total = max(largest, c), total+c
					if c >= int64(first.Count) && (bestCount < 0 || c < bestCount) {
						best, bestCount = k, c
					}
				}
				wantFit := largest >= int64(first.Count)
				if !first.Ask.Required {
					wantFit = total >= int64(first.Count)
				}
				if res.Fits() != wantFit {
					t.Fatalf("%s: fits %v, want %v (largest %d, total %d): %+v", where, res.Fits(), wantFit, largest, total, res)
				}
				if res.Fits() && first.Ask.Required {
					if got := fmt.Sprint(res.Placements[0].Domains[0].Values); got != best {
						t.Fatalf("%s: placed in %s, want best fit %s of %v", where, got, best, counts)
					}
				}
				if res.Fits() {
					var sum int32
					for _, d := range res.Placements[0].Domains {
						if c := counts[fmt.Sprint(d.Values)]; int64(d.Pods) > c || d.Pods <= 0 {
							t.Fatalf("%s: %d pods in %v, which has room for %d", where, d.Pods, d.Values, c)
						}
						sum += d.Pods
					}
					if sum != first.Count {
						t.Fatalf("%s: placed %d pods of %d", where, sum, first.Count)
					}
				}
			}
			// What was taken is what was placed, and only where there was room.
			want := make([]int64, r)
			if res.Fits() {
				for i, p := range res.Placements {
					if p.Level < 0 {
						continue
					}
					if len(p.Domains) == 0 && unit[i].Count > 0 {
						t.Fatalf("%s: pod set %d placed nowhere", where, i)
					}
					var pods int64
					for _, d := range p.Domains {
						pods += int64(d.Pods)
					}
					sh := s.shapeOf(&unit[i])
					for j, q := range sh.req {
						want[j] += pods * q
					}
				}
			}
			got := make([]int64, r)
			for n := range s.nodes {
				for j := range r {
					k := n*r + j
					got[j] += before[k] - s.free[k]
					if s.free[k] != initial[k] && s.free[k] < 0 {
						t.Fatalf("%s: node %s left with %d of %s", where, s.nodes[n].name, s.free[k], s.names[j])
					}
				}
			}
			if !slices.Equal(want, got) {
				t.Fatalf("%s: took %v, placed %v (fits %v)", where, got, want, res.Fits())
			}
			for _, sh := range s.shapes {
				s.sync(sh)
				fresh := &shape{req: sh.req, missing: sh.missing, counts: make([]int32, len(s.nodes)), sums: make([]int64, len(s.domains))}
				s.recount(fresh)
				if !slices.Equal(fresh.counts, sh.counts) || !slices.Equal(fresh.sums, sh.sums) {
					t.Fatalf("%s: counts kept for %v differ from a recount", where, sh.req)
				}
			}
		}
	}
}

// TestAnOccupancyFollowsItsNodes: an Occupancy read once and then told
// only of the nodes whose pods changed makes the snapshot of what every
// node's pods hold, read afresh.
func TestAnOccupancyFollowsItsNodes(t *testing.T) {
	resources := []corev1.ResourceName{"gpu", "fpga", corev1.ResourceCPU} // fpga: no node has it
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 11))
		nodes, _ := randomCluster(rng)
		tree := NewTree(propLevels, nodes)
		held := map[string][]int64{}
		amounts := func(yield func(string, []int64) bool) {
			for n, a := range held {
				if !yield(n, a) {
					return
				}
			}
		}
		o := tree.Occupancy(resources, amounts)
		for step := range 30 {
			changed := map[string][]int64{}
			for range rng.IntN(4) {
				name := fmt.Sprintf("n%02d", rng.IntN(len(nodes)+2)) // some no node of the tree
				if rng.IntN(4) == 0 {
					delete(held, name)
					changed[name] = nil
					continue
				}
				a := make([]int64, 1+rng.IntN(len(resources)))
				for i := range a {
					a[i] = int64(rng.IntN(5)) * []int64{1, 1, 500}[i]
				}
				held[name], changed[name] = a, a
			}
			o.Update(resources, func(yield func(string, []int64) bool) {
				for n, a := range changed {
					if !yield(n, a) {
						return
					}
				}
			})
			got, want := o.Snapshot(), tree.SnapshotHolding(resources, amounts)
			if !slices.Equal(got.held, want.held) || !slices.Equal(got.free, want.free) || !slices.Equal(got.total, want.total) {
				t.Fatalf("seed %d step %d: followed held %v free %v total %v, read afresh %v %v %v",
					seed, step, got.held, got.free, got.total, want.held, want.free, want.total)
			}
		}
	}
}
