package wrappers

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
)

// PodWrapper builds a pod, as a job's framework controller makes it.
type PodWrapper struct{ corev1.Pod }

// MakePod starts a pending pod, on no node, controlled by nothing, of one
// container requesting nothing.
func MakePod(name, namespace string) *PodWrapper {
	return &PodWrapper{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: PodTemplate().Spec}}
}

// ControlledBy makes owner, of kind gvk, the pod's controller.
func (w *PodWrapper) ControlledBy(owner client.Object, gvk schema.GroupVersionKind) *PodWrapper {
	w.OwnerReferences = append(w.OwnerReferences, *metav1.NewControllerRef(owner, gvk))
	return w
}

// Controller makes the job apiVersion/kind name the pod's controller.
func (w *PodWrapper) Controller(apiVersion, kind, name string) *PodWrapper {
	w.OwnerReferences = append(w.OwnerReferences, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name,
		UID: types.UID("uid-" + name), Controller: ptr.To(true)})
	return w
}

// OfUnit annotates the pod as made from a template the release of unit (in
// the pod's namespace) annotated, for its pod set podSet.
func (w *PodWrapper) OfUnit(unit, podSet string) *PodWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[schedulingv1alpha1.AnnotationRelatedQueueUnit] = w.Namespace + "/" + unit
	w.Annotations[schedulingv1alpha1.AnnotationRelatedPodSet] = podSet
	return w
}

// Quota labels the pod with a quota, as koord-scheduler charges it.
func (w *PodWrapper) Quota(name string) *PodWrapper {
	return w.Label(elasticquotav1alpha1.LabelQuotaName, name)
}

// Label sets a label.
func (w *PodWrapper) Label(k, v string) *PodWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// Requests sets what its container requests: name, quantity pairs.
func (w *PodWrapper) Requests(pairs ...string) *PodWrapper {
	w.Spec.Containers[0].Resources.Requests = qt.Res(pairs...)
	return w
}

// Node assigns the pod to a node, as the scheduler binds it.
func (w *PodWrapper) Node(name string) *PodWrapper { w.Spec.NodeName = name; return w }

// Phase sets status.phase.
func (w *PodWrapper) Phase(p corev1.PodPhase) *PodWrapper { w.Status.Phase = p; return w }

// Deleting sets a deletion timestamp, as a pod being deleted has.
func (w *PodWrapper) Deleting() *PodWrapper {
	now := metav1.Now()
	w.DeletionTimestamp = &now
	return w
}

// Obj returns the pod.
func (w *PodWrapper) Obj() *corev1.Pod { return &w.Pod }
