package pool

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// MaxPlacementTerms bounds the terms of the required node affinity a
// placement leaves on a pod template (Narrow): keeping off a pool whose
// selector has n requirements splits each term of a template in n (see
// offPool), and keeping within k topology domains in k, so a template's
// own terms times the pools' requirements times the domains could
// otherwise grow without bound.
const MaxPlacementTerms = 64

// ErrTooManyTerms: a placement would leave more than MaxPlacementTerms
// required node affinity terms.
var ErrTooManyTerms = errors.New("the job is not released")

// Names names the placement's pools, for messages: "node pool a100",
// "node pools a100, h100"; "" for none.
func (p *Placement) Names() string {
	if p == nil {
		return ""
	}
	if p.Pool != nil {
		return "node pool " + p.Pool.Profile
	}
	names := make([]string, len(p.Avoid))
	for i, avoided := range p.Avoid {
		names[i] = avoided.Profile
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return "node pool " + names[0]
	}
	return "node pools " + strings.Join(names, ", ")
}

// Narrow is terms, the required node affinity terms of pod set podSet's
// template (none: it gets one), as koord-queue-controllers writes them at
// release: every term also requires p's pool (a node must match one term,
// so each term must keep to the pool), or is narrowed to nodes outside
// each pool p avoids (offPool), and then to the pod set's topology
// domains (withinDomains; none: anywhere). p may be nil. terms are
// changed: pass a copy. Narrowing twice gives what narrowing once does.
// It fails with ErrTooManyTerms once more than MaxPlacementTerms would be
// left.
func Narrow(terms []corev1.NodeSelectorTerm, p *Placement, podSet string, domains []corev1.NodeSelectorTerm) ([]corev1.NodeSelectorTerm, error) {
	if len(terms) == 0 {
		terms = []corev1.NodeSelectorTerm{{}}
	}
	if p != nil && p.Pool != nil {
		for i := range terms {
			terms[i].MatchExpressions = withRequirements(terms[i].MatchExpressions, p.Pool.Requirements)
		}
	}
	if p != nil {
		for _, avoided := range p.Avoid {
			var ok bool
			if terms, ok = offPool(terms, avoided.Outside, MaxPlacementTerms); !ok {
				return nil, fmt.Errorf("%w: keeping its pods off %s takes more than %d required node affinity terms; give its pods fewer terms of their own",
					ErrTooManyTerms, p.Names(), MaxPlacementTerms)
			}
		}
	}
	if len(domains) > 0 {
		var ok bool
		if terms, ok = withinDomains(terms, domains, MaxPlacementTerms); !ok {
			return nil, fmt.Errorf("%w: keeping pod set %s within its %d topology domains takes more than %d required node affinity terms; give its pods fewer terms of their own",
				ErrTooManyTerms, podSet, len(domains), MaxPlacementTerms)
		}
	}
	return terms, nil
}

// MaxDomains is the most topology domains Narrow can keep a template of
// terms required node affinity terms (0: none) within, on p (nil: no
// pool): a bound that counts no term as narrowed already. It is at least
// 1: a template Narrow fails on within one domain fails without
// topology too.
func (p *Placement) MaxDomains(terms int) int {
	per := max(terms, 1)
	if p != nil {
		for _, avoided := range p.Avoid {
			per *= max(len(avoided.Outside), 1)
			if per > MaxPlacementTerms {
				return 1
			}
		}
	}
	return max(MaxPlacementTerms/per, 1)
}

// withinDomains narrows terms to the nodes of domains (one term each, any
// of which a node must meet): each term becomes one term per domain,
// requiring what it did and what the domain's term does, so that the
// template's own affinity is never widened. A term that already holds
// every requirement of one domain is kept as it is, so narrowing twice
// changes nothing. ok is false, and the work stopped, once there would be
// more than limit terms.
func withinDomains(terms, domains []corev1.NodeSelectorTerm, limit int) (_ []corev1.NodeSelectorTerm, ok bool) {
	var out []corev1.NodeSelectorTerm
	for _, t := range terms {
		within := slices.ContainsFunc(domains, func(d corev1.NodeSelectorTerm) bool {
			return !slices.ContainsFunc(d.MatchExpressions, func(r corev1.NodeSelectorRequirement) bool { return !hasRequirement(t.MatchExpressions, r) })
		})
		if within {
			out = append(out, t)
		} else {
			for _, d := range domains {
				narrowed := t.DeepCopy()
				narrowed.MatchExpressions = withRequirements(narrowed.MatchExpressions, d.MatchExpressions)
				out = append(out, *narrowed)
			}
		}
		if len(out) > limit {
			return nil, false
		}
	}
	return out, true
}

// withRequirements is have with each of reqs it lacks added.
func withRequirements(have, reqs []corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement {
	for _, req := range reqs {
		if !hasRequirement(have, req) {
			have = append(have, *req.DeepCopy())
		}
	}
	return have
}

func hasRequirement(have []corev1.NodeSelectorRequirement, req corev1.NodeSelectorRequirement) bool {
	return slices.ContainsFunc(have, func(h corev1.NodeSelectorRequirement) bool { return equality.Semantic.DeepEqual(h, req) })
}

// offPool narrows terms to the nodes outside a pool, given outside, the
// negations of the pool's requirements (a node is in the pool when it
// meets every requirement, so outside when it meets one negation): each
// term becomes one term per negation, requiring what it did and that
// negation (the terms of a required node affinity are alternatives: "T
// and not (A and B)" is "T and not A, or T and not B"). A term that
// already requires one of the negations is outside already and kept as it
// is, so narrowing twice changes nothing. ok is false, and the work
// stopped, once there would be more than limit terms.
func offPool(terms []corev1.NodeSelectorTerm, outside []corev1.NodeSelectorRequirement, limit int) (_ []corev1.NodeSelectorTerm, ok bool) {
	var out []corev1.NodeSelectorTerm
	for _, t := range terms {
		if slices.ContainsFunc(outside, func(n corev1.NodeSelectorRequirement) bool { return hasRequirement(t.MatchExpressions, n) }) {
			out = append(out, t)
		} else {
			for _, n := range outside {
				split := t.DeepCopy()
				split.MatchExpressions = append(split.MatchExpressions, *n.DeepCopy())
				out = append(out, *split)
			}
		}
		if len(out) > limit {
			return nil, false
		}
	}
	return out, true
}
