package framework

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/pool"
	"github.com/koord-queue/koord-queue/pkg/topology"
)

// placement is where a unit's pods must run: on or off node pools
// (pool.Placement: the node pool of its quota's tree, or, for a unit of
// the classic tree, off the pools whose capacity koord-scheduler takes
// out of the classic tree's), and within the topology domains its pod
// sets were admitted to.
type placement struct {
	pool.Placement
	// Domains are, by pod set name, the topology domains its pods were
	// admitted to (status.topologyAssignments): one node selector term
	// per domain, any of which its pods must meet as well.
	Domains map[string][]corev1.NodeSelectorTerm
}

// pools names the placement's pools, for messages: "node pool a100",
// "node pools a100, h100".
func (p *placement) pools() string {
	if p.Pool != nil {
		return "node pool " + p.Pool.Profile
	}
	names := make([]string, len(p.Avoid))
	for i, avoided := range p.Avoid {
		names[i] = avoided.Profile
	}
	if len(names) == 1 {
		return "node pool " + names[0]
	}
	return "node pools " + strings.Join(names, ", ")
}

// String says what the placement puts on pods, for the unit's condition:
// "the required node affinity of node pool a100", "the required node
// affinity keeping them off node pools a100, h100".
func (p *placement) String() string {
	var s string
	switch {
	case p.Pool != nil:
		s = "the required node affinity of " + p.pools()
	case len(p.Avoid) > 0:
		s = "the required node affinity keeping them off " + p.pools()
	}
	if len(p.Domains) == 0 {
		return s
	}
	if s == "" {
		return "the required node affinity of their topology domains"
	}
	return s + ", within their topology domains"
}

// placementOf is where the unit's pods must run; nil when anywhere: on or
// off node pools (poolPlacementOf), within the topology domains its pod
// sets were admitted to (domainsOf).
func (r *JobReconciler) placementOf(ctx context.Context, unit *schedulingv1alpha1.QueueUnit) (*placement, error) {
	onPools, err := r.poolPlacementOf(ctx, unit)
	if err != nil {
		return nil, err
	}
	domains := domainsOf(unit)
	if onPools == nil && len(domains) == 0 {
		return nil, nil
	}
	p := &placement{Domains: domains}
	if onPools != nil {
		p.Placement = *onPools
	}
	return p, nil
}

// domainsOf are, by pod set name, the node selector terms of the topology
// domains unit's pod sets were admitted to: one per domain, requiring
// each level's label value from the Topology's top level down.
func domainsOf(unit *schedulingv1alpha1.QueueUnit) map[string][]corev1.NodeSelectorTerm {
	var out map[string][]corev1.NodeSelectorTerm
	for _, a := range unit.Status.TopologyAssignments {
		levels := topology.Levels{Topology: a.Topology, Labels: a.Levels}
		terms := make([]corev1.NodeSelectorTerm, 0, len(a.Domains))
		for _, d := range a.Domains {
			terms = append(terms, levels.NodeSelectorTerm(d.Values))
		}
		if len(terms) == 0 {
			continue
		}
		if out == nil {
			out = map[string][]corev1.NodeSelectorTerm{}
		}
		out[a.Name] = terms
	}
	return out
}

// poolPlacementOf is the placement of the unit's pods on or off node
// pools (placementOf's, without topology domains): pool.PlacementOf of
// its quota (quotaNameOf), the ElasticQuotas of a name being the one
// koord-queue uses (inUseQuota), so that the pods go where koord-queue
// counted them. The reads go through the manager's cache; a cluster
// without the ElasticQuotaProfile API has no pools.
func (r *JobReconciler) poolPlacementOf(ctx context.Context, unit *schedulingv1alpha1.QueueUnit) (*pool.Placement, error) {
	var list quotav1alpha1.ElasticQuotaProfileList
	if err := r.client.List(ctx, &list); err != nil {
		if apimeta.IsNoMatchError(err) {
			ctrl.LoggerFrom(ctx).V(2).Info("No ElasticQuotaProfile API: pods get no pool affinity")
			return nil, nil
		}
		return nil, fmt.Errorf("listing ElasticQuotaProfiles: %w", err)
	}
	profiles := make([]*quotav1alpha1.ElasticQuotaProfile, len(list.Items))
	for i := range list.Items {
		profiles[i] = &list.Items[i]
	}
	inUse := func(name string) (*elasticquotav1alpha1.ElasticQuota, error) { return inUseQuota(ctx, r.client, name) }
	return pool.PlacementOf(quotaNameOf(unit), inUse, profiles)
}

// quotaNameOf is the quota of the unit: the one its label names, else the
// one it was admitted into (spec.queue).
func quotaNameOf(unit *schedulingv1alpha1.QueueUnit) string {
	if name := elasticquotav1alpha1.QuotaNameFromLabels(unit.Labels); name != "" {
		return name
	}
	return unit.Spec.Queue
}

// maxPlacementTerms bounds the terms of the required node affinity a
// placement leaves: keeping off a pool whose selector has n requirements
// splits each term of a template in n (see offPool), so a template's own
// terms times the pools' requirements could otherwise grow without bound.
const maxPlacementTerms = 64

