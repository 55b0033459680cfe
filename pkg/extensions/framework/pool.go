package framework

import (
	"context"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/pool"
)

// nodePool is the node pool of a unit's quota tree (Koordinator's multiple
// quota trees): the ElasticQuotaProfile of the tree's root, and its node
// selector as node selector requirements.
type nodePool struct {
	// Profile is the ElasticQuotaProfile's name.
	Profile string
	// Requirements are what a pod of the pool must require of its node.
	Requirements []corev1.NodeSelectorRequirement
}

// poolOf is the node pool of the unit's quota: nil when its quota is in
// the classic tree, or no profile with a node selector names its tree's
// root. The quota is the one the unit's label names, else the one it was
// admitted into (spec.queue); of ElasticQuotas of one name, and so of each
// parent, the one koord-queue uses (inUseQuota). Its tree's root is the
// first quota up its parents labelled the root of a quota tree (is-root
// and tree-id) and hanging from koordinator-root-quota, as koord-queue
// builds its trees (a unit of a quota whose chain is not such a tree is
// never admitted there); its profile is pool.ProfileOf's, the one
// koord-queue takes the tree's capacity from. The reads go through the
// manager's cache.
func (r *JobReconciler) poolOf(ctx context.Context, unit *schedulingv1alpha1.QueueUnit) (*nodePool, error) {
	name := elasticquotav1alpha1.QuotaNameFromLabels(unit.Labels)
	if name == "" {
		name = unit.Spec.Queue
	}
	root, err := r.treeRootOf(ctx, name)
	if err != nil || root == nil {
		return nil, err
	}
	profile, err := r.profileOf(ctx, root)
	if err != nil || profile == nil || profile.Spec.NodeSelector == nil {
		return nil, err
	}
	reqs := poolRequirements(profile.Spec.NodeSelector)
	if len(reqs) == 0 {
		return nil, nil
	}
	return &nodePool{Profile: profile.Name, Requirements: reqs}, nil
}

// treeRootOf is the root of the quota tree of the quota called name (see
// poolOf); nil when it is in the classic tree, or its chain of parents
// breaks (a parent missing, a cycle).
func (r *JobReconciler) treeRootOf(ctx context.Context, name string) (*elasticquotav1alpha1.ElasticQuota, error) {
	seen := map[string]bool{}
	for name != "" && name != elasticquotav1alpha1.RootQuotaName && !seen[name] {
		seen[name] = true
		q, err := inUseQuota(ctx, r.client, name)
		if err != nil || q == nil || q.Labels[elasticquotav1alpha1.LabelQuotaTreeID] == "" {
			return nil, err
		}
		parent := q.Labels[elasticquotav1alpha1.LabelQuotaParent]
		if parent == "" || parent == elasticquotav1alpha1.RootQuotaName {
			if q.Labels[elasticquotav1alpha1.LabelQuotaIsRoot] != "true" {
				return nil, nil
			}
			return q, nil
		}
		name = parent
	}
	return nil, nil
}

// profileOf is the ElasticQuotaProfile of a tree's root (pool.ProfileOf);
// nil when there is none, or the cluster serves no profiles.
func (r *JobReconciler) profileOf(ctx context.Context, root *elasticquotav1alpha1.ElasticQuota) (*quotav1alpha1.ElasticQuotaProfile, error) {
	var profiles quotav1alpha1.ElasticQuotaProfileList
	if err := r.client.List(ctx, &profiles, client.InNamespace(root.Namespace)); err != nil {
		if apimeta.IsNoMatchError(err) {
			ctrl.LoggerFrom(ctx).V(2).Info("No ElasticQuotaProfile API: pods get no pool affinity", "quota", root.Name)
			return nil, nil
		}
		return nil, fmt.Errorf("listing ElasticQuotaProfiles: %w", err)
	}
	candidates := make([]*quotav1alpha1.ElasticQuotaProfile, len(profiles.Items))
	for i := range profiles.Items {
		candidates[i] = &profiles.Items[i]
	}
	p, _ := pool.ProfileOf(root.Namespace, root.Name, root.Labels[elasticquotav1alpha1.LabelQuotaProfile], candidates)
	return p, nil
}

// poolRequirements are a profile's node selector as node selector
// requirements, as koord-manager's webhook puts them on pods: each label of
// matchLabels (by key, so that the result is stable) as In that value,
// then each expression with its own operator.
func poolRequirements(sel *metav1.LabelSelector) []corev1.NodeSelectorRequirement {
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]corev1.NodeSelectorRequirement, 0, len(keys)+len(sel.MatchExpressions))
	for _, k := range keys {
		out = append(out, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{sel.MatchLabels[k]}})
	}
	for _, e := range sel.MatchExpressions {
		out = append(out, corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOperator(e.Operator), Values: slices.Clone(e.Values)})
	}
	return out
}

// requirePool adds reqs to the template's required node affinity: to every
// one of its terms (the scheduler wants a node to match one term, so each
// term must also match the pool), or as the only term when it has none. A
// requirement a term already holds is not added again, so a template that
// has the pool's affinity (from an earlier release, or its author) stays as
// it is.
func requirePool(spec *corev1.PodSpec, reqs []corev1.NodeSelectorRequirement) {
	if len(reqs) == 0 {
		return
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	required := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(required.NodeSelectorTerms) == 0 {
		required.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range required.NodeSelectorTerms {
		term := &required.NodeSelectorTerms[i]
		for _, req := range reqs {
			if !slices.ContainsFunc(term.MatchExpressions, func(have corev1.NodeSelectorRequirement) bool {
				return equality.Semantic.DeepEqual(have, req)
			}) {
				term.MatchExpressions = append(term.MatchExpressions, *req.DeepCopy())
			}
		}
	}
}

// requiredNodeAffinity is the template's required node affinity, kept with
// the pod set's originals: nil Required is a template that has none.
type requiredNodeAffinity struct {
	Required *corev1.NodeSelector `json:"required,omitempty"`
}

func requiredOf(spec *corev1.PodSpec) *corev1.NodeSelector {
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil {
		return nil
	}
	return spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.DeepCopy()
}

// restoreRequired puts the template's required node affinity back to
// want, removing the node affinity and affinity it leaves empty. It
// reports whether anything changed.
func restoreRequired(spec *corev1.PodSpec, want *corev1.NodeSelector) bool {
	if equality.Semantic.DeepEqual(requiredOf(spec), want) {
		return false
	}
	if want == nil {
		na := spec.Affinity.NodeAffinity
		na.RequiredDuringSchedulingIgnoredDuringExecution = nil
		if len(na.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
			spec.Affinity.NodeAffinity = nil
		}
		if equality.Semantic.DeepEqual(*spec.Affinity, corev1.Affinity{}) {
			spec.Affinity = nil
		}
		return true
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = want.DeepCopy()
	return true
}

// completeOriginals fills in the required node affinity of originals
// recorded before node pools (NodeAffinity nil) from the templates as they
// are: no update changed it then. It reports whether originals changed.
func completeOriginals(originals podSetOriginals, sets []PodSet) bool {
	changed := false
	for _, s := range sets {
		d, ok := originals[s.Name]
		if !ok || s.Template == nil || d.NodeAffinity != nil {
			continue
		}
		d.NodeAffinity = &requiredNodeAffinity{Required: requiredOf(&s.Template.Spec)}
		originals[s.Name], changed = d, true
	}
	return changed
}
