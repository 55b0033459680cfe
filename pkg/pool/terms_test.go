package pool_test

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/pool"
)

func requirement(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// offH100 is the placement of a unit of the classic tree kept off pool
// h100 (pool=h100 and gpu-health not bad): each term splits in two.
var offH100 = &pool.Placement{Avoid: []pool.Pool{{Profile: "h100", Outside: []corev1.NodeSelectorRequirement{
	requirement("pool", corev1.NodeSelectorOpNotIn, "h100"), requirement("gpu-health", corev1.NodeSelectorOpIn, "bad")}}}}

// TestNarrowStopsAtTheLimit: a tenant's template may hold as many terms as
// the API server takes; keeping them off a pool stops once the limit is
// passed, instead of copying every term once per requirement first.
func TestNarrowStopsAtTheLimit(t *testing.T) {
	own := make([]corev1.NodeSelectorTerm, 20000)
	for i := range own {
		own[i] = corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{requirement("zone", corev1.NodeSelectorOpIn, fmt.Sprint(i))}}
	}
	var err error
	allocs := testing.AllocsPerRun(1, func() { _, err = pool.Narrow(own, offH100, "main", nil) })
	if !errors.Is(err, pool.ErrTooManyTerms) {
		t.Errorf("Narrow of %d terms = %v, want past the limit", len(own), err)
	}
	if limit := float64(20 * pool.MaxPlacementTerms); allocs > limit {
		t.Errorf("Narrow of %d terms made %v allocations, want at most %v", len(own), allocs, limit)
	}
}

// TestMaxDomainsBoundsNarrow: Narrow keeps a template within as many
// domains as MaxDomains says, for templates of 0 to 40 terms within 1 to
// 70 domains, on no pool or off one; past it, with no term narrowed
// already, it fails.
func TestMaxDomainsBoundsNarrow(t *testing.T) {
	for _, p := range []*pool.Placement{nil, offH100} {
		for terms := range 41 {
			for domains := 1; domains <= 70; domains++ {
				own := make([]corev1.NodeSelectorTerm, terms)
				for i := range own {
					own[i] = corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{requirement("zone", corev1.NodeSelectorOpIn, fmt.Sprint(i))}}
				}
				within := make([]corev1.NodeSelectorTerm, domains)
				for i := range within {
					within[i] = corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{requirement("rack", corev1.NodeSelectorOpIn, fmt.Sprint(i))}}
				}
				_, err := pool.Narrow(own, p, "main", within)
				fits := domains <= p.MaxDomains(terms)
				if perDomain := max(terms, 1) * len(offH100.Avoid[0].Outside); p != nil && perDomain > pool.MaxPlacementTerms {
					fits = false // fails off the pool, with or without domains
				}
				if fits != (err == nil) {
					t.Fatalf("%d terms within %d domains off %q: Narrow = %v, MaxDomains %d", terms, domains, p.Names(), err, p.MaxDomains(terms))
				}
			}
		}
	}
}
