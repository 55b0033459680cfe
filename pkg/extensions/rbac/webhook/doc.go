// Package webhook declares the cluster-wide RBAC rules of the suspending
// webhook: writing its CA into its MutatingWebhookConfiguration. Its Secret
// is in webhooksecret, a namespaced Role.
//
// It may write only its own configuration (the chart's name for it, the
// default of --webhook-config-name): whoever gets hold of its token must not
// be able to rewrite every admission webhook of the cluster.
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,resourceNames=koord-queue-controllers,verbs=update;patch
package webhook
