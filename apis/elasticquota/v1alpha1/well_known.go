package v1alpha1

import (
	"encoding/json"
	"fmt"
)

// Koordinator's keys on ElasticQuotas and jobs, named as Koordinator names them
// (github.com/koordinator-sh/apis, extension package).
const (
	// LabelQuotaName on a job or unit names its ElasticQuota.
	LabelQuotaName = "quota.scheduling.koordinator.sh/name"
	// LabelQuotaNameAlibabaCloud is the older key for LabelQuotaName.
	LabelQuotaNameAlibabaCloud = "alibabacloud.com/quota-name"
	// LabelQuotaParent names the parent quota; empty means the root.
	LabelQuotaParent = "quota.scheduling.koordinator.sh/parent"
	// LabelQuotaIsParent marks a quota that has children.
	LabelQuotaIsParent = "quota.scheduling.koordinator.sh/is-parent"
	// LabelAllowForceUpdate "true" exempts a quota from the rule that its
	// siblings' mins and its own add up to no more than its parent's min.
	LabelAllowForceUpdate = "quota.scheduling.koordinator.sh/allow-force-update"
	// LabelAllowLentResource "false" keeps a quota's unused min from its siblings.
	LabelAllowLentResource = "quota.scheduling.koordinator.sh/allow-lent-resource"
	// AnnotationSharedWeight weighs a quota's part of idle capacity; default its max.
	AnnotationSharedWeight = "quota.scheduling.koordinator.sh/shared-weight"
	// AnnotationQuotaNamespaces is a JSON list of namespaces the quota serves.
	AnnotationQuotaNamespaces = "quota.scheduling.koordinator.sh/namespaces"

	// Koordinator's multiple quota trees (node pools, feature gate
	// MultiQuotaTree): koord-manager's ElasticQuotaProfile controller creates
	// each tree's root quota, and its webhook copies the root's tree id to
	// every descendant.

	// LabelQuotaTreeID names the quota tree a quota belongs to; empty: the
	// classic tree under koordinator-root-quota.
	LabelQuotaTreeID = "quota.scheduling.koordinator.sh/tree-id"
	// LabelQuotaIsRoot "true" marks the root quota of a tree.
	LabelQuotaIsRoot = "quota.scheduling.koordinator.sh/is-root"
	// LabelQuotaProfile on a tree's root names the ElasticQuotaProfile, in
	// the root's namespace, that made it.
	LabelQuotaProfile = "quota.scheduling.koordinator.sh/profile"
	// LabelQuotaIgnoreDefaultTree "true" on a tree's root keeps its total out
	// of the classic tree's accounting: the classic tree's capacity is then
	// not reduced by it.
	LabelQuotaIgnoreDefaultTree = "quota.scheduling.koordinator.sh/ignore-default-tree"
	// AnnotationTotalResource on a tree's root is the tree's capacity, a JSON
	// resource list (the pool's nodes' allocatable times the profile's ratio).
	AnnotationTotalResource = "quota.scheduling.koordinator.sh/total-resource"

	// koord-scheduler's figures of a quota, JSON resource lists it rewrites
	// (with status.used) about once a second whenever they moved.
	// koord-queue computes its own and reads none of them.

	// AnnotationRuntime is the quota's runtime share as last computed.
	AnnotationRuntime = "quota.scheduling.koordinator.sh/runtime"
	// AnnotationRequest is what the quota's pods request, capped by its max.
	AnnotationRequest = "quota.scheduling.koordinator.sh/request"
	// AnnotationChildRequest is what its children request.
	AnnotationChildRequest = "quota.scheduling.koordinator.sh/child-request"
	// AnnotationGuaranteed is the part of its min it is guaranteed.
	AnnotationGuaranteed = "quota.scheduling.koordinator.sh/guaranteed"
	// AnnotationAllocated is what its pods were allocated.
	AnnotationAllocated = "quota.scheduling.koordinator.sh/allocated"
	// AnnotationNonPreemptibleRequest is what its non-preemptible pods request.
	AnnotationNonPreemptibleRequest = "quota.scheduling.koordinator.sh/non-preemptible-request"
	// AnnotationNonPreemptibleUsed is what its non-preemptible pods use.
	AnnotationNonPreemptibleUsed = "quota.scheduling.koordinator.sh/non-preemptible-used"

	// RootQuotaName is the root of the tree; its capacity is the cluster's.
	RootQuotaName = "koordinator-root-quota"
	// SystemQuotaName is Koordinator's quota for system workloads.
	SystemQuotaName = "koordinator-system-quota"
	// DefaultQuotaName serves jobs that name no quota.
	DefaultQuotaName = "koordinator-default-quota"
)

// KoordSchedulerFigures are the annotations koord-scheduler rewrites.
var KoordSchedulerFigures = []string{
	AnnotationRuntime, AnnotationRequest, AnnotationChildRequest, AnnotationGuaranteed,
	AnnotationAllocated, AnnotationNonPreemptibleRequest, AnnotationNonPreemptibleUsed,
}

// QuotaNameFromLabels is the ElasticQuota an object's labels name:
// LabelQuotaName, else the older LabelQuotaNameAlibabaCloud; empty when
// neither is set.
func QuotaNameFromLabels(labels map[string]string) string {
	if q := labels[LabelQuotaName]; q != "" {
		return q
	}
	return labels[LabelQuotaNameAlibabaCloud]
}

// ServedNamespaces are the namespaces a quota's AnnotationQuotaNamespaces
// lists; nil when it has none.
func ServedNamespaces(annotations map[string]string) ([]string, error) {
	raw := annotations[AnnotationQuotaNamespaces]
	if raw == "" {
		return nil, nil
	}
	var namespaces []string
	if err := json.Unmarshal([]byte(raw), &namespaces); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationQuotaNamespaces, err)
	}
	return namespaces, nil
}
