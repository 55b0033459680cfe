package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ElasticQuotaProfileSpec names a node pool and the root quota of its tree.
type ElasticQuotaProfileSpec struct {
	// quotaName is the tree's root ElasticQuota, in the profile's namespace.
	QuotaName string `json:"quotaName"`
	// quotaLabels are put on the root quota.
	// +optional
	QuotaLabels map[string]string `json:"quotaLabels,omitempty"`
	// resourceRatio, a number in (0, 1] such as "0.9", is the share of the
	// pool's allocatable resources the tree offers; anything else counts as 1.
	// +optional
	ResourceRatio *string `json:"resourceRatio,omitempty"`
	// nodeSelector chooses the pool's nodes.
	NodeSelector *metav1.LabelSelector `json:"nodeSelector"`
}

// ElasticQuotaProfileStatus is empty, as in Koordinator.
type ElasticQuotaProfileStatus struct{}

// ElasticQuotaProfile is a node pool with a quota tree of its own
// (Koordinator's MultiQuotaTree).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=eqp
type ElasticQuotaProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ElasticQuotaProfileSpec   `json:"spec,omitempty"`
	Status ElasticQuotaProfileStatus `json:"status,omitempty"`
}

// ElasticQuotaProfileList is a list of ElasticQuotaProfiles.
//
// +kubebuilder:object:root=true
type ElasticQuotaProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ElasticQuotaProfile `json:"items"`
}
