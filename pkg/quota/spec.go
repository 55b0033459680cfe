package quota

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
)

// Spec is one ElasticQuota as the engine needs it.
type Spec struct {
	// Name is the quota's name, unique cluster-wide.
	Name string
	// Parent names the parent quota; empty means the root.
	Parent string
	// Min is guaranteed to the quota.
	Min corev1.ResourceList
	// Max bounds the quota, borrowing included; a resource it does not
	// name is not limited by this quota.
	Max corev1.ResourceList
	// SharedWeight weighs the quota's part of its parent's idle capacity
	// (annotation shared-weight). As in koord-scheduler, a weight that is
	// empty or all zero is no weight at all: the quota weighs its max. A
	// resource a weight does not name weighs the quota's max, as
	// Koordinator's webhook fills it in. A negative weight makes the quota
	// invalid (ErrNegativeWeight), as the webhook refuses it.
	SharedWeight corev1.ResourceList
	// IsParent: the quota is labelled is-parent "true", as Koordinator
	// requires of a quota that has children.
	IsParent bool
	// ForceUpdate: labelled allow-force-update "true", which exempts the
	// quota from the children's-mins rule, as Koordinator's webhook does.
	ForceUpdate bool
	// DisallowLending keeps the quota's unused min from its siblings
	// (allow-lent-resource: "false"). The zero value lends, as in Koordinator.
	DisallowLending bool
	// TreeID is the quota tree (node pool) of Koordinator's multiple quota
	// trees the quota belongs to (label tree-id). Empty: the classic tree
	// under koordinator-root-quota, whose capacity is the cluster's. A quota's
	// tree id must be its parent's, unless its parent is the classic root.
	TreeID string
	// IsTreeRoot: labelled is-root "true". With a TreeID and hanging from
	// koordinator-root-quota, the quota is the root of its tree: the tree's
	// capacity is TreeTotal, as the cluster's is the classic root's.
	IsTreeRoot bool
	// TreeTotal is a tree root's capacity (annotation total-resource): a
	// resource it does not name has none. Nil when the annotation is missing
	// or malformed: the tree's capacity is then unknown, and its root is
	// invalid (ErrTreeCapacity), so the tree admits nothing rather than
	// guess. So is a total with a negative amount, which is neither taken
	// out of the classic tree's capacity nor added to it. Read only for a
	// tree root.
	TreeTotal corev1.ResourceList
	// Pool is a tree root's node pool: the ElasticQuotaProfile that made it
	// (label profile), or the one naming it when koord-queue computes the
	// trees' capacities. Only named in messages and views; read only for a
	// tree root.
	Pool string
	// IgnoreDefaultTree: a tree root labelled ignore-default-tree "true",
	// whose TreeTotal is not taken out of the classic tree's capacity.
	IgnoreDefaultTree bool
	// Created orders siblings whose order of change the engine did not see
	// (those fed before Engine.MarkLoaded) when their mins breach their
	// parent's: the newest are the ones refused (see changes.go).
	Created time.Time
}

// OlderFirst orders ElasticQuotas of one name (names are unique
// cluster-wide to koord-scheduler, yet the API server accepts one per
// namespace): the oldest is the quota of that name, and of two created in
// the same second, the one whose namespace sorts first. The Queue sync and
// the admission cache both follow it, so they never pick different copies.
func OlderFirst(a, b *elasticquotav1alpha1.ElasticQuota) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Namespace, b.Namespace)
}

// SpecFromElasticQuota reads a Spec from an ElasticQuota's spec, labels and
// annotations. A malformed shared-weight annotation is reported as an error
// and ignored (the weight falls back to max); a tree root's malformed
// total-resource annotation is reported too, and leaves TreeTotal nil (the
// tree admits nothing). The returned Spec is usable either way.
func SpecFromElasticQuota(eq *elasticquotav1alpha1.ElasticQuota) (Spec, error) {
	s := Spec{
		Name:              eq.Name,
		Parent:            eq.Labels[elasticquotav1alpha1.LabelQuotaParent],
		Min:               eq.Spec.Min,
		Max:               eq.Spec.Max,
		IsParent:          eq.Labels[elasticquotav1alpha1.LabelQuotaIsParent] == "true",
		ForceUpdate:       eq.Labels[elasticquotav1alpha1.LabelAllowForceUpdate] == "true",
		DisallowLending:   eq.Labels[elasticquotav1alpha1.LabelAllowLentResource] == "false",
		TreeID:            eq.Labels[elasticquotav1alpha1.LabelQuotaTreeID],
		IsTreeRoot:        eq.Labels[elasticquotav1alpha1.LabelQuotaIsRoot] == "true",
		Pool:              eq.Labels[elasticquotav1alpha1.LabelQuotaProfile],
		IgnoreDefaultTree: eq.Labels[elasticquotav1alpha1.LabelQuotaIgnoreDefaultTree] == "true",
		Created:           eq.CreationTimestamp.Time,
	}
	var errs []error
	if raw, ok := eq.Annotations[elasticquotav1alpha1.AnnotationSharedWeight]; ok && raw != "" {
		var weight corev1.ResourceList
		if err := json.Unmarshal([]byte(raw), &weight); err != nil {
			errs = append(errs, fmt.Errorf("quota %q: annotation %s: %w", eq.Name, elasticquotav1alpha1.AnnotationSharedWeight, err))
		} else {
			s.SharedWeight = weight
		}
	}
	if s.IsTreeRoot && s.TreeID != "" {
		if raw, ok := eq.Annotations[elasticquotav1alpha1.AnnotationTotalResource]; ok && raw != "" {
			var total corev1.ResourceList
			if err := json.Unmarshal([]byte(raw), &total); err != nil {
				errs = append(errs, fmt.Errorf("quota %q: annotation %s: %w", eq.Name, elasticquotav1alpha1.AnnotationTotalResource, err))
			} else if total != nil {
				s.TreeTotal = total
			} else {
				s.TreeTotal = corev1.ResourceList{} // "null": a tree of no capacity
			}
		}
	}
	return s, errors.Join(errs...)
}
