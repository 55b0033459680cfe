package ray

import (
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// RayClusterIntegration is the RayCluster extension, enabled by the name
// "raycluster". A RayCluster's unit is named after it with the suffix
// "-raycluster-qu".
func RayClusterIntegration() framework.Integration {
	return framework.Integration{
		Name:        "raycluster",
		GVK:         rayv1.GroupVersion.WithKind("RayCluster"),
		UnitSuffix:  "-raycluster-qu",
		NewJob:      func() framework.GenericJob { return &RayCluster{} },
		AddToScheme: rayv1.AddToScheme,
		PodSetOf:    clusterPodSet,
	}
}

// RayCluster is a RayCluster as the queue sees it. It never finishes: its
// unit runs until the cluster is deleted or suspended.
type RayCluster rayv1.RayCluster

var _ framework.GenericJob = (*RayCluster)(nil)

// Object is the RayCluster.
func (c *RayCluster) Object() client.Object { return (*rayv1.RayCluster)(c) }

// IsSuspended reports spec.suspend.
func (c *RayCluster) IsSuspended() bool { return ptr.Deref(c.Spec.Suspend, false) }

// Suspend sets spec.suspend; KubeRay deletes the cluster's pods.
func (c *RayCluster) Suspend() { c.Spec.Suspend = ptr.To(true) }

// Resume clears spec.suspend.
func (c *RayCluster) Resume() { c.Spec.Suspend = ptr.To(false) }

// PodSets are the head and the worker groups.
func (c *RayCluster) PodSets() ([]framework.PodSet, error) { return clusterPodSets(&c.Spec) }

// Finished is never true.
func (c *RayCluster) Finished() (string, bool, bool) { return "", false, false }

// Pods counts the cluster's pods from its status.
func (c *RayCluster) Pods() map[string]framework.PodCount {
	return clusterPods(&c.Spec, &c.Status, c.IsSuspended())
}
