// Package v1alpha1 holds koord-queue's own API, group scheduling.x-k8s.io:
// Queue, one per ElasticQuota; QueueUnit, one per job waiting for or
// holding quota; and Topology, the node labels that group nodes into
// domains (block, rack, host), cluster-scoped. Field names and JSON tags match Koordinator's Koord-Queue v1.8
// so existing manifests keep working.
//
// +kubebuilder:object:generate=true
// +groupName=scheduling.x-k8s.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of Queue, QueueUnit and Topology.
	GroupVersion = schema.GroupVersion{Group: "scheduling.x-k8s.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&Queue{}, &QueueList{}, &QueueUnit{}, &QueueUnitList{})
}
