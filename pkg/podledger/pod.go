package podledger

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// FromPod is what the ledger keeps of p. A pod belongs to the unit its
// koord-queue/related-queueunit annotation names in the pod's own
// namespace (a name in another namespace is no claim: a tenant writes its
// pods' annotations), else to its controller, else to nothing but its
// namespace and quota label.
func FromPod(p *corev1.Pod) Pod {
	out := Pod{
		Namespace: p.Namespace,
		Name:      p.Name,
		Node:      p.Spec.NodeName,
		Gated:     len(p.Spec.SchedulingGates) > 0,
		Done:      p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed,
		Scheduled: Scheduled(p),
		Requests:  resources.PodRequests(&p.Spec),
		Quota:     elasticquotav1alpha1.QuotaNameFromLabels(p.Labels),
	}
	out.Group.Namespace = p.Namespace
	unit, named := NamedUnit(p)
	if named {
		out.Group.Unit = unit
		out.PodSet = p.Annotations[schedulingv1alpha1.AnnotationRelatedPodSet]
	}
	for i := range p.OwnerReferences {
		if ref := &p.OwnerReferences[i]; ref.Controller != nil && *ref.Controller {
			out.Controller = ControllerKey(ref.APIVersion, ref.Kind, ref.Name)
			if !named {
				out.Group.OwnerKind, out.Group.OwnerName = OwnerKind(ref.APIVersion, ref.Kind), ref.Name
			}
			break
		}
	}
	return out
}

// ControllerKey names a pod's controller as Pod.Controller does:
// "Job.batch/train".
func ControllerKey(apiVersion, kind, name string) string {
	return OwnerKind(apiVersion, kind) + "/" + name
}

// Scheduled reports whether p counts as running for its unit, as
// Koord-Queue counts admissions[].running and wait-for-pods-running waits
// for: it has a node assigned, has not failed and is not being deleted. A
// pod that succeeded still counts: it ran its course, and a Job left with
// fewer completions than pods, or an Argo Workflow between two steps, is
// not to be taken for a job whose pods cannot be scheduled.
func Scheduled(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed
}

// NamedUnit is the QueueUnit p's koord-queue/related-queueunit annotation
// names in p's own namespace; ok is false when it names none there.
func NamedUnit(p *corev1.Pod) (name string, ok bool) {
	ns, name, ok := strings.Cut(p.Annotations[schedulingv1alpha1.AnnotationRelatedQueueUnit], "/")
	return name, ok && ns == p.Namespace && name != ""
}

// OwnerKind is how a Group names the kind of an owner: "Job.batch",
// "PyTorchJob.kubeflow.org", "Pod" (the core group).
func OwnerKind(apiVersion, kind string) string {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return schema.GroupKind{Group: gv.Group, Kind: kind}.String()
}
