// Package v1alpha1 is Koordinator's ElasticQuota as koord-queue reads it,
// group scheduling.sigs.k8s.io (the group Koordinator serves and users' manifests
// name; scheduler-plugins has since moved its own copy to another group), and the
// Koordinator label and annotation keys that shape the quota tree.
//
// +kubebuilder:object:generate=true
// +groupName=scheduling.sigs.k8s.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version Koordinator serves ElasticQuota under.
	GroupVersion = schema.GroupVersion{Group: "scheduling.sigs.k8s.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&ElasticQuota{}, &ElasticQuotaList{})
}
