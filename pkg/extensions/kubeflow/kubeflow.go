// Package kubeflow queues Kubeflow training jobs (kubeflow.org/v1 TFJob,
// PyTorchJob and MPIJob). spec.runPolicy.suspend holds a job back; the
// annotation scheduling.x-k8s.io/suspend: "true" is read the same way, for
// operators that honour only the annotation. Each replica type is a pod set
// named after it in lower case ("worker", "ps", "master", ...).
//
// The three kinds share one adapter, pointed at the kind's own fields.
package kubeflow

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// trainingJob is a Kubeflow training job of any kind, through pointers to
// the fields every kind has.
type trainingJob struct {
	obj       client.Object
	replicas  *map[kftraining.ReplicaType]*kftraining.ReplicaSpec
	runPolicy *kftraining.RunPolicy
	status    *kftraining.JobStatus
}

var (
	_ framework.GenericJob      = (*trainingJob)(nil)
	_ framework.JobWithPriority = (*trainingJob)(nil)
)

// Object is the job.
func (j *trainingJob) Object() client.Object { return j.obj }

// IsSuspended reports spec.runPolicy.suspend or the suspend annotation.
func (j *trainingJob) IsSuspended() bool {
	return ptr.Deref(j.runPolicy.Suspend, false) || j.obj.GetAnnotations()[schedulingv1alpha1.AnnotationSuspend] == "true"
}

// Suspend sets spec.runPolicy.suspend, and the annotation when the job uses it.
func (j *trainingJob) Suspend() { j.setSuspend(true) }

// Resume clears spec.runPolicy.suspend, and the annotation when the job uses it.
func (j *trainingJob) Resume() { j.setSuspend(false) }

func (j *trainingJob) setSuspend(s bool) {
	j.runPolicy.Suspend = ptr.To(s)
	if a := j.obj.GetAnnotations(); a != nil {
		if _, ok := a[schedulingv1alpha1.AnnotationSuspend]; ok {
			a[schedulingv1alpha1.AnnotationSuspend] = strconv.FormatBool(s)
			j.obj.SetAnnotations(a)
		}
	}
}

// PodSets is one set per replica type, ordered by name.
func (j *trainingJob) PodSets() ([]framework.PodSet, error) {
	sets := make([]framework.PodSet, 0, len(*j.replicas))
	for rt, spec := range *j.replicas {
		if spec == nil {
			continue
		}
		sets = append(sets, framework.PodSet{
			Name:     podSetName(rt),
			Template: &spec.Template,
			Count:    ptr.Deref(spec.Replicas, 1),
		})
	}
	slices.SortFunc(sets, func(a, b framework.PodSet) int { return cmp.Compare(a.Name, b.Name) })
	return sets, nil
}

func podSetName(rt kftraining.ReplicaType) string { return strings.ToLower(string(rt)) }

// podSetOfPod is the pod set of a pod of the job: the replica type the
// training operator labels it with, in lower case like the pod set names.
func podSetOfPod(pod *corev1.Pod) string {
	return podSetName(kftraining.ReplicaType(pod.Labels[kftraining.ReplicaTypeLabel]))
}

// PriorityClass is the gang scheduling policy's priority class, when set.
func (j *trainingJob) PriorityClass() (name, field string) {
	if p := j.runPolicy.SchedulingPolicy; p != nil {
		return p.PriorityClass, "spec.runPolicy.schedulingPolicy.priorityClass"
	}
	return "", ""
}

// Finished reports the job's Succeeded or Failed condition.
func (j *trainingJob) Finished() (string, bool, bool) {
	for _, c := range j.status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case kftraining.JobSucceeded:
			return c.Message, true, true
		case kftraining.JobFailed:
			return c.Message, false, true
		}
	}
	return "", false, false
}

// Pods counts each replica type's active pods as running and, while the job
// runs, the rest not yet done as pending.
func (j *trainingJob) Pods() map[string]framework.PodCount {
	out := map[string]framework.PodCount{}
	for rt, spec := range *j.replicas {
		if spec == nil {
			continue
		}
		var c framework.PodCount
		if st := j.status.ReplicaStatuses[rt]; st != nil {
			c.Running = st.Active
			if !j.IsSuspended() {
				c.Pending = max(ptr.Deref(spec.Replicas, 1)-st.Active-st.Succeeded-st.Failed, 0)
			}
		}
		out[podSetName(rt)] = c
	}
	return out
}
