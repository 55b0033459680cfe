// Package certsecret declares the aggregated API's access to its
// certificate Secret, granted by the chart as a Role in the release
// namespace only.
//
// +kubebuilder:rbac:groups="",namespace=koord-queue,resources=secrets,verbs=get;list;watch;update;patch
package certsecret
