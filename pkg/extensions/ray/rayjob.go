package ray

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// PodSets are those of the job's cluster and, in K8sJobMode, the submitter.
// A RayJob that runs on an existing cluster (clusterSelector) has only the
// submitter.
func (j *RayJob) PodSets() ([]framework.PodSet, error) {
	var sets []framework.PodSet
	if j.Spec.RayClusterSpec != nil && len(j.Spec.ClusterSelector) == 0 {
		var err error
		if sets, err = clusterPodSets(j.Spec.RayClusterSpec); err != nil {
			return nil, err
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

// MadePodSet: the pods of the submitter Job KubeRay makes count in the
// submitter pod set, those of its RayCluster in the pod set of their group.
func (j *RayJob) MadePodSet(kind schema.GroupKind, set string) string {
	if kind == batchv1.SchemeGroupVersion.WithKind("Job").GroupKind() {
		return SubmitterPodSet
	}
	return set
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
