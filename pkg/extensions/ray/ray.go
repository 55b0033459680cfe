// Package ray queues KubeRay's RayJobs and RayClusters (ray.io/v1).
// spec.suspend holds either back. A Ray cluster's pod sets are its head
// ("head", one pod) and one per worker group, named after the group, of
// replicas × numOfHosts pods. A RayJob submitted in K8sJobMode (the default)
// adds a "submitter" pod set for the pod that submits the job. A RayCluster
// made by a RayJob is queued as part of the RayJob, never by itself.
package ray

import (
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// Pod set names of a Ray cluster's head and a RayJob's submitter.
const (
	HeadPodSet      = "head"
	SubmitterPodSet = "submitter"
)

// Labels KubeRay puts on a cluster's pods, which a user cannot override
// (KubeRay v1.5, labelPod).
const (
	labelNodeType = "ray.io/node-type"
	labelGroup    = "ray.io/group"
)

// clusterPodSet is the pod set of a pod of a Ray cluster: the head, or its
// worker group.
func clusterPodSet(pod *corev1.Pod) string {
	if pod.Labels[labelNodeType] == string(rayv1.HeadNode) {
		return HeadPodSet
	}
	return pod.Labels[labelGroup]
}

// clusterPodSets are the head and worker groups of a cluster spec.
func clusterPodSets(spec *rayv1.RayClusterSpec) []framework.PodSet {
	sets := []framework.PodSet{{Name: HeadPodSet, Template: &spec.HeadGroupSpec.Template, Count: 1}}
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		sets = append(sets, framework.PodSet{Name: g.GroupName, Template: &g.Template, Count: workerCount(g)})
	}
	return sets
}

func workerCount(g *rayv1.WorkerGroupSpec) int32 {
	if ptr.Deref(g.Suspend, false) {
		return 0
	}
	return ptr.Deref(g.Replicas, 0) * max(g.NumOfHosts, 1)
}

// clusterPods counts a cluster's pods from its status: the head runs when its
// HeadPodReady condition holds; the ready workers, which the status counts
// for the whole cluster only, are shared out among the groups in order.
func clusterPods(spec *rayv1.RayClusterSpec, status *rayv1.RayClusterStatus, suspended bool) map[string]framework.PodCount {
	out := map[string]framework.PodCount{}
	head := framework.PodCount{}
	switch {
	case apimeta.IsStatusConditionTrue(status.Conditions, string(rayv1.HeadPodReady)):
		head.Running = 1
	case !suspended:
		head.Pending = 1
	}
	out[HeadPodSet] = head
	ready := status.ReadyWorkerReplicas
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		want := workerCount(g)
		c := framework.PodCount{Running: min(ready, want)}
		ready -= c.Running
		if !suspended {
			c.Pending = want - c.Running
		}
		out[g.GroupName] = c
	}
	return out
}

// defaultSubmitterTemplate is the submitter pod KubeRay makes when a RayJob
// gives none: one container requesting 500m CPU and 200Mi of memory
// (KubeRay v1.5, GetDefaultSubmitterContainer).
func defaultSubmitterTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name: "ray-job-submitter",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("500m"),
					corev1.ResourceMemory: resource.MustParse("200Mi"),
				},
				Limits: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("1"),
					corev1.ResourceMemory: resource.MustParse("1Gi"),
				},
			},
		}},
	}}
}
