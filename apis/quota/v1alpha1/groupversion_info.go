// Package v1alpha1 is Koordinator's ElasticQuotaProfile as koord-queue reads
// it, group quota.koordinator.sh: a node pool (a node selector) whose root
// quota heads one of Koordinator's multiple quota trees.
//
// +kubebuilder:object:generate=true
// +groupName=quota.koordinator.sh
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version Koordinator serves
	// ElasticQuotaProfile under.
	GroupVersion = schema.GroupVersion{Group: "quota.koordinator.sh", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&ElasticQuotaProfile{}, &ElasticQuotaProfileList{})
}
