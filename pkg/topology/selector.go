package topology

import (
	corev1 "k8s.io/api/core/v1"
)

// NodeSelectorTerm is the term that selects the nodes of the domain of
// values (from the top level down): an In requirement on each level's
// label down to the domain's level. The upper levels are named too, since
// a rack's value need not be unique across blocks.
func (l Levels) NodeSelectorTerm(values []string) corev1.NodeSelectorTerm {
	term := corev1.NodeSelectorTerm{MatchExpressions: make([]corev1.NodeSelectorRequirement, 0, len(values))}
	for i, v := range values {
		if i >= len(l.Labels) {
			break
		}
		term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{
			Key: l.Labels[i], Operator: corev1.NodeSelectorOpIn, Values: []string{v}})
	}
	return term
}

// NodeSelector selects the nodes of any of domains (a Placement's): one
// term per domain, which Kubernetes ORs. To narrow a pod's own required
// node affinity rather than widen it, add each of these terms' requirements
// to each of its terms instead.
func (l Levels) NodeSelector(domains []Domain) *corev1.NodeSelector {
	sel := &corev1.NodeSelector{NodeSelectorTerms: make([]corev1.NodeSelectorTerm, 0, len(domains))}
	for _, d := range domains {
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, l.NodeSelectorTerm(d.Values))
	}
	return sel
}
