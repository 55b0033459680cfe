// Package ray queues KubeRay's RayJobs and RayClusters (ray.io/v1).
// spec.suspend holds either back. A Ray cluster's pod sets are its head
// ("head", one pod) and one per worker group, named after the group, of as
// many pods as KubeRay runs for the group (replicas within [minReplicas,
// maxReplicas], times numOfHosts) or, in a cluster whose autoscaler sets
// replicas (enableInTreeAutoscaling), as many as it may scale the group to
// (maxReplicas × numOfHosts). A RayJob submitted in K8sJobMode (the default)
// adds a "submitter" pod set for the pod that submits the job. A RayCluster
// made by a RayJob is queued as part of the RayJob, never by itself.
package ray

import (
	"fmt"
	"math"

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
func clusterPodSets(spec *rayv1.RayClusterSpec) ([]framework.PodSet, error) {
	head := framework.PodSet{Name: HeadPodSet, Template: &spec.HeadGroupSpec.Template, Count: 1}
	if autoscales(spec) {
		head.Added.Containers = []corev1.Container{autoscalerContainer(spec.AutoscalerOptions)}
	}
	sets := []framework.PodSet{head}
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		n, err := workersAsked(spec, g)
		if err != nil {
			return nil, err
		}
		sets = append(sets, framework.PodSet{Name: g.GroupName, Template: &g.Template, Count: n,
			Added: framework.AddedContainers{InitContainers: []corev1.Container{waitGCSReadyContainer()}}})
	}
	return sets, nil
}

// autoscalerContainer is the container KubeRay adds to the head of an
// autoscaling cluster, with its requests: 500m CPU and 512Mi, unless
// autoscalerOptions.resources replaces them (KubeRay v1.5,
// BuildAutoscalerContainer and mergeAutoscalerOverrides).
func autoscalerContainer(opts *rayv1.AutoscalerOptions) corev1.Container {
	c := corev1.Container{Name: "autoscaler", Resources: fixedResources("500m", "512Mi")}
	if opts != nil && opts.Resources != nil {
		c.Resources = *opts.Resources.DeepCopy()
	}
	return c
}

// waitGCSReadyContainer is the init container KubeRay adds to every worker
// pod, asking for 200m CPU and 256Mi (KubeRay v1.5,
// DefaultWorkerPodTemplate). An operator run with
// ENABLE_INIT_CONTAINER_INJECTION=false adds none; counting it anyway asks
// for more only for a worker whose own containers ask for less.
func waitGCSReadyContainer() corev1.Container {
	return corev1.Container{Name: "wait-gcs-ready", Resources: fixedResources("200m", "256Mi")}
}

// fixedResources requests and limits cpu and memory alike.
func fixedResources(cpu, memory string) corev1.ResourceRequirements {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
}

// autoscales reports whether the cluster's Ray autoscaler sets its worker
// groups' replicas (KubeRay v1.5, IsAutoscalingEnabled).
func autoscales(spec *rayv1.RayClusterSpec) bool {
	return ptr.Deref(spec.EnableInTreeAutoscaling, false)
}

// workersAsked is how many pods a worker group asks the queue for: as many
// as KubeRay runs for it now or, when the cluster autoscales, the most the
// autoscaler may scale it to, so that its changes of replicas within
// [minReplicas, maxReplicas] neither resize the unit nor, once admitted,
// count as growing (which queues the job again). A raised maxReplicas does
// grow the job: its unit is admitted for the old maximum only.
func workersAsked(spec *rayv1.RayClusterSpec, g *rayv1.WorkerGroupSpec) (int32, error) {
	if !autoscales(spec) || ptr.Deref(g.Suspend, false) {
		return workersRun(g), nil
	}
	// The API server defaults an unset maxReplicas to the largest int32:
	// a quota can cover no such group.
	if g.MaxReplicas == nil || *g.MaxReplicas == math.MaxInt32 {
		return 0, fmt.Errorf("worker group %s of an autoscaling cluster (enableInTreeAutoscaling) sets no maxReplicas: set it, the queue asks for the most workers the autoscaler may start", g.GroupName)
	}
	return *g.MaxReplicas * hosts(g), nil
}

// workersRun is how many pods KubeRay runs for a worker group: none when
// the group is suspended, else replicas held within [minReplicas,
// maxReplicas] (maxReplicas when they cross), times numOfHosts (KubeRay
// v1.5, GetWorkerGroupDesiredReplicas).
func workersRun(g *rayv1.WorkerGroupSpec) int32 {
	if ptr.Deref(g.Suspend, false) {
		return 0
	}
	lo, hi := ptr.Deref(g.MinReplicas, 0), ptr.Deref(g.MaxReplicas, math.MaxInt32)
	n := ptr.Deref(g.Replicas, lo)
	switch {
	case lo > hi:
		n = hi
	case n < lo:
		n = lo
	case n > hi:
		n = hi
	}
	return n * hosts(g)
}

// hosts is numOfHosts, whose default is 1.
func hosts(g *rayv1.WorkerGroupSpec) int32 { return max(g.NumOfHosts, 1) }

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
		// Pending are the pods KubeRay is to run now, not those an
		// autoscaling cluster may add.
		want := workersRun(g)
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
