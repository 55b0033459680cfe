package framework

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Integration is one framework the extensions can run: its kind, how its
// units are named, and how to make an empty job to read into.
type Integration struct {
	// Name is how --enabled-extensions names it, such as "job" or "tfjob".
	Name string
	// GVK is the kind of the framework's jobs.
	GVK schema.GroupVersionKind
	// UnitSuffix follows the job's name in its unit's name, such as "-tf-qu".
	UnitSuffix string
	// NewJob returns an empty job of the kind.
	NewJob func() GenericJob
	// AddToScheme registers the kind's Go types.
	AddToScheme func(*runtime.Scheme) error
	// PodSetOf names the pod set a pod of the job belongs to, as its
	// framework's controller labels it; nil: the one pod set "main".
	PodSetOf func(*corev1.Pod) string
	// PodOwners lists the controllers of a job's pods when the job does not
	// control them itself (a RayJob's are its RayCluster's and its
	// submitter Job's); nil: the job.
	PodOwners func(job client.Object) []PodOwner
	// Makes reports whether the framework's controller makes, for a job of
	// its kind, jobs of kind child that run within their maker's admission
	// (a RayJob's RayCluster and submitter Job; the resources of an Argo
	// Workflow's resource templates); nil: none. Only such a child is
	// covered by its owner's admission (Scope.Owners).
	Makes func(child schema.GroupKind) bool
}

// makes reports whether i's jobs make jobs of kind child.
func (i Integration) makes(child schema.GroupKind) bool {
	return i.Makes != nil && i.Makes(child)
}

// UnitName is the name of the unit of the job called jobName.
func (i Integration) UnitName(jobName string) string {
	return jobName + i.UnitSuffix
}
