// Package job queues Kubernetes batch/v1 Jobs. spec.suspend holds a Job
// back; its one pod set runs parallelism pods, or fewer when fewer
// completions remain.
//
// A Job annotated koord-queue/job-min-parallelism may be admitted with fewer
// pods (partial admission), as Kueue does: it is released with parallelism
// lowered to the pods admitted (and completions too, when
// koord-queue/job-completions-equal-parallelism is "true"), its own
// parallelism kept in koord-queue/original-parallelism and put back when it
// is suspended again.
package job

import (
	"fmt"
	"strconv"

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
	_ framework.GenericJob              = (*Job)(nil)
	_ framework.JobWithTemplateLock     = (*Job)(nil)
	_ framework.JobWithPartialAdmission = (*Job)(nil)
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
// when fewer remain: the Job's own, not the fewer a partial admission runs.
// With koord-queue/job-min-parallelism it may start with that many.
func (j *Job) PodSets() ([]framework.PodSet, error) {
	minimum, err := j.minParallelism()
	if err != nil {
		return nil, err
	}
	ps := framework.PodSet{Name: schedulingv1alpha1.DefaultPodSetName, Template: &j.Spec.Template, Count: j.podCount()}
	if minimum > 0 && ps.Count > 0 {
		ps.MinCount = ptr.To(min(minimum, ps.Count))
	}
	return []framework.PodSet{ps}, nil
}

func (j *Job) podCount() int32 {
	n := j.parallelism()
	completions := j.Spec.Completions
	if _, lowered := j.original(); lowered && j.completionsFollowParallelism() {
		completions = &n
	}
	if completions != nil {
		n = min(n, max(*completions-j.Status.Succeeded, 0))
	}
	return n
}

// parallelism is the Job's own: its spec's, or what a partial admission
// lowered.
func (j *Job) parallelism() int32 {
	if n, ok := j.original(); ok {
		return n
	}
	return ptr.Deref(j.Spec.Parallelism, 1)
}

// original is the parallelism a partial admission lowered, if it did.
func (j *Job) original() (int32, bool) {
	raw, ok := j.Annotations[schedulingv1alpha1.AnnotationOriginalParallelism]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 0 {
		return 0, false // not ours: the spec says what the Job asks for
	}
	return int32(n), true
}

// minParallelism reads koord-queue/job-min-parallelism: 0 when unset.
func (j *Job) minParallelism() (int32, error) {
	raw, ok := j.Annotations[schedulingv1alpha1.AnnotationJobMinParallelism]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("annotation %s is %q: it must be a whole number of pods, at least 1", schedulingv1alpha1.AnnotationJobMinParallelism, raw)
	}
	if raw, ok := j.Annotations[schedulingv1alpha1.AnnotationJobCompletionsEqualParallelism]; ok {
		follow, err := strconv.ParseBool(raw)
		if err != nil {
			return 0, fmt.Errorf("annotation %s is %q: it must be \"true\" or \"false\"", schedulingv1alpha1.AnnotationJobCompletionsEqualParallelism, raw)
		}
		// Kubernetes lets completions change only with parallelism, on an
		// Indexed Job whose completions equal it (Kueue's webhook checks the same).
		indexed := ptr.Deref(j.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
		if follow && (!indexed || ptr.Deref(j.Spec.Completions, 1) != ptr.Deref(j.Spec.Parallelism, 1)) {
			return 0, fmt.Errorf("annotation %s is \"true\": that needs an Indexed Job whose completions equal its parallelism", schedulingv1alpha1.AnnotationJobCompletionsEqualParallelism)
		}
	}
	return int32(n), nil
}

// completionsFollowParallelism reports koord-queue/job-completions-equal-parallelism.
func (j *Job) completionsFollowParallelism() bool {
	follow, _ := strconv.ParseBool(j.Annotations[schedulingv1alpha1.AnnotationJobCompletionsEqualParallelism])
	return follow
}

// RunWithCounts lowers parallelism to the pods admitted, and completions
// with it when they are kept equal, keeping the Job's own parallelism in
// koord-queue/original-parallelism (once: a Job lowered already keeps the
// first).
func (j *Job) RunWithCounts(counts map[string]int32) {
	n, ok := counts[schedulingv1alpha1.DefaultPodSetName]
	if !ok {
		return
	}
	if _, lowered := j.original(); !lowered {
		if j.Annotations == nil {
			j.Annotations = map[string]string{}
		}
		j.Annotations[schedulingv1alpha1.AnnotationOriginalParallelism] = strconv.Itoa(int(ptr.Deref(j.Spec.Parallelism, 1)))
	}
	j.setParallelism(n)
}

// RestoreCounts puts back the parallelism (and completions, when they are
// kept equal) that RunWithCounts lowered.
func (j *Job) RestoreCounts() bool {
	if _, ok := j.Annotations[schedulingv1alpha1.AnnotationOriginalParallelism]; !ok {
		return false
	}
	n, ok := j.original()
	delete(j.Annotations, schedulingv1alpha1.AnnotationOriginalParallelism)
	if ok {
		j.setParallelism(n)
	}
	return true
}

// setParallelism sets parallelism, and completions with it when they are
// kept equal.
func (j *Job) setParallelism(n int32) {
	j.Spec.Parallelism = ptr.To(n)
	if j.completionsFollowParallelism() {
		j.Spec.Completions = ptr.To(n)
	}
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
