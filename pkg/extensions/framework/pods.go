package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/podledger"
	"github.com/koord-queue/koord-queue/pkg/watchcodec"
)

// A job's pods are counted from the pods themselves, not from its status:
// admissions[].running is the number of its pods with a node assigned, as in
// Koord-Queue, which no framework's status reports (a batch Job counts ready
// pods, KubeRay ready workers, Kubeflow active ones).

// Field indexes of the pod count.
const (
	// IndexPodOwner indexes pods by their controller (PodOwner.key).
	IndexPodOwner = "pod.controller"
	// IndexJobPodOwners indexes the jobs of an Integration with PodOwners
	// by the owners of their pods, to find a job from its pod.
	IndexJobPodOwners = "job.podOwners"
)

// PodOwner is the controller of some of a job's pods: the job itself, or
// what it made to run them (a RayJob's RayCluster and submitter Job).
type PodOwner struct {
	Kind schema.GroupKind
	Name string
	// UID, when known, is the owner's: pods of an earlier owner of the same
	// name, still being deleted, are not counted.
	UID types.UID
}

// key is the owner's value in IndexPodOwner and IndexJobPodOwners, such as
// "Job.batch/train"; the cache keeps each namespace's apart.
func (o PodOwner) key() string { return o.Kind.String() + "/" + o.Name }

// owns reports whether o controls pod.
func (o PodOwner) owns(pod *corev1.Pod) bool {
	c, ok := controllerOf(pod)
	return ok && c.key() == o.key() && (o.UID == "" || c.UID == o.UID)
}

// controllerOf is obj's controller, from its controller reference.
func controllerOf(obj metav1.Object) (PodOwner, bool) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return PodOwner{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return PodOwner{}, false
	}
	return PodOwner{Kind: schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, Name: ref.Name, UID: ref.UID}, true
}

// PodOwnerIndex is the index function of IndexPodOwner.
func PodOwnerIndex(o client.Object) []string {
	if c, ok := controllerOf(o); ok {
		return []string{c.key()}
	}
	return nil
}

// JobPodOwnersIndex is the index function of IndexJobPodOwners for the
// integration's jobs.
func (i Integration) JobPodOwnersIndex(o client.Object) []string {
	var keys []string
	for _, owner := range i.podOwners(o) {
		keys = append(keys, owner.key())
	}
	return keys
}

// podOwners are the controllers of the pods of job obj: PodOwners, or by
// default the job itself.
func (i Integration) podOwners(obj client.Object) []PodOwner {
	if i.PodOwners != nil {
		return i.PodOwners(obj)
	}
	return []PodOwner{{Kind: i.GVK.GroupKind(), Name: obj.GetName(), UID: obj.GetUID()}}
}

// podSetOf names the pod set pod belongs to: PodSetOf, or by default the
// one pod set "main".
func (i Integration) podSetOf(pod *corev1.Pod) string {
	if i.PodSetOf != nil {
		return i.PodSetOf(pod)
	}
	return schedulingv1alpha1.DefaultPodSetName
}

