// Package apiservice declares the certificate rotator's access to the
// APIService it writes the CA into: it watches APIServices, and updates
// only koord-queue's.
//
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,resourceNames=v1alpha1.visibility.koord-queue.x-k8s.io,verbs=update;patch
package apiservice
