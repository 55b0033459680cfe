package framework

import (
	"context"
	"fmt"

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

// String says what the placement puts on pods, for the unit's condition:
// "the required node affinity of node pool a100", "the required node
// affinity keeping them off node pools a100, h100".
func (p *placement) String() string {
	var s string
	switch {
	case p.Pool != nil:
		s = "the required node affinity of " + p.Names()
	case len(p.Avoid) > 0:
		s = "the required node affinity keeping them off " + p.Names()
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

// placedAffinity is a copy of a (nil: none), the affinity of pod set
// podSet's pods, whose required node affinity keeps to p (pool.Narrow):
// to its node pool, off the pools it avoids, within the pod set's
// topology domains. Placing twice gives what placing once does. It fails,
// leaving a as it is, when more than pool.MaxPlacementTerms terms would
// be left.
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
	terms, err := pool.Narrow(required.NodeSelectorTerms, &p.Placement, podSet, p.Domains[podSet])
	if err != nil {
		return nil, err
	}
	required.NodeSelectorTerms = terms
	return out, nil
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
