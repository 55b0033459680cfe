package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ElasticQuotaSpec bounds what the quota's jobs may use.
type ElasticQuotaSpec struct {
	// min is guaranteed to the quota; unused, it may be lent to siblings.
	// +optional
	Min corev1.ResourceList `json:"min,omitempty"`
	// max is the most the quota may use, borrowing included. A resource that
	// max does not name is not limited by this quota.
	// +optional
	Max corev1.ResourceList `json:"max,omitempty"`
}

// ElasticQuotaStatus is what the quota's jobs use.
type ElasticQuotaStatus struct {
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
}

// ElasticQuota is a node of Koordinator's quota tree.
//
// Like Koordinator's own CRD, it has no status subresource: koord-scheduler
// writes status.used in the same merge patch as its annotations, which a
// status subresource would silently drop.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName={eq,eqs}
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/kubernetes-sigs/scheduler-plugins/pull/52"
// +kubebuilder:printcolumn:name="Used",type=string,JSONPath=`.status.used`
// +kubebuilder:printcolumn:name="Max",type=string,JSONPath=`.spec.max`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ElasticQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ElasticQuotaSpec   `json:"spec,omitempty"`
	Status ElasticQuotaStatus `json:"status,omitempty"`
}

// ElasticQuotaList is a list of ElasticQuotas.
//
// +kubebuilder:object:root=true
type ElasticQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ElasticQuota `json:"items"`
}
