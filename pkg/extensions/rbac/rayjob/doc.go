// Package rayjob declares the RBAC rules of the rayjob extension.
//
// +kubebuilder:rbac:groups=ray.io,resources=rayjobs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayjobs/finalizers,verbs=update
//
// The RayCluster and the submitter Job KubeRay makes for a RayJob count in
// its admission: the extension reads them.
//
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch
package rayjob
