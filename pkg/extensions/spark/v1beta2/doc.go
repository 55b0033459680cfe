// Package v1beta2 is the part of the kubeflow spark-operator's API
// (sparkoperator.k8s.io/v1beta2 SparkApplication) that koord-queue reads and
// writes. The spark-operator's Go module is not served to this project, so
// these types are written here from the operator's public API
// (api/v1beta2/sparkapplication_types.go of github.com/kubeflow/spark-operator,
// with spec.suspend and the SUSPENDING, SUSPENDED and RESUMING states of its
// suspend/resume change, kubeflow/spark-operator#2387). Only the fields
// koord-queue uses are declared: the extension always writes a job back with
// a merge patch of what it changed, so the fields left out are kept.
//
// +kubebuilder:object:generate=true
// +groupName=sparkoperator.k8s.io
package v1beta2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of SparkApplication.
	GroupVersion = schema.GroupVersion{Group: "sparkoperator.k8s.io", Version: "v1beta2"}

	// SchemeBuilder registers this package's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&SparkApplication{}, &SparkApplicationList{})
}
