package ray

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// RayJobIntegration is the RayJob extension, enabled by the name "rayjob". A
// RayJob's unit is named after it with the suffix "-ray-qu".
func RayJobIntegration() framework.Integration {
	return framework.Integration{
		Name:        "rayjob",
		GVK:         rayv1.GroupVersion.WithKind("RayJob"),
		UnitSuffix:  "-ray-qu",
		NewJob:      func() framework.GenericJob { return &RayJob{} },
		AddToScheme: rayv1.AddToScheme,
		PodSetOf:    rayJobPodSet,
		PodOwners:   func(o client.Object) []framework.PodOwner { return (*RayJob)(o.(*rayv1.RayJob)).podOwners() },
		Makes:       makesOfRayJob,
	}
}

// makesOfRayJob: KubeRay makes a RayCluster (which carries the RayJob's
// labels) and a submitter Job for a RayJob, controlled by it.
func makesOfRayJob(child schema.GroupKind) bool {
	return child == rayv1.GroupVersion.WithKind("RayCluster").GroupKind() ||
		child == batchv1.SchemeGroupVersion.WithKind("Job").GroupKind()
}

// podOwners are what controls the RayJob's pods: the cluster KubeRay made
// for it (not one it runs on by clusterSelector, whose pods are not its
// own), and the submitter Job, which KubeRay names after the RayJob.
func (j *RayJob) podOwners() []framework.PodOwner {
	var out []framework.PodOwner
	if j.Status.RayClusterName != "" && len(j.Spec.ClusterSelector) == 0 {
		out = append(out, framework.PodOwner{Kind: rayv1.GroupVersion.WithKind("RayCluster").GroupKind(), Name: j.Status.RayClusterName})
	}
	if j.submits() {
		out = append(out, framework.PodOwner{Kind: batchv1.SchemeGroupVersion.WithKind("Job").GroupKind(), Name: j.Name})
	}
	return out
}

// rayJobPodSet is the pod set of a pod of a RayJob: the submitter, whose
// pod a batch Job controls, or its cluster's.
func rayJobPodSet(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "Job" && ref.APIVersion == batchv1.SchemeGroupVersion.String() {
		return SubmitterPodSet
	}
	return clusterPodSet(pod)
}

// RayJob is a RayJob as the queue sees it.
type RayJob rayv1.RayJob

var (
	_ framework.GenericJob            = (*RayJob)(nil)
	_ framework.JobWithMadeUpAffinity = (*RayJob)(nil)
	_ framework.JobWithMadeJobs       = (*RayJob)(nil)
)

// Object is the RayJob.
func (j *RayJob) Object() client.Object { return (*rayv1.RayJob)(j) }

// IsSuspended reports spec.suspend.
func (j *RayJob) IsSuspended() bool { return j.Spec.Suspend }

// Suspend sets spec.suspend; KubeRay deletes the job's cluster.
func (j *RayJob) Suspend() { j.Spec.Suspend = true }

// Resume clears spec.suspend.
func (j *RayJob) Resume() { j.Spec.Suspend = false }

// PodSets are those of the job's cluster and, in K8sJobMode, the submitter
// (in SidecarMode, the submitter is a container of the head). A RayJob that
// runs on an existing cluster (clusterSelector) has only the submitter.
func (j *RayJob) PodSets() ([]framework.PodSet, error) {
	var sets []framework.PodSet
	if j.Spec.RayClusterSpec != nil && len(j.Spec.ClusterSelector) == 0 {
		var err error
		if sets, err = clusterPodSets(j.Spec.RayClusterSpec); err != nil {
			return nil, err
		}
		if j.Spec.SubmissionMode == rayv1.SidecarMode {
			// KubeRay adds the submitter to the head of the cluster it
			// makes (v1.5, constructRayClusterForRayJob).
			sets[0].Added.Containers = append(sets[0].Added.Containers, defaultSubmitterTemplate().Spec.Containers[0])
		}
	}
	if j.submits() {
		submitter := framework.PodSet{Name: SubmitterPodSet, Template: j.Spec.SubmitterPodTemplate, Count: 1}
		if submitter.Template == nil || j.isKubeRayDefault(submitter.Template) {
			// KubeRay makes this pod from its own default, which pod set
			// updates cannot reach (only its node pool's affinity does:
			// EditAffinities).
			submitter.Template, submitter.MadeUp = defaultSubmitterTemplate(), true
		}
		sets = append(sets, submitter)
	}
	return sets, nil
}

