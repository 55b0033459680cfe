package quota

import (
	"encoding/json"
	"fmt"
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
	// SharedWeight weighs the quota's part of its parent's idle capacity;
	// a resource it does not name weighs the quota's max.
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
	// Created orders siblings whose order of change the engine did not see
	// (those fed before Engine.MarkLoaded) when their mins breach their
	// parent's: the newest are the ones refused (see changes.go).
	Created time.Time
}

// SpecFromElasticQuota reads a Spec from an ElasticQuota's spec, labels and
// annotations. A malformed shared-weight annotation is reported as an error
// and ignored (the weight falls back to max); the returned Spec is usable
// either way.
func SpecFromElasticQuota(eq *elasticquotav1alpha1.ElasticQuota) (Spec, error) {
	s := Spec{
		Name:            eq.Name,
		Parent:          eq.Labels[elasticquotav1alpha1.LabelQuotaParent],
		Min:             eq.Spec.Min,
		Max:             eq.Spec.Max,
		IsParent:        eq.Labels[elasticquotav1alpha1.LabelQuotaIsParent] == "true",
		ForceUpdate:     eq.Labels[elasticquotav1alpha1.LabelAllowForceUpdate] == "true",
		DisallowLending: eq.Labels[elasticquotav1alpha1.LabelAllowLentResource] == "false",
		Created:         eq.CreationTimestamp.Time,
	}
	raw, ok := eq.Annotations[elasticquotav1alpha1.AnnotationSharedWeight]
	if !ok || raw == "" {
		return s, nil
	}
	var weight corev1.ResourceList
	if err := json.Unmarshal([]byte(raw), &weight); err != nil {
		return s, fmt.Errorf("quota %q: annotation %s: %w", eq.Name, elasticquotav1alpha1.AnnotationSharedWeight, err)
	}
	s.SharedWeight = weight
	return s, nil
}
