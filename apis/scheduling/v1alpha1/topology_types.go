package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxTopologyLevels is how many levels one Topology may have (Kueue's
// v1alpha1 Topology allowed as many).
const MaxTopologyLevels = 8

// TopologySpec is the levels of a topology.
type TopologySpec struct {
	// levels are the node labels that group nodes into domains, from the
	// broadest (a block, say) to the narrowest (a host, often
	// kubernetes.io/hostname). A node lacking a level's label belongs to
	// no domain at that level or below it. Each label appears once; the
	// levels cannot be changed once the topology is created.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="levels are immutable: delete the topology and create it again"
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.nodeLabel == a.nodeLabel))",message="each nodeLabel must appear in one level only"
	// +kubebuilder:validation:XValidation:rule="!self.exists(l, l.nodeLabel == 'kubernetes.io/hostname') || self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'",message="kubernetes.io/hostname can only be the last (narrowest) level"
	Levels []TopologyLevel `json:"levels"`
}

// TopologyLevel is one level of a topology.
type TopologyLevel struct {
	// nodeLabel is the key of the node label whose values name the domains
	// of this level, such as cloud.provider.com/topology-rack.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	NodeLabel string `json:"nodeLabel"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Levels",type=string,JSONPath=`.spec.levels[*].nodeLabel`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Topology names the node labels that group a cluster's nodes into
// domains, level by level (block, rack, host), for pod sets that ask to
// run within one domain of a level. It has the shape of Kueue's Topology (kueue.x-k8s.io), so a
// Kueue manifest's spec works unchanged.
type Topology struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TopologySpec `json:"spec"`
}

// +kubebuilder:object:root=true

// TopologyList is a list of Topologies.
type TopologyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Topology `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Topology{}, &TopologyList{})
}
