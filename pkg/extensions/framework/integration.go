package framework

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
}

// UnitName is the name of the unit of the job called jobName.
func (i Integration) UnitName(jobName string) string {
	return jobName + i.UnitSuffix
}
