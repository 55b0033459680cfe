package pool

import (
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
)

// Pool is the node pool of a quota tree (Koordinator's multiple quota
// trees): the ElasticQuotaProfile of the tree's root, and its node
// selector as node selector requirements.
type Pool struct {
	// Profile is the ElasticQuotaProfile's name.
	Profile string
	// Requirements are what a pod of the pool must require of its node.
	Requirements []corev1.NodeSelectorRequirement
	// Outside are the negations of Requirements: a node outside the pool
	// meets one of them. Set for the pools the classic tree avoids.
	Outside []corev1.NodeSelectorRequirement
}

// Placement is where the pods of a unit of a quota must run for its
// tree: on the node pool of its tree, or, for a unit of the classic
// tree, off the pools whose capacity koord-scheduler takes out of the
// classic tree's. koord-queue-controllers puts it on the pods at release
// as required node affinity; koord-queue's placement within topology
// domains counts only the nodes it leaves (NodeSelectors).
type Placement struct {
	// Pool: a unit of a pool's tree requires the pool's nodes.
	Pool *Pool
	// Avoid: a unit of the classic tree requires nodes outside each of
	// these pools, by profile name.
	Avoid []Pool
}

// NodeSelectors are the node selectors a node must meet each of to take
// the placement's pods (the terms of each are alternatives): one term of
// the pool's requirements; for each pool avoided, one term per negation.
// They choose the nodes the required node affinity the controllers write
// does, in product form rather than multiplied out; nil for nil.
func (p *Placement) NodeSelectors() []*corev1.NodeSelector {
	if p == nil {
		return nil
	}
	var out []*corev1.NodeSelector
	if p.Pool != nil {
		out = append(out, &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: p.Pool.Requirements}}})
	}
	for _, avoided := range p.Avoid {
		sel := &corev1.NodeSelector{NodeSelectorTerms: make([]corev1.NodeSelectorTerm, 0, len(avoided.Outside))}
		for _, n := range avoided.Outside {
			sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{n}})
		}
		out = append(out, sel)
	}
	return out
}

// QuotaLookup is the ElasticQuota in use of a name (of several of one
// name, the oldest: quota.OlderFirst); nil when none exists.
type QuotaLookup func(name string) (*elasticquotav1alpha1.ElasticQuota, error)

// PlacementOf is where the pods of a unit of the quota called name must
// run; nil when anywhere: a quota of a tree without a pool, or of the
// classic tree in a cluster without pools. A quota of a tree (labelled
// with a tree id) is placed on its pool (PoolOf). Any other, and a quota
// that does not exist (whose pods koord-scheduler charges to the default
// quota, of the classic tree), is of the classic tree, whose capacity is
// the cluster's less the total of every tree whose root is not labelled
// ignore-default-tree: its pods are kept off those trees' pools (Avoided).
// profiles are every ElasticQuotaProfile of the cluster.
func PlacementOf(name string, quotas QuotaLookup, profiles []*quotav1alpha1.ElasticQuotaProfile) (*Placement, error) {
	var q *elasticquotav1alpha1.ElasticQuota
	if name != "" {
		var err error
		if q, err = quotas(name); err != nil {
			return nil, err
		}
	}
	if q != nil && q.Labels[elasticquotav1alpha1.LabelQuotaTreeID] != "" {
		p, err := PoolOf(name, quotas, profiles)
		if err != nil || p == nil {
			return nil, err
		}
		return &Placement{Pool: p}, nil
	}
	avoid, err := Avoided(quotas, profiles)
	if err != nil || len(avoid) == 0 {
		return nil, err
	}
	return &Placement{Avoid: avoid}, nil
}

// PoolOf is the node pool of the quota called name: nil when it is in the
// classic tree, or no profile with a node selector names its tree's root
// (TreeRootOf). Its profile is ProfileOfRoot's, the one koord-queue takes
// the tree's capacity from.
func PoolOf(name string, quotas QuotaLookup, profiles []*quotav1alpha1.ElasticQuotaProfile) (*Pool, error) {
	root, err := TreeRootOf(name, quotas)
	if err != nil || root == nil {
		return nil, err
	}
	profile := ProfileOfRoot(root, profiles)
	if profile == nil || profile.Spec.NodeSelector == nil {
		return nil, nil
	}
	reqs := Requirements(profile.Spec.NodeSelector)
	if len(reqs) == 0 {
		return nil, nil
	}
	return &Pool{Profile: profile.Name, Requirements: reqs}, nil
}

