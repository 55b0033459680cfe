package extensionstest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// RayClusterSpecWrapper builds a Ray cluster spec with a head requesting
// name, quantity pairs.
type RayClusterSpecWrapper struct{ rayv1.RayClusterSpec }

// MakeRayClusterSpec starts a cluster spec with a head requesting name,
// quantity pairs and no worker groups.
func MakeRayClusterSpec(headRequests ...string) *RayClusterSpecWrapper {
	return &RayClusterSpecWrapper{rayv1.RayClusterSpec{
		HeadGroupSpec: rayv1.HeadGroupSpec{Template: wrappers.PodTemplate(headRequests...)},
	}}
}

// WorkerGroup adds a worker group of n pods requesting name, quantity pairs.
func (w *RayClusterSpecWrapper) WorkerGroup(name string, n int32, requests ...string) *RayClusterSpecWrapper {
	w.WorkerGroupSpecs = append(w.WorkerGroupSpecs, rayv1.WorkerGroupSpec{
		GroupName:   name,
		Replicas:    ptr.To(n),
		MinReplicas: ptr.To[int32](0),
		MaxReplicas: ptr.To(n),
		Template:    wrappers.PodTemplate(requests...),
	})
	return w
}

// Scale sets the last worker group's minReplicas, replicas and maxReplicas.
func (w *RayClusterSpecWrapper) Scale(lo, n, hi int32) *RayClusterSpecWrapper {
	g := &w.WorkerGroupSpecs[len(w.WorkerGroupSpecs)-1]
	g.MinReplicas, g.Replicas, g.MaxReplicas = ptr.To(lo), ptr.To(n), ptr.To(hi)
	return w
}

// Hosts sets the last worker group's numOfHosts.
func (w *RayClusterSpecWrapper) Hosts(n int32) *RayClusterSpecWrapper {
	w.WorkerGroupSpecs[len(w.WorkerGroupSpecs)-1].NumOfHosts = n
	return w
}

// Autoscaling sets enableInTreeAutoscaling: the Ray autoscaler sets the
// worker groups' replicas.
func (w *RayClusterSpecWrapper) Autoscaling() *RayClusterSpecWrapper {
	w.EnableInTreeAutoscaling = ptr.To(true)
	return w
}

// Obj returns the spec.
func (w *RayClusterSpecWrapper) Obj() *rayv1.RayClusterSpec { return &w.RayClusterSpec }

// RayJobWrapper builds a RayJob.
type RayJobWrapper struct{ rayv1.RayJob }

// MakeRayJob starts a suspended RayJob on cluster, submitted in K8sJobMode,
// with shutdownAfterJobFinishes, without which KubeRay refuses to suspend it
// (its status turns ValidationFailed).
func MakeRayJob(name, namespace string, cluster *rayv1.RayClusterSpec) *RayJobWrapper {
	return &RayJobWrapper{rayv1.RayJob{
		ObjectMeta: meta(name, namespace),
		Spec: rayv1.RayJobSpec{
			Suspend:                  true,
			Entrypoint:               "python -c 'print(1)'",
			SubmissionMode:           rayv1.K8sJobMode,
			ShutdownAfterJobFinishes: true,
			RayClusterSpec:           cluster,
		},
	}}
}

// ShutdownAfterJobFinishes sets spec.shutdownAfterJobFinishes.
func (w *RayJobWrapper) ShutdownAfterJobFinishes(b bool) *RayJobWrapper {
	w.Spec.ShutdownAfterJobFinishes = b
	return w
}

// Quota labels the RayJob with a quota.
func (w *RayJobWrapper) Quota(q string) *RayJobWrapper { quotaLabel(&w.ObjectMeta, q); return w }

// Suspend sets spec.suspend.
func (w *RayJobWrapper) Suspend(s bool) *RayJobWrapper { w.Spec.Suspend = s; return w }

// SubmissionMode sets spec.submissionMode.
func (w *RayJobWrapper) SubmissionMode(m rayv1.JobSubmissionMode) *RayJobWrapper {
	w.Spec.SubmissionMode = m
	return w
}

// Deployment sets the status KubeRay reports.
func (w *RayJobWrapper) Deployment(d rayv1.JobDeploymentStatus, s rayv1.JobStatus) *RayJobWrapper {
	w.Status.JobDeploymentStatus, w.Status.JobStatus = d, s
	return w
}

// ReadyCluster sets the copied cluster status: head ready and n workers ready.
func (w *RayJobWrapper) ReadyCluster(n int32) *RayJobWrapper {
	w.Status.RayClusterStatus = readyCluster(n)
	return w
}

// Obj returns the RayJob.
func (w *RayJobWrapper) Obj() *rayv1.RayJob { return &w.RayJob }

// RayClusterWrapper builds a RayCluster.
type RayClusterWrapper struct{ rayv1.RayCluster }

// MakeRayCluster starts a suspended RayCluster of spec.
func MakeRayCluster(name, namespace string, spec *rayv1.RayClusterSpec) *RayClusterWrapper {
	c := &RayClusterWrapper{rayv1.RayCluster{ObjectMeta: meta(name, namespace), Spec: *spec}}
	c.Spec.Suspend = ptr.To(true)
	return c
}

// Quota labels the RayCluster with a quota.
func (w *RayClusterWrapper) Quota(q string) *RayClusterWrapper {
	quotaLabel(&w.ObjectMeta, q)
	return w
}

// Suspend sets spec.suspend.
func (w *RayClusterWrapper) Suspend(s bool) *RayClusterWrapper { w.Spec.Suspend = ptr.To(s); return w }

// OwnedBy makes the cluster a controlled child of owner.
func (w *RayClusterWrapper) OwnedBy(owner metav1.OwnerReference) *RayClusterWrapper {
	w.OwnerReferences = append(w.OwnerReferences, owner)
	return w
}

// Ready sets the status: head ready and n workers ready.
func (w *RayClusterWrapper) Ready(n int32) *RayClusterWrapper {
	w.Status = readyCluster(n)
	return w
}

// Obj returns the RayCluster.
func (w *RayClusterWrapper) Obj() *rayv1.RayCluster { return &w.RayCluster }

func readyCluster(workers int32) rayv1.RayClusterStatus {
	return rayv1.RayClusterStatus{
		ReadyWorkerReplicas: workers,
		Conditions: []metav1.Condition{{
			Type: string(rayv1.HeadPodReady), Status: metav1.ConditionTrue, Reason: rayv1.HeadPodRunningAndReady,
			LastTransitionTime: metav1.Now(),
		}},
	}
}
