package extensionstest

import (
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TrainingJobWrapper builds a Kubeflow TFJob, PyTorchJob or MPIJob.
type TrainingJobWrapper[T client.Object] struct {
	obj       T
	meta      *metav1.ObjectMeta
	replicas  *map[kftraining.ReplicaType]*kftraining.ReplicaSpec
	runPolicy *kftraining.RunPolicy
	status    *kftraining.JobStatus
}

// MakeTFJob starts a TFJob suspended by spec.runPolicy.suspend, with no replicas.
func MakeTFJob(name, namespace string) *TrainingJobWrapper[*kftraining.TFJob] {
	j := &kftraining.TFJob{ObjectMeta: meta(name, namespace)}
	j.Spec.TFReplicaSpecs = map[kftraining.ReplicaType]*kftraining.ReplicaSpec{}
	return newTrainingJob(j, &j.ObjectMeta, &j.Spec.TFReplicaSpecs, &j.Spec.RunPolicy, &j.Status)
}

// MakePyTorchJob starts a suspended PyTorchJob with no replicas.
func MakePyTorchJob(name, namespace string) *TrainingJobWrapper[*kftraining.PyTorchJob] {
	j := &kftraining.PyTorchJob{ObjectMeta: meta(name, namespace)}
	j.Spec.PyTorchReplicaSpecs = map[kftraining.ReplicaType]*kftraining.ReplicaSpec{}
	return newTrainingJob(j, &j.ObjectMeta, &j.Spec.PyTorchReplicaSpecs, &j.Spec.RunPolicy, &j.Status)
}

// MakeMPIJob starts a suspended MPIJob with no replicas.
func MakeMPIJob(name, namespace string) *TrainingJobWrapper[*kftraining.MPIJob] {
	j := &kftraining.MPIJob{ObjectMeta: meta(name, namespace)}
	j.Spec.MPIReplicaSpecs = map[kftraining.ReplicaType]*kftraining.ReplicaSpec{}
	return newTrainingJob(j, &j.ObjectMeta, &j.Spec.MPIReplicaSpecs, &j.Spec.RunPolicy, &j.Status)
}

func newTrainingJob[T client.Object](obj T, m *metav1.ObjectMeta, replicas *map[kftraining.ReplicaType]*kftraining.ReplicaSpec, rp *kftraining.RunPolicy, st *kftraining.JobStatus) *TrainingJobWrapper[T] {
	rp.Suspend = ptr.To(true)
	return &TrainingJobWrapper[T]{obj: obj, meta: m, replicas: replicas, runPolicy: rp, status: st}
}

// Quota labels the job with a quota.
func (w *TrainingJobWrapper[T]) Quota(q string) *TrainingJobWrapper[T] {
	quotaLabel(w.meta, q)
	return w
}

// Suspend sets spec.runPolicy.suspend.
func (w *TrainingJobWrapper[T]) Suspend(s bool) *TrainingJobWrapper[T] {
	w.runPolicy.Suspend = ptr.To(s)
	return w
}

// SuspendAnnotation suspends the job by the scheduling.x-k8s.io/suspend
// annotation instead of spec.runPolicy.suspend.
func (w *TrainingJobWrapper[T]) SuspendAnnotation() *TrainingJobWrapper[T] {
	w.runPolicy.Suspend = nil
	setAnnotation(w.meta, schedulingv1alpha1.AnnotationSuspend, "true")
	return w
}

// Replica adds a replica type of n pods requesting name, quantity pairs.
func (w *TrainingJobWrapper[T]) Replica(rt kftraining.ReplicaType, n int32, requests ...string) *TrainingJobWrapper[T] {
	(*w.replicas)[rt] = &kftraining.ReplicaSpec{Replicas: ptr.To(n), Template: wrappers.PodTemplate(requests...)}
	return w
}

// Container names the container of every replica type added so far, as
// the training operator wants it ("tensorflow", "pytorch", "mpi").
func (w *TrainingJobWrapper[T]) Container(name string) *TrainingJobWrapper[T] {
	for _, spec := range *w.replicas {
		spec.Template.Spec.Containers[0].Name = name
	}
	return w
}

// PodAnnotation annotates the pod template of every replica type added so far.
func (w *TrainingJobWrapper[T]) PodAnnotation(key, value string) *TrainingJobWrapper[T] {
	for _, spec := range *w.replicas {
		setAnnotation(&spec.Template.ObjectMeta, key, value)
	}
	return w
}

// PriorityClass sets the gang scheduling policy's priority class.
func (w *TrainingJobWrapper[T]) PriorityClass(name string) *TrainingJobWrapper[T] {
	w.runPolicy.SchedulingPolicy = &kftraining.SchedulingPolicy{PriorityClass: name}
	return w
}

// Active sets a replica type's active pods in the status.
func (w *TrainingJobWrapper[T]) Active(rt kftraining.ReplicaType, n int32) *TrainingJobWrapper[T] {
	if w.status.ReplicaStatuses == nil {
		w.status.ReplicaStatuses = map[kftraining.ReplicaType]*kftraining.ReplicaStatus{}
	}
	w.status.ReplicaStatuses[rt] = &kftraining.ReplicaStatus{Active: n}
	return w
}

// Condition adds a true condition to the status.
func (w *TrainingJobWrapper[T]) Condition(t kftraining.JobConditionType, message string) *TrainingJobWrapper[T] {
	w.status.Conditions = append(w.status.Conditions, kftraining.JobCondition{Type: t, Status: corev1.ConditionTrue, Message: message})
	return w
}

// Obj returns the job.
func (w *TrainingJobWrapper[T]) Obj() T { return w.obj }
