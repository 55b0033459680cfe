// Package webhooksecret declares the webhook's access to its certificate
// Secret, the one the chart creates (--webhook-secret-name's default),
// granted by the chart as a Role in the release namespace only: it is read
// and watched by name (servingcert selects it so) and updated in place,
// never created.
//
// +kubebuilder:rbac:groups="",namespace=koord-queue,resources=secrets,resourceNames=koord-queue-controllers-webhook-cert,verbs=get;list;watch;update
package webhooksecret