// EditAffinities edits the affinity of the submitter's pod: its
// template's. A RayJob without one has its submitter made from KubeRay's
// default (common.GetSubmitterTemplate: one container, the head's image); an
// affinity put there goes into spec.submitterPodTemplate with that default,
// which is taken out again with the affinity (a template that is KubeRay's
// default but for its affinity is the default: PodSets makes it up). The
// submitter of a RayJob on an existing cluster (clusterSelector) takes its
// image from that cluster, which the RayJob does not hold: reported.
func (j *RayJob) EditAffinities(podSet string, edit func(string, *corev1.Affinity) *corev1.Affinity) []string {
	if podSet != SubmitterPodSet || !j.submits() {
		return nil
	}
	const path = "spec.submitterPodTemplate.spec.affinity"
	t := j.Spec.SubmitterPodTemplate
	if t != nil {
		t.Spec.Affinity = edit(path, t.Spec.Affinity)
		if t.Spec.Affinity == nil && j.isKubeRayDefault(t) {
			j.Spec.SubmitterPodTemplate = nil
		}
		return nil
	}
	a := edit(path, nil)
	if a == nil {
		return nil
	}
	t, ok := j.kubeRayDefault()
	if !ok {
		return []string{"spec.submitterPodTemplate (KubeRay makes it from the cluster spec.clusterSelector chooses)"}
	}
	t.Spec.Affinity = a
	j.Spec.SubmitterPodTemplate = t
	return nil
}

// kubeRayDefault is the submitter template KubeRay makes for the RayJob:
// defaultSubmitterTemplate with the image of the head's first container;
// ok is false when the RayJob holds no head (clusterSelector).
func (j *RayJob) kubeRayDefault() (*corev1.PodTemplateSpec, bool) {
	c := j.Spec.RayClusterSpec
	if c == nil || len(j.Spec.ClusterSelector) > 0 || len(c.HeadGroupSpec.Template.Spec.Containers) == 0 {
		return nil, false
	}
	t := defaultSubmitterTemplate()
	t.Spec.Containers[0].Image = c.HeadGroupSpec.Template.Spec.Containers[0].Image
	return t, true
}

// isKubeRayDefault reports whether t is KubeRay's default submitter
// template of the RayJob, but for its affinity.
func (j *RayJob) isKubeRayDefault(t *corev1.PodTemplateSpec) bool {
	def, ok := j.kubeRayDefault()
	if !ok {
		return false
	}
	def.Spec.Affinity = t.Spec.Affinity
	return equality.Semantic.DeepEqual(def, t)
}

// MadeKinds: KubeRay makes a RayJob's RayCluster and its submitter Job.
func (j *RayJob) MadeKinds() []client.Object {
	return []client.Object{&rayv1.RayCluster{}, &batchv1.Job{}}
}

// MadeSets are a RayCluster's head and worker groups, as the RayJob's own
// pod sets of those names, and a submitter Job's pods, as its submitter
// pod set; none for one suspended, or a Job that ended.
func (j *RayJob) MadeSets(made client.Object) ([]framework.PodSet, error) {
	switch m := made.(type) {
	case *rayv1.RayCluster:
		if (*RayCluster)(m).IsSuspended() {
			return nil, nil
		}
		return clusterPodSets(&m.Spec)
	case *batchv1.Job:
		if ptr.Deref(m.Spec.Suspend, false) || jobEnded(m) {
			return nil, nil
		}
		n := ptr.Deref(m.Spec.Parallelism, 1)
		if m.Spec.Completions != nil {
			n = min(n, max(*m.Spec.Completions-m.Status.Succeeded, 0))
		}
		return []framework.PodSet{{Name: SubmitterPodSet, Template: &m.Spec.Template, Count: n}}, nil
	}
	return nil, fmt.Errorf("a RayJob makes no %T", made)
}

// jobEnded reports whether Job j completed or failed: it runs no pod.
func jobEnded(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// PodSetsKoordQueueLeftOut: Koord-Queue's units of RayJobs have no pod set
// for the submitter.
func (j *RayJob) PodSetsKoordQueueLeftOut() []string { return []string{SubmitterPodSet} }

// submits reports whether KubeRay runs a submitter pod for the job.
func (j *RayJob) submits() bool {
	return j.Spec.SubmissionMode == "" || j.Spec.SubmissionMode == rayv1.K8sJobMode
}

// Finished reports a Complete, Failed or ValidationFailed deployment.
func (j *RayJob) Finished() (string, bool, bool) {
	switch j.Status.JobDeploymentStatus {
	case rayv1.JobDeploymentStatusComplete:
		return j.Status.Message, j.Status.JobStatus == rayv1.JobStatusSucceeded, true
	case rayv1.JobDeploymentStatusFailed, rayv1.JobDeploymentStatusValidationFailed:
		msg := string(j.Status.Reason)
		if j.Status.Message != "" {
			msg += ": " + j.Status.Message
		}
		return msg, false, true
	}
	return "", false, false
}

// Pods counts the cluster's pods from the status KubeRay copies into the
// RayJob, and the submitter as running while the deployment runs.
func (j *RayJob) Pods() map[string]framework.PodCount {
	out := map[string]framework.PodCount{}
	if j.Spec.RayClusterSpec != nil && len(j.Spec.ClusterSelector) == 0 {
		out = clusterPods(j.Spec.RayClusterSpec, &j.Status.RayClusterStatus, j.IsSuspended())
	}
	if j.submits() {
		var c framework.PodCount
		if j.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusRunning {
			c.Running = 1
		}
		out[SubmitterPodSet] = c
	}
	return out
}
