package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A pod naming a RuntimeClass is given, when it is created, the class's
// pod overhead (the API server's RuntimeClass admission plugin), which the
// scheduler and koord-scheduler charge beside its containers' requests. A
// unit's pod sets ask for it too, as Kueue's workloads do; without it an
// honest job's pods would hold more than its unit was admitted with.

// podCreation is what the API server's admission plugins give a pod of a
// job when it is created: its containers' LimitRange defaults and, by the
// name of its RuntimeClass, its overhead.
type podCreation struct {
	containers containerDefaults
	overheads  map[string]corev1.ResourceList
}

// apply gives spec what its pod's creation gives it. A template that sets
// its own overhead keeps it: the API server refuses the pod if it differs
// from its class's.
func (c podCreation) apply(spec *corev1.PodSpec) {
	c.containers.apply(spec)
	if name := spec.RuntimeClassName; name != nil && spec.Overhead == nil {
		if o, ok := c.overheads[*name]; ok {
			spec.Overhead = o.DeepCopy()
		}
	}
}

// creationOf is what the creation of the pods of sets, in namespace, gives
// them, read through c (the cache).
func creationOf(ctx context.Context, c client.Reader, namespace string, sets []PodSet) (podCreation, error) {
	var made podCreation
	var err error
	if made.containers, err = namespaceDefaults(ctx, c, namespace); err != nil {
		return podCreation{}, err
	}
	if made.overheads, err = runtimeOverheads(ctx, c, sets); err != nil {
		return podCreation{}, err
	}
	return made, nil
}

// runtimeOverheads are the pod overheads of the RuntimeClasses the
// templates of sets name, read through c. A class that does not exist
// gives nothing: the API server refuses to create the pods naming it.
func runtimeOverheads(ctx context.Context, c client.Reader, sets []PodSet) (map[string]corev1.ResourceList, error) {
	var out map[string]corev1.ResourceList
	for _, s := range sets {
		if s.Template == nil || s.Template.Spec.RuntimeClassName == nil || s.Template.Spec.Overhead != nil {
			continue
		}
		name := *s.Template.Spec.RuntimeClassName
		if _, seen := out[name]; seen {
			continue
		}
		var rc nodev1.RuntimeClass
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &rc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading RuntimeClass %s: %w", name, err)
		}
		if rc.Overhead == nil || len(rc.Overhead.PodFixed) == 0 {
			continue
		}
		if out == nil {
			out = map[string]corev1.ResourceList{}
		}
		out[name] = rc.Overhead.PodFixed
	}
	return out, nil
}
