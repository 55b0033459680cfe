package extensionstest

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// JobWrapper builds a batch Job.
type JobWrapper struct{ batchv1.Job }

// MakeJob starts a suspended Job of one pod with no requests.
func MakeJob(name, namespace string) *JobWrapper {
	return &JobWrapper{batchv1.Job{
		ObjectMeta: meta(name, namespace),
		Spec: batchv1.JobSpec{
			Suspend:  ptr.To(true),
			Template: wrappers.PodTemplate(),
		},
	}}
}

// Quota labels the Job with a quota.
func (w *JobWrapper) Quota(q string) *JobWrapper { quotaLabel(&w.ObjectMeta, q); return w }

// Label sets a label.
func (w *JobWrapper) Label(k, v string) *JobWrapper { setLabel(&w.ObjectMeta, k, v); return w }

// Annotation sets an annotation.
func (w *JobWrapper) Annotation(k, v string) *JobWrapper {
	setAnnotation(&w.ObjectMeta, k, v)
	return w
}

// OwnedBy adds an owner reference, such as a RayJob's to its submitter.
func (w *JobWrapper) OwnedBy(owner metav1.OwnerReference) *JobWrapper {
	w.OwnerReferences = append(w.OwnerReferences, owner)
	return w
}

// Suspend sets spec.suspend.
func (w *JobWrapper) Suspend(s bool) *JobWrapper { w.Spec.Suspend = ptr.To(s); return w }

// Parallelism sets spec.parallelism.
func (w *JobWrapper) Parallelism(n int32) *JobWrapper { w.Spec.Parallelism = ptr.To(n); return w }

// Completions sets spec.completions.
func (w *JobWrapper) Completions(n int32) *JobWrapper { w.Spec.Completions = ptr.To(n); return w }

// Indexed sets spec.completionMode to Indexed.
func (w *JobWrapper) Indexed() *JobWrapper {
	w.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	return w
}

// Request sets the container's requests from name, quantity pairs.
func (w *JobWrapper) Request(pairs ...string) *JobWrapper {
	w.Spec.Template.Spec.Containers[0].Resources.Requests = qt.Res(pairs...)
	return w
}

// PriorityClass sets the pod template's priority class.
func (w *JobWrapper) PriorityClass(name string) *JobWrapper {
	w.Spec.Template.Spec.PriorityClassName = name
	return w
}

// NodeSelector sets a node selector on the pod template.
func (w *JobWrapper) NodeSelector(k, v string) *JobWrapper {
	if w.Spec.Template.Spec.NodeSelector == nil {
		w.Spec.Template.Spec.NodeSelector = map[string]string{}
	}
	w.Spec.Template.Spec.NodeSelector[k] = v
	return w
}

// Active sets status.active and status.ready, as the Job controller would.
func (w *JobWrapper) Active(active, ready int32) *JobWrapper {
	w.Status.Active, w.Status.Ready = active, ptr.To(ready)
	return w
}

// Succeeded sets status.succeeded.
func (w *JobWrapper) Succeeded(n int32) *JobWrapper { w.Status.Succeeded = n; return w }

// Condition adds a true condition to the status.
func (w *JobWrapper) Condition(t batchv1.JobConditionType, message string) *JobWrapper {
	w.Status.Conditions = append(w.Status.Conditions, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Message: message})
	return w
}

// Obj returns the Job.
func (w *JobWrapper) Obj() *batchv1.Job { return &w.Job }
