// Package common declares the RBAC rules every extension needs; pods are
// read to count a job's pods on nodes (admissions[].running), and patched
// to remove koord-queue's scheduling gate from those a unit's admission
// covers (the API server lets a patch only remove gates); TokenReviews
// and SubjectAccessReviews check who scrapes /metrics; ElasticQuotas and
// ElasticQuotaProfiles name the node pool whose affinity a job of a quota
// tree is released with, and those a job of the classic tree keeps off;
// LimitRanges give the containers of a unit's pods their defaults and
// RuntimeClasses its pods their overhead.
//
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=queueunits,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=queueunits/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.sigs.k8s.io,resources=elasticquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=quota.koordinator.sh,resources=elasticquotaprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=limitranges,verbs=get;list;watch
// +kubebuilder:rbac:groups=node.k8s.io,resources=runtimeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
package common
