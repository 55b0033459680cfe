package extensionstest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// PodWrapper builds a pod of a job, as the job's framework controller
// makes it.
type PodWrapper struct{ corev1.Pod }

// MakePod starts a pending pod, on no node, controlled by nothing.
func MakePod(name, namespace string) *PodWrapper {
	return &PodWrapper{corev1.Pod{ObjectMeta: meta(name, namespace), Spec: wrappers.PodTemplate().Spec}}
}

// ControlledBy makes owner, of kind gvk, the pod's controller.
func (w *PodWrapper) ControlledBy(owner client.Object, gvk schema.GroupVersionKind) *PodWrapper {
	w.OwnerReferences = append(w.OwnerReferences, *metav1.NewControllerRef(owner, gvk))
	return w
}

// Label sets a label.
func (w *PodWrapper) Label(k, v string) *PodWrapper { setLabel(&w.ObjectMeta, k, v); return w }

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
