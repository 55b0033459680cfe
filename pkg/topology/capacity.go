package topology

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DomainCapacity is what the schedulable nodes of one domain have, per
// resource the snapshot's nodes have, counted as a placement counts them
// (milli-cores for cpu, whole units for the rest).
type DomainCapacity struct {
	// Values are the level labels' values from the top level down to the
	// domain's. They are the snapshot's: do not change them.
	Values []string
	// Nodes counts the domain's schedulable nodes.
	Nodes int
	// Allocatable is what the nodes offer, Held what the pods on them ask
	// for, Assumed what the pods admitted to the domain and not on a node
	// yet take (Assume, and Place's placements), and Free what is left:
	// each node's allocatable less held less assumed, none below zero (a
	// node whose pods hold more than it has adds nothing, as in Place).
	Allocatable, Held, Assumed, Free corev1.ResourceList
}

// Domains is the page of the domains of level, ordered by their values,
// that starts at offset and holds at most limit of them, and how many
// domains the level has. A level the snapshot does not have has none.
//
// It does not change the snapshot: several Domains may read one at once,
// but not while it places or assumes. It costs the nodes of the page's
// domains.
func (s *Snapshot) Domains(level, offset, limit int) ([]DomainCapacity, int) {
	if level < 0 || level >= len(s.byLevel) {
		return nil, 0
	}
	all := s.byLevel[level]
	offset = min(max(offset, 0), len(all))
	end := len(all)
	if limit >= 0 {
		end = min(end, offset+limit)
	}
	r := len(s.names)
	sums := make([]int64, 4*r)
	var stack []int32
	out := make([]DomainCapacity, 0, end-offset)
	for _, d := range all[offset:end] {
		clear(sums)
		alloc, held, assumed, free := sums[:r], sums[r:2*r], sums[2*r:3*r], sums[3*r:]
		nodes := 0
		stack = append(stack[:0], d)
		for len(stack) > 0 {
			dom := &s.domains[stack[len(stack)-1]]
			stack = append(stack[:len(stack)-1], dom.children...)
			for _, n := range dom.nodes {
				nodes++
				at := int(n) * r
				for j := range r {
					a, h, f := s.allocatable[at+j], s.held[at+j], s.free[at+j]
					alloc[j] = addCapped(alloc[j], a)
					held[j] = addCapped(held[j], h)
					// What was taken of the node since it was built: free
					// started at a - h, and only takes lower it.
					assumed[j] = addCapped(assumed[j], a-h-f)
					free[j] = addCapped(free[j], max(f, 0))
				}
			}
		}
		out = append(out, DomainCapacity{Values: s.domains[d].values, Nodes: nodes,
			Allocatable: s.list(alloc), Held: s.list(held), Assumed: s.list(assumed), Free: s.list(free)})
	}
	return out, len(all)
}

// addCapped is a + b for amounts in [0, maxAmount], at most maxAmount:
// the pods of a tenant may ask for anything, and a sum over thousands of
// nodes must not wrap around.
func addCapped(a, b int64) int64 {
	if b > maxAmount-a {
		return maxAmount
	}
	return a + b
}

// list is amounts, one per resource of the snapshot, as a ResourceList.
func (s *Snapshot) list(amounts []int64) corev1.ResourceList {
	out := make(corev1.ResourceList, len(s.names))
	for j, name := range s.names {
		if name == corev1.ResourceCPU {
			out[name] = *resource.NewMilliQuantity(amounts[j], resource.DecimalSI)
		} else {
			out[name] = *resource.NewQuantity(amounts[j], resource.BinarySI)
		}
	}
	return out
}