// waitingForNode reports whether pod is one of its job's pods that no node
// took yet: neither finished nor being deleted.
func waitingForNode(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// countPods counts, by pod set, the pods that hold a node (Scheduled) and
// those that wait for one (Waiting).
func countPods(integ Integration, pods []corev1.Pod) map[string]PodCount {
	out := map[string]PodCount{}
	for i := range pods {
		p := &pods[i]
		switch {
		case podledger.Scheduled(p):
			c := out[integ.podSetOf(p)]
			c.Scheduled++
			out[integ.podSetOf(p)] = c
		case waitingForNode(p):
			c := out[integ.podSetOf(p)]
			c.Waiting++
			out[integ.podSetOf(p)] = c
		}
	}
	return out
}

// podsOf counts, by pod set, the pods of job obj that hold a node or wait
// for one, as the cache has them (IndexPodOwner).
func (r *JobReconciler) podsOf(ctx context.Context, obj client.Object) (map[string]PodCount, error) {
	pods, err := listJobPods(ctx, r.client, r.integ, obj, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, err
	}
	return countPods(r.integ, pods), nil
}

// listJobPods lists the pods of integ's job obj as c has them: those its
// pod owners control (IndexPodOwner). With client.UnsafeDisableDeepCopy
// among opts the pods share their fields with the cache's, to be read
// only: every reconcile counts its job's pods, and copying each for that
// was a tenth of what the extensions allocate.
func listJobPods(ctx context.Context, c client.Reader, integ Integration, obj client.Object, opts ...client.ListOption) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	for _, owner := range integ.podOwners(obj) {
		var list corev1.PodList
		listOpts := append([]client.ListOption{client.InNamespace(obj.GetNamespace()), client.MatchingFields{IndexPodOwner: owner.key()}}, opts...)
		if err := c.List(ctx, &list, listOpts...); err != nil {
			return nil, fmt.Errorf("listing the pods of %s %s/%s: %w", owner.Kind, obj.GetNamespace(), owner.Name, err)
		}
		for _, p := range list.Items {
			if owner.owns(&p) {
				pods = append(pods, p)
			}
		}
	}
	return pods, nil
}

// jobsOfPod names the jobs pod belongs to: its controller when it is of
// the integration's kind, else, for an integration with PodOwners, the jobs
// that list its controller (IndexJobPodOwners).
func (r *JobReconciler) jobsOfPod(ctx context.Context, pod client.Object) []reconcile.Request {
	owner, ok := controllerOf(pod)
	if !ok {
		return nil
	}
	if r.integ.PodOwners == nil {
		if owner.Kind != r.integ.GVK.GroupKind() {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.GetNamespace(), Name: owner.Name}}}
	}
	jobs, err := r.jobsIndexed(ctx, pod.GetNamespace(), IndexJobPodOwners, owner.key())
	if err != nil {
		// The cache does not fail a list it has an index for; a pod
		// missed here is counted at its job's next event.
		ctrl.LoggerFrom(ctx).Error(err, "Cannot find the jobs of a pod", "pod", klog.KObj(pod), "kind", r.integ.GVK.Kind)
	}
	return jobs
}

// jobsIndexed names the integration's jobs in namespace ns that index
// holds under key.
func (r *JobReconciler) jobsIndexed(ctx context.Context, ns, index, key string) ([]reconcile.Request, error) {
	return r.jobsIn(ctx, ns, client.MatchingFields{index: key})
}

// jobsIn names the integration's jobs in namespace ns that opts select.
func (r *JobReconciler) jobsIn(ctx context.Context, ns string, opts ...client.ListOption) ([]reconcile.Request, error) {
	list, err := r.newJobList()
	if err == nil {
		// Only the names are read: the cache's objects need no copy.
		opts = append(opts, client.InNamespace(ns), client.UnsafeDisableDeepCopy)
		err = r.client.List(ctx, list, opts...)
	}
	if err != nil {
		return nil, err
	}
	var out []reconcile.Request
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		if job, ok := o.(client.Object); ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(job)})
		}
		return nil
	})
	return out, nil
}

// newJobList is an empty list of the integration's kind.
func (r *JobReconciler) newJobList() (client.ObjectList, error) {
	return newJobList(r.client.Scheme(), r.integ)
}

// newJobList is an empty list of integ's kind, made from scheme.
func newJobList(scheme *runtime.Scheme, integ Integration) (client.ObjectList, error) {
	gvk := integ.GVK.GroupVersion().WithKind(integ.GVK.Kind + "List")
	o, err := scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("making a %s: %w", gvk.Kind, err)
	}
	list, ok := o.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", gvk.Kind)
	}
	return list, nil
}