// Avoided are the node pools the classic tree's pods keep off: of each
// quota tree whose root (the ElasticQuota in use of a name a profile gives
// as spec.quotaName, labelled a tree's root: IsTreeRoot) is not labelled
// ignore-default-tree, the pool of its profile (ProfileOfRoot), by
// profile name. A profile whose node selector is missing, empty (every
// node) or does not parse is left out: neither koord-manager nor
// koord-queue computes a total from it, so nothing of the classic tree's
// capacity went to its nodes. A tree whose root no profile names has no
// node selector to keep off, and is left out too.
func Avoided(quotas QuotaLookup, profiles []*quotav1alpha1.ElasticQuotaProfile) ([]Pool, error) {
	roots := map[string]bool{}
	var out []Pool
	for _, p := range profiles {
		name := p.Spec.QuotaName
		if name == "" || roots[name] {
			continue
		}
		roots[name] = true
		root, err := quotas(name)
		if err != nil {
			return nil, err
		}
		if root == nil || !IsTreeRoot(root) || root.Labels[elasticquotav1alpha1.LabelQuotaIgnoreDefaultTree] == "true" {
			continue
		}
		if pool, ok := OutsideOf(ProfileOfRoot(root, profiles)); ok {
			out = append(out, pool)
		}
	}
	slices.SortFunc(out, func(a, b Pool) int { return strings.Compare(a.Profile, b.Profile) })
	return out, nil
}

// OutsideOf is the pool of profile with the negations of its
// requirements; ok is false when its selector chooses no pool (see
// Avoided).
func OutsideOf(profile *quotav1alpha1.ElasticQuotaProfile) (Pool, bool) {
	if profile == nil || profile.Spec.NodeSelector == nil {
		return Pool{}, false
	}
	if _, err := metav1.LabelSelectorAsSelector(profile.Spec.NodeSelector); err != nil {
		return Pool{}, false
	}
	pool := Pool{Profile: profile.Name, Requirements: Requirements(profile.Spec.NodeSelector)}
	for _, req := range pool.Requirements {
		n, ok := Negated(req)
		if !ok {
			return Pool{}, false
		}
		pool.Outside = append(pool.Outside, n)
	}
	return pool, len(pool.Outside) > 0
}

// ProfileOfRoot is the ElasticQuotaProfile of a tree's root among profiles
// (ProfileOf, by the root's profile label); nil when none names it.
func ProfileOfRoot(root *elasticquotav1alpha1.ElasticQuota, profiles []*quotav1alpha1.ElasticQuotaProfile) *quotav1alpha1.ElasticQuotaProfile {
	p, _ := ProfileOf(root.Namespace, root.Name, root.Labels[elasticquotav1alpha1.LabelQuotaProfile], profiles)
	return p
}

// IsTreeRoot reports whether q is labelled the root of a quota tree
// (is-root and a tree id) and hangs from koordinator-root-quota.
func IsTreeRoot(q *elasticquotav1alpha1.ElasticQuota) bool {
	parent := q.Labels[elasticquotav1alpha1.LabelQuotaParent]
	return q.Labels[elasticquotav1alpha1.LabelQuotaTreeID] != "" && q.Labels[elasticquotav1alpha1.LabelQuotaIsRoot] == "true" &&
		(parent == "" || parent == elasticquotav1alpha1.RootQuotaName)
}

// TreeRootOf is the root of the quota tree of the quota called name: the
// first quota up its parents labelled the root of a quota tree (is-root
// and tree-id) and hanging from koordinator-root-quota, as koord-queue
// builds its trees (a unit of a quota whose chain is not such a tree is
// never admitted there). It is nil when the quota is in the classic tree,
// or its chain of parents breaks (a parent missing, a cycle).
func TreeRootOf(name string, quotas QuotaLookup) (*elasticquotav1alpha1.ElasticQuota, error) {
	seen := map[string]bool{}
	for name != "" && name != elasticquotav1alpha1.RootQuotaName && !seen[name] {
		seen[name] = true
		q, err := quotas(name)
		if err != nil || q == nil || q.Labels[elasticquotav1alpha1.LabelQuotaTreeID] == "" {
			return nil, err
		}
		parent := q.Labels[elasticquotav1alpha1.LabelQuotaParent]
		if parent == "" || parent == elasticquotav1alpha1.RootQuotaName {
			if !IsTreeRoot(q) {
				return nil, nil
			}
			return q, nil
		}
		name = parent
	}
	return nil, nil
}

// Requirements are a profile's node selector as node selector
// requirements, as koord-manager's webhook puts them on pods: each label
// of matchLabels (by key, so that the result is stable) as In that value,
// then each expression with its own operator.
func Requirements(sel *metav1.LabelSelector) []corev1.NodeSelectorRequirement {
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

// Negated is the requirement a node meets exactly when it fails r, for
// the operators a label selector has: NotIn matches a node without the
// label too, and DoesNotExist is Exists's opposite. ok is false for the
// others (Gt, Lt), which no profile's selector holds.
func Negated(r corev1.NodeSelectorRequirement) (n corev1.NodeSelectorRequirement, ok bool) {
	n = corev1.NodeSelectorRequirement{Key: r.Key, Values: slices.Clone(r.Values)}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		n.Operator = corev1.NodeSelectorOpNotIn
	case corev1.NodeSelectorOpNotIn:
		n.Operator = corev1.NodeSelectorOpIn
	case corev1.NodeSelectorOpExists:
		n.Operator = corev1.NodeSelectorOpDoesNotExist
	case corev1.NodeSelectorOpDoesNotExist:
		n.Operator = corev1.NodeSelectorOpExists
	default:
		return corev1.NodeSelectorRequirement{}, false
	}
	return n, true
}
