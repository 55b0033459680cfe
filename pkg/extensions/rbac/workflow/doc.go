// Package workflow declares the RBAC rules of the Argo Workflow extension.
//
// +kubebuilder:rbac:groups=argoproj.io,resources=workflows,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=argoproj.io,resources=workflows/finalizers,verbs=update
package workflow