// podCountChanged lets through the pod events that can change a job's
// count: a pod that comes or goes holding a node, or starts or stops
// holding one.
var podCountChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return holdsNode(e.Object) },
	UpdateFunc:  func(e event.UpdateEvent) bool { return holdsNode(e.ObjectOld) != holdsNode(e.ObjectNew) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return holdsNode(e.Object) },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func holdsNode(o client.Object) bool {
	pod, ok := o.(*corev1.Pod)
	return ok && podledger.Scheduled(pod)
}

// CacheByObject is how the manager's cache should keep what the extensions
// watch (cache.Options ByObject): every pod of the cluster stripped to what
// counting reads (identity, labels, controller, deletion, node, phase:
// StripPod), and QueueUnits with only the labels, annotations and pod
// template fields the extensions read (StripUnit).
func CacheByObject() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:                   {Transform: StripPod},
		&schedulingv1alpha1.QueueUnit{}: {Transform: StripUnit},
	}
}

// CacheOptions is how koord-queue-controllers' manager, connecting with
// config, caches what it watches: managed fields dropped from every object
// (nothing reads them, and the API server keeps them on writes that leave
// them out), pods and QueueUnits as CacheByObject says, and QueueUnits,
// which as a custom resource come as JSON, listed and watched through
// watchcodec, which reads each event's bytes in fewer passes than
// client-go's JSON stack, to the same objects.
func CacheOptions(config *rest.Config) (cache.Options, error) {
	scheme := runtime.NewScheme()
	if err := schedulingv1alpha1.AddToScheme(scheme); err != nil {
		return cache.Options{}, err
	}
	newInformer, err := watchcodec.NewInformer(config, scheme, watchcodec.Resource{
		GroupVersion: schedulingv1alpha1.GroupVersion,
		Resource:     "queueunits",
		NewList:      func() runtime.Object { return &schedulingv1alpha1.QueueUnitList{} },
	}, &schedulingv1alpha1.QueueUnit{}, nil)
	if err != nil {
		return cache.Options{}, err
	}
	return cache.Options{
		NewInformer:      newInformer,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         CacheByObject(),
	}, nil
}

// StripPod keeps of a pod what counting it reads: its name, namespace, UID,
// resourceVersion, labels, owner references, deletion timestamp, node and
// phase; and, of a pod held at koord-queue's scheduling gate, what opening
// the gate reads (openGates): its gates, its koord-queue/related-queueunit
// annotation and what its containers, init containers and overhead ask
// for. Anything else passes unchanged.
func StripPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		TypeMeta: p.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              p.Name,
			Namespace:         p.Namespace,
			UID:               p.UID,
			ResourceVersion:   p.ResourceVersion,
			Labels:            p.Labels,
			OwnerReferences:   p.OwnerReferences,
			DeletionTimestamp: p.DeletionTimestamp,
		},
		Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}
	if hasAdmissionGate(p) {
		if unit, ok := p.Annotations[schedulingv1alpha1.AnnotationRelatedQueueUnit]; ok {
			out.Annotations = map[string]string{schedulingv1alpha1.AnnotationRelatedQueueUnit: unit}
		}
		out.Spec = requestsSpec(&p.Spec)
		out.Spec.NodeName, out.Spec.SchedulingGates = p.Spec.NodeName, p.Spec.SchedulingGates
	}
	return out, nil
}

// requestsSpec keeps of spec what resources.PodRequests reads.
func requestsSpec(spec *corev1.PodSpec) corev1.PodSpec {
	return corev1.PodSpec{
		Containers:     requestsOf(spec.Containers),
		InitContainers: requestsOf(spec.InitContainers),
		Overhead:       spec.Overhead,
		Resources:      spec.Resources,
	}
}

// requestsOf keeps of containers what resources.PodRequests reads.
func requestsOf(containers []corev1.Container) []corev1.Container {
	if len(containers) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(containers))
	for i, c := range containers {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return out
}
