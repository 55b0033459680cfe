// Package job queues Kubernetes batch/v1 Jobs. spec.suspend holds a Job
// back; its one pod set runs parallelism pods, or fewer when fewer
// completions remain.
package job

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// Integration is the batch Job extension, enabled by the name "job". A
// Job's unit has the Job's own name.
func Integration() framework.Integration {
	return framework.Integration{
		Name:        "job",
		GVK:         batchv1.SchemeGroupVersion.WithKind("Job"),
		NewJob:      func() framework.GenericJob { return &Job{} },
		AddToScheme: batchv1.AddToScheme,
	}
}

// Job is a batch Job as the queue sees it.
type Job batchv1.Job

var (
	_ framework.GenericJob          = (*Job)(nil)
	_ framework.JobWithTemplateLock = (*Job)(nil)
)

// Object is the Job.
func (j *Job) Object() client.Object { return (*batchv1.Job)(j) }

// IsSuspended reports spec.suspend.
func (j *Job) IsSuspended() bool { return ptr.Deref(j.Spec.Suspend, false) }

// Suspend sets spec.suspend; the Job controller deletes the Job's pods.
func (j *Job) Suspend() { j.Spec.Suspend = ptr.To(true) }

// Resume clears spec.suspend.
func (j *Job) Resume() { j.Spec.Suspend = ptr.To(false) }

// TemplatesLocked reports whether Kubernetes forbids changing the Job's
// scheduling directives: it allows it only while the Job is suspended and
// has no start time.
func (j *Job) TemplatesLocked() bool {
	return !j.IsSuspended() || j.Status.StartTime != nil
}

// UnlockTemplates clears the start time of a suspended Job that ran, as
// Kueue does: the Job controller keeps it while the Job is suspended (and
// sets it afresh on resume), and the API server lets it go only while the
// Job is suspended.
func (j *Job) UnlockTemplates() {
	if j.IsSuspended() {
		j.Status.StartTime = nil
	}
}

// PodSets is one set of parallelism pods, or of the remaining completions
// when fewer remain.
func (j *Job) PodSets() ([]framework.PodSet, error) {
	return []framework.PodSet{{Name: schedulingv1alpha1.DefaultPodSetName, Template: &j.Spec.Template, Count: j.podCount()}}, nil
}

func (j *Job) podCount() int32 {
	n := ptr.Deref(j.Spec.Parallelism, 1)
	if j.Spec.Completions != nil {
		n = min(n, max(*j.Spec.Completions-j.Status.Succeeded, 0))
	}
	return n
}

// Finished reports the Job's Complete or Failed condition.
func (j *Job) Finished() (string, bool, bool) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return c.Message, true, true
		case batchv1.JobFailed:
			return conditionMessage(c), false, true
		}
	}
	return "", false, false
}

func conditionMessage(c batchv1.JobCondition) string {
	switch {
	case c.Reason == "":
		return c.Message
	case c.Message == "":
		return c.Reason
	}
	return c.Reason + ": " + c.Message
}

// Pods counts ready pods as running and the Job's other active pods as
// pending.
func (j *Job) Pods() map[string]framework.PodCount {
	ready := ptr.Deref(j.Status.Ready, 0)
	return map[string]framework.PodCount{
		schedulingv1alpha1.DefaultPodSetName: {Running: ready, Pending: max(j.Status.Active-ready, 0)},
	}
}
