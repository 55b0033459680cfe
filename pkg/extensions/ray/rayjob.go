package ray

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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

var _ framework.GenericJob = (*RayJob)(nil)

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
		if submitter.Template == nil {
			// KubeRay makes this pod from its own default, which pod set
			// updates cannot reach.
			submitter.Template, submitter.MadeUp = defaultSubmitterTemplate(), true
		}
		sets = append(sets, submitter)
	}
	return sets, nil
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
