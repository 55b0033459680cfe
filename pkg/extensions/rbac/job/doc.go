// Package job declares the RBAC rules of the batch Job extension.
//
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=batch,resources=jobs/status,verbs=get;patch
// +kubebuilder:rbac:groups=batch,resources=jobs/finalizers,verbs=update
package job
