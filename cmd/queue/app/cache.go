package app

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/topology"
	"github.com/koord-queue/koord-queue/pkg/watchcodec"
)

// CacheOptions is how the koord-queue binary's manager, connecting with
// config, caches objects, for every manager that runs Setup as the binary
// does: Queues of queueNamespace only (empty:
// schedulingv1alpha1.QueueNamespace); QueueUnits of every namespace, read
// through watchcodec.
func CacheOptions(queueNamespace string, config *rest.Config) (cache.Options, error) {
	if queueNamespace == "" {
		queueNamespace = schedulingv1alpha1.QueueNamespace
	}
	newInformer, err := unitsThroughWatchCodec(config)
	if err != nil {
		return cache.Options{}, err
	}
	return cache.Options{
		NewInformer: newInformer,
		// Nothing here reads managedFields, and the API server keeps them
		// on writes that leave them out: with 15,000 QueueUnits cached,
		// dropping them lowers peak RSS by about 13%.
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&schedulingv1alpha1.Queue{}: {Namespaces: map[string]cache.Config{queueNamespace: {}}},
			// No namespace and no selector: unitsThroughWatchCodec lists
			// and watches them all.
			&schedulingv1alpha1.QueueUnit{}: {Transform: UnitTransform(admission.NewUnitCompactor())},
		},
	}, nil
}

// unitsThroughWatchCodec is the cache's NewInformer: the QueueUnits'
// informer lists and watches through watchcodec, which at a start of
// 50,000 units spends about half the CPU client-go's decoding does, and
// indexes nothing; every other informer is controller-runtime's.
func unitsThroughWatchCodec(config *rest.Config) (watchcodec.NewInformerFunc, error) {
	scheme := runtime.NewScheme()
	if err := schedulingv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return watchcodec.NewInformer(config, scheme, watchcodec.Resource{
		GroupVersion: schedulingv1alpha1.GroupVersion,
		Resource:     "queueunits",
		NewList:      func() runtime.Object { return &schedulingv1alpha1.QueueUnitList{} },
	}, &schedulingv1alpha1.QueueUnit{}, func(toolscache.Indexers) toolscache.Indexers {
		// Nothing here lists QueueUnits by namespace, and
		// controller-runtime's namespace index would keep every unit's
		// key once more, in a set by namespace: 3 MB at 50,000 units.
		// Without it, a List of units in one namespace fails (the cache
		// has no index "namespace"); one of all namespaces works.
		return toolscache.Indexers{}
	})
}

// StripUnit is the cache's transform of a QueueUnit: it keeps what
// koord-queue reads. Of each pod set's template that is only what the pod's
// request is made of (resources.PodRequests reads each container's and init
// container's resources, an init container's restart policy, the pod's
// resources and overhead), which each admission records per pod set; the
// rest of the template (images, commands, environment, volumes, scheduling
// constraints, its metadata but the topology level it asks for:
// topology.AskAnnotations, and for a pod set that asks one the nodes its
// pods can use: keepNodeSelection) and the managed fields are dropped, the
// unit's labels and annotations are cut to those koord-queue reads
// (admission.CutMetadata: a tenant writes them), and a finished unit's
// status is cut to what admission.FinishedStatus keeps. Everything else is
// kept as it is. Anything but a QueueUnit passes unchanged.
//
// koord-queue writes a QueueUnit only through patch.Patch: a merge patch
// of what its change made different, never the object whole, so what is
// dropped here is never written back (the status subresource would ignore
// the templates anyway, the one write of the spec sets spec.queue alone,
// and no status of a finished unit is written).
func StripUnit(obj any) (any, error) {
	u, ok := obj.(*schedulingv1alpha1.QueueUnit)
	if !ok {
		return obj, nil
	}
	u.ManagedFields = nil
	// A streamed list transforms each unit twice, and after the first pass
	// its labels, annotations and pod sets may be other units' too (the
	// compactor shares them): nothing shared is written, so the second
	// pass reads them and writes the unit's own fields alone.
	admission.CutMetadata(u)
	// Kept even for a unit charged what it states: each admission records
	// what its pod set holds (status.admissions[].resources).
	if len(u.Spec.PodSets) > 0 {
		sets := make([]schedulingv1alpha1.PodSet, len(u.Spec.PodSets))
		for i, set := range u.Spec.PodSets {
			sets[i] = set
			sets[i].Template = requestsOnly(&set.Template.Spec)
			// The topology level its pods ask for, if any, is read too, and
			// then the nodes they can use (topology.SelectionOf).
			if ask := topology.AskAnnotations(set.Template.Annotations); ask != nil {
				sets[i].Template.Annotations = ask
				keepNodeSelection(&sets[i].Template.Spec, &set.Template.Spec)
			}
		}
		u.Spec.PodSets = sets
	}
	admission.CutFinished(u)
	return u, nil
}

// UnitTransform is the cache's transform of a QueueUnit: StripUnit, then
// compactor's Compact, which keeps what is left in less memory (lists shared
// between units and within one, repeated strings once) and reading the same.
func UnitTransform(compactor *admission.UnitCompactor) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		obj, err := StripUnit(obj)
		if u, ok := obj.(*schedulingv1alpha1.QueueUnit); ok && err == nil {
			compactor.Compact(u)
		}
		return obj, err
	}
}

// keepNodeSelection copies into to what topology.SelectionOf reads of
// from: its nodeSelector, required node affinity and tolerations.
func keepNodeSelection(to, from *corev1.PodSpec) {
	to.NodeSelector, to.Tolerations = from.NodeSelector, from.Tolerations
	if a := from.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		to.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution}}
	}
}

// requestsOnly is a template that asks for what spec asks for, and says
// nothing else: one container asking for the pod's request (without its
// overhead, which is kept beside it). A template with a negative amount
// keeps every container's resources, so that the unit is still refused for
// it (queueunit.CheckAmounts): summed, a negative amount could hide in a
// total that is not.
func requestsOnly(spec *corev1.PodSpec) corev1.PodTemplateSpec {
	if resources.CheckPodSpec(spec) != nil {
		return everyContainersResources(spec)
	}
	withoutOverhead := corev1.PodSpec{Containers: spec.Containers, InitContainers: spec.InitContainers, Resources: spec.Resources}
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: resources.PodRequests(&withoutOverhead)}}},
		Overhead:   spec.Overhead,
	}}
}

// everyContainersResources is spec with nothing but what its pod's request
// is made of: each container's and init container's resources, an init
// container's restart policy, the pod's resources and overhead.
func everyContainersResources(spec *corev1.PodSpec) corev1.PodTemplateSpec {
	out := corev1.PodSpec{Resources: spec.Resources, Overhead: spec.Overhead}
	if len(spec.Containers) > 0 {
		out.Containers = make([]corev1.Container, len(spec.Containers))
		for i, c := range spec.Containers {
			out.Containers[i] = corev1.Container{Name: c.Name, Resources: c.Resources}
		}
	}
	if len(spec.InitContainers) > 0 {
		out.InitContainers = make([]corev1.Container, len(spec.InitContainers))
		for i, c := range spec.InitContainers {
			out.InitContainers[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
		}
	}
	return corev1.PodTemplateSpec{Spec: out}
}
