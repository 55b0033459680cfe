// Package webhook declares the cluster-wide RBAC rules of the suspending
// webhook: writing its CA into its MutatingWebhookConfiguration. Its Secret
// is in webhooksecret, a namespaced Role.
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;list;watch;update;patch
package webhook