// placedAffinity is a copy of a (nil: none), the affinity of pod set
// podSet's pods, whose required node affinity keeps to p: every term also
// requires p's pool (a node must match one term, so each term must keep
// to the pool), or is narrowed to nodes outside each pool p avoids
// (offPool), and then to the pod set's topology domains (withinDomains);
// a template without terms gets one. Placing twice gives what placing
// once does. It fails, leaving a as it is, when more than
// maxPlacementTerms terms would be left.
func placedAffinity(a *corev1.Affinity, p *placement, podSet string) (*corev1.Affinity, error) {
	if p.Pool == nil && len(p.Avoid) == 0 && len(p.Domains[podSet]) == 0 {
		return a.DeepCopy(), nil // nothing for this pod set (another one's domains)
	}
	out := a.DeepCopy()
	if out == nil {
		out = &corev1.Affinity{}
	}
	if out.NodeAffinity == nil {
		out.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := out.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	required := na.RequiredDuringSchedulingIgnoredDuringExecution
	terms := required.NodeSelectorTerms
	if len(terms) == 0 {
		terms = []corev1.NodeSelectorTerm{{}}
	}
	if p.Pool != nil {
		for i := range terms {
			terms[i].MatchExpressions = withRequirements(terms[i].MatchExpressions, p.Pool.Requirements)
		}
	}
	for _, avoided := range p.Avoid {
		var ok bool
		if terms, ok = offPool(terms, avoided.Outside, maxPlacementTerms); !ok {
			return nil, fmt.Errorf("%w: keeping its pods off %s takes more than %d required node affinity terms; give its pods fewer terms of their own",
				errTooManyTerms, p.pools(), maxPlacementTerms)
		}
	}
	if domains := p.Domains[podSet]; len(domains) > 0 {
		var ok bool
		if terms, ok = withinDomains(terms, domains, maxPlacementTerms); !ok {
			return nil, fmt.Errorf("%w: keeping pod set %s within its %d topology domains takes more than %d required node affinity terms; give its pods fewer terms of their own",
				errTooManyTerms, podSet, len(domains), maxPlacementTerms)
		}
	}
	required.NodeSelectorTerms = terms
	return out, nil
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

// errTooManyTerms: a placement would leave more than maxPlacementTerms
// required node affinity terms.
var errTooManyTerms = errors.New("the job is not released")

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

// requiredNodeAffinity is the template's required node affinity, kept with
// the pod set's originals: nil Required is a template that has none.
type requiredNodeAffinity struct {
	Required *corev1.NodeSelector `json:"required,omitempty"`
}

func requiredOf(spec *corev1.PodSpec) *corev1.NodeSelector { return requiredOfAffinity(spec.Affinity) }

func requiredOfAffinity(a *corev1.Affinity) *corev1.NodeSelector {
	if a == nil || a.NodeAffinity == nil {
		return nil
	}
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.DeepCopy()
}

// restoreRequired puts the template's required node affinity back to
// want (withRequired). It reports whether anything changed.
func restoreRequired(spec *corev1.PodSpec, want *corev1.NodeSelector) bool {
	var changed bool
	spec.Affinity, changed = withRequired(spec.Affinity, want)
	return changed
}

// withRequired is a with its required node affinity set to want (nil:
// none), leaving out the node affinity and the affinity that leaves empty;
// a itself when it has that already. changed reports whether it differs.
func withRequired(a *corev1.Affinity, want *corev1.NodeSelector) (_ *corev1.Affinity, changed bool) {
	if equality.Semantic.DeepEqual(requiredOfAffinity(a), want) {
		return a, false
	}
	out := a.DeepCopy()
	if want == nil {
		na := out.NodeAffinity
		na.RequiredDuringSchedulingIgnoredDuringExecution = nil
		if len(na.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
			out.NodeAffinity = nil
		}
		if equality.Semantic.DeepEqual(*out, corev1.Affinity{}) {
			return nil, true
		}
		return out, true
	}
	if out == nil {
		out = &corev1.Affinity{}
	}
	if out.NodeAffinity == nil {
		out.NodeAffinity = &corev1.NodeAffinity{}
	}
	out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = want.DeepCopy()
	return out, true
}

// completeOriginals fills in what originals recorded by an earlier version
// lack, from the pod sets as they are (no update changed them then): the
// required node affinity of templates (recorded before node pools), and of
// the fields of job a made-up pod set's pods take theirs from
// (recordMadeUp). It reports whether originals changed.
func completeOriginals(originals podSetOriginals, sets []PodSet, job GenericJob) bool {
	changed := false
	for _, s := range sets {
		d, ok := originals[s.Name]
		if !ok || s.Template == nil {
			continue
		}
		if d.NodeAffinity == nil {
			d.NodeAffinity = &requiredNodeAffinity{Required: requiredOf(&s.Template.Spec)}
			originals[s.Name], changed = d, true
		}
		if s.MadeUp && d.MadeUpAffinity == nil {
			if d.MadeUpAffinity = recordMadeUp(job, s.Name); d.MadeUpAffinity != nil {
				originals[s.Name], changed = d, true
			}
		}
	}
	return changed
}
