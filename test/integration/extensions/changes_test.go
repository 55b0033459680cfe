package extensions

import (
	"context"
	"fmt"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/extensions/ray"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestChanges: jobs that change, and jobs the queue must leave alone.
func TestChanges(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)

	t.Run("a queued job that grows gets its unit resized", func(t *testing.T) {
		j := extensionstest.MakeJob("resized", ns).Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
		create(t, j)
		key := client.ObjectKeyFromObject(j)
		unitWhere(t, key, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
		updateJob(t, j, func() { j.Spec.Parallelism = ptr.To[int32](3) })
		unitWhere(t, key, "resized to 3 pods", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.Spec.PodSets[0].Count == 3 && u.Spec.Request.Cpu().String() == "3" && u.Spec.Resource.Cpu().String() == "3"
		})
		eventRecorded(t, ns, j.Name, corev1.EventTypeNormal, framework.ReasonUpdatedUnit, "cpu=3")
	})

	t.Run("an admitted job that grows is suspended and queued again", func(t *testing.T) {
		j := extensionstest.MakeJob("grown", ns).Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
		create(t, j)
		key := client.ObjectKeyFromObject(j)
		first := unitWhere(t, key, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
		admit(t, key)
		jobWhere(t, job.Integration(), key, "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })
		updateJob(t, j, func() { j.Spec.Parallelism = ptr.To[int32](4) })
		unitWhere(t, key, "a new unit of 4 pods", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.UID != first.UID && u.Spec.PodSets[0].Count == 4 && u.EffectivePhase() == schedulingv1alpha1.Enqueued
		})
		jobWhere(t, job.Integration(), key, "suspended", func(j framework.GenericJob) bool { return j.IsSuspended() })
		eventRecorded(t, ns, j.Name, corev1.EventTypeWarning, framework.ReasonRequeued, "grew past what its QueueUnit was admitted with (pod set main: 4 pods, admitted 2)")
	})

	t.Run("a job whose unit is deleted while it runs is suspended and queued again", func(t *testing.T) {
		j := extensionstest.MakeJob("lost", ns).Quota("team-a").Request("cpu", "1").Obj()
		create(t, j)
		key := client.ObjectKeyFromObject(j)
		first := unitWhere(t, key, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
		admit(t, key)
		jobWhere(t, job.Integration(), key, "released", func(j framework.GenericJob) bool {
			return !j.IsSuspended() && j.Object().GetAnnotations()[schedulingv1alpha1.AnnotationReleasedBy] == string(first.UID)
		})
		if err := k8s.Delete(context.Background(), first); err != nil {
			t.Fatal(err)
		}
		second := unitWhere(t, key, "a new unit, Enqueued, saying why", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.UID != first.UID && u.EffectivePhase() == schedulingv1alpha1.Enqueued && strings.Contains(u.Status.Message, "deleted while the job ran")
		})
		jobWhere(t, job.Integration(), key, "suspended", func(j framework.GenericJob) bool { return j.IsSuspended() })
		eventRecorded(t, ns, j.Name, corev1.EventTypeWarning, framework.ReasonUnitDeleted, second.Name)
		admit(t, key)
		jobWhere(t, job.Integration(), key, "released by the new unit", func(j framework.GenericJob) bool {
			return !j.IsSuspended() && j.Object().GetAnnotations()[schedulingv1alpha1.AnnotationReleasedBy] == string(second.UID)
		})
	})

	t.Run("an unlabelled job in a namespace a quota serves is queued to that quota", func(t *testing.T) {
		served := newNamespace(t)
		quota := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{
			Name: "serves-" + served, Namespace: ns,
			Annotations: map[string]string{elasticquotav1alpha1.AnnotationQuotaNamespaces: `["` + served + `"]`},
		}}
		create(t, quota)
		j := extensionstest.MakeJob("fallback", served).Request("cpu", "1").Obj()
		// The quota may reach the cache after the Job: touch the Job until
		// its unit appears.
		create(t, j)
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			var u schedulingv1alpha1.QueueUnit
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(j), &u); err != nil {
				updateJob(t, j, func() {
					if j.Annotations == nil {
						j.Annotations = map[string]string{}
					}
					j.Annotations["touch"] = metav1.Now().String()
				})
				return fmt.Errorf("waiting for a unit labelled with the namespace's quota: %w", err)
			}
			if u.Labels[elasticquotav1alpha1.LabelQuotaName] != quota.Name {
				return fmt.Errorf("waiting for a unit labelled with the namespace's quota; last seen: labels %v, %s", u.Labels, describeUnit(&u))
			}
			return nil
		})
	})

	t.Run("an admitted autoscaling RayCluster scaled within its range stays released and admitted", func(t *testing.T) {
		c := extensionstest.MakeRayCluster("autoscaled", ns, extensionstest.MakeRayClusterSpec("cpu", "1").
			WorkerGroup("workers", 2, "cpu", "1").Scale(1, 2, 4).Autoscaling().Obj()).Quota("team-a").Obj()
		create(t, c)
		key := client.ObjectKey{Namespace: ns, Name: "autoscaled-raycluster-qu"}
		first := unitWhere(t, key, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
		if cpu := first.Spec.Request.Cpu().String(); cpu != "5500m" {
			t.Errorf("unit asks for %s cpu, want 5500m: the head, the autoscaler KubeRay adds to it and the most workers the autoscaler may start", cpu)
		}
		admit(t, key)
		rayCluster := ray.RayClusterIntegration()
		jobWhere(t, rayCluster, client.ObjectKeyFromObject(c), "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })

		// The autoscaler scales the group up, and KubeRay reports the
		// workers ready. Once the unit counts them, the reconciler has seen
		// the new replicas.
		updateJob(t, c, func() { c.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3) })
		setRayClusterReady := func(workers int32) {
			updateJobStatus(t, c, func() {
				c.Status.ReadyWorkerReplicas = workers
				apimeta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: string(rayv1.HeadPodReady), Status: metav1.ConditionTrue, Reason: rayv1.HeadPodRunningAndReady})
			})
		}
		setRayClusterReady(3)
		unitWhere(t, key, "counting the head and 3 workers running", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.Status.PodState.Running == 4
		})
		// A job that grew is suspended in the pass that saw it: a later
		// pass's count is the barrier after which it would be.
		setRayClusterReady(2)
		u := unitWhere(t, key, "counting 3 running and 1 pending", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.Status.PodState.Running == 3 && u.Status.PodState.Pending == 1
		})
		if u.UID != first.UID || u.Status.Phase != schedulingv1alpha1.Running || len(u.Status.Admissions) == 0 || u.Spec.Request.Cpu().String() != "5500m" {
			t.Errorf("after the autoscaler scaled the group 2 → 3 (max 4): unit %s (uid %s, first %s) request cpu %s; want the first unit, Running, admitted, asking for 5500m cpu",
				describeUnit(u), u.UID, first.UID, u.Spec.Request.Cpu())
		}
		if j := jobWhere(t, rayCluster, client.ObjectKeyFromObject(c), "read", func(framework.GenericJob) bool { return true }); j.IsSuspended() {
			t.Error("the RayCluster was suspended after the autoscaler scaled it within its range")
		}

		// Raising maxReplicas asks for more than was admitted: queued again.
		updateJob(t, c, func() { c.Spec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](5) })
		unitWhere(t, key, "a new unit asking for 1.5 + 5 cpu", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.UID != first.UID && u.EffectivePhase() == schedulingv1alpha1.Enqueued && u.Spec.Request.Cpu().String() == "6500m"
		})
		jobWhere(t, rayCluster, client.ObjectKeyFromObject(c), "suspended", func(j framework.GenericJob) bool { return j.IsSuspended() })
		eventRecorded(t, ns, c.Name, corev1.EventTypeWarning, framework.ReasonRequeued, "grew")
	})

	t.Run("a RayCluster made by an admitted RayJob runs within its admission until the RayJob is evicted", func(t *testing.T) {
		parent := extensionstest.MakeRayJob("parent", ns, extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota("team-a").Obj()
		create(t, parent)
		parentUnit := client.ObjectKey{Namespace: ns, Name: "parent-ray-qu"}
		unitWhere(t, parentUnit, "created", func(*schedulingv1alpha1.QueueUnit) bool { return true })
		admit(t, parentUnit)
		jobWhere(t, ray.RayJobIntegration(), client.ObjectKeyFromObject(parent), "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })
		// KubeRay makes the cluster running, with the RayJob's labels.
		child := extensionstest.MakeRayCluster("parent-raycluster", ns, extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota("team-a").Suspend(false).
			OwnedBy(metav1.OwnerReference{APIVersion: rayv1.GroupVersion.String(), Kind: "RayJob", Name: parent.Name, UID: parent.UID, Controller: ptr.To(true)}).Obj()
		create(t, child)
		// A cluster of its own, created after the child, is a barrier: once
		// it has a unit, the child has been seen too.
		own := extensionstest.MakeRayCluster("own", ns, extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota("team-a").Obj()
		create(t, own)
		unitWhere(t, client.ObjectKey{Namespace: ns, Name: "own-raycluster-qu"}, "created", func(*schedulingv1alpha1.QueueUnit) bool { return true })
		childUnit := client.ObjectKey{Namespace: ns, Name: "parent-raycluster-raycluster-qu"}
		noUnit(t, childUnit)
		if j := jobWhere(t, ray.RayClusterIntegration(), client.ObjectKeyFromObject(child), "read", func(framework.GenericJob) bool { return true }); j.IsSuspended() {
			t.Error("the RayCluster of an admitted RayJob was suspended")
		}

		// Evicted, the RayJob no longer covers its cluster: until KubeRay
		// deletes it, the cluster is queued by itself.
		evict(t, parentUnit)
		unitWhere(t, childUnit, "created once the RayJob is evicted", func(*schedulingv1alpha1.QueueUnit) bool { return true })
		jobWhere(t, ray.RayClusterIntegration(), client.ObjectKeyFromObject(child), "suspended", func(j framework.GenericJob) bool { return j.IsSuspended() })
		eventRecorded(t, ns, child.Name, corev1.EventTypeWarning, framework.ReasonOwnerNotAdmitted, "its owner RayJob parent is not admitted")
	})

	t.Run("a labelled Job naming a Job of its own as owner is queued", func(t *testing.T) {
		// A Job makes no Jobs: an owner reference to one earns nothing.
		tiny := extensionstest.MakeJob("tiny", ns).Request("cpu", "1").Obj()
		create(t, tiny)
		j := extensionstest.MakeJob("owned-by-tiny", ns).Quota("team-a").Suspend(false).Request("cpu", "1").
			OwnedBy(metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: tiny.Name, UID: tiny.UID, Controller: ptr.To(true)}).Obj()
		create(t, j)
		unitWhere(t, client.ObjectKeyFromObject(j), "created", func(*schedulingv1alpha1.QueueUnit) bool { return true })
		jobWhere(t, job.Integration(), client.ObjectKeyFromObject(j), "suspended", func(j framework.GenericJob) bool { return j.IsSuspended() })
	})

	t.Run("a labelled RayCluster naming a RayJob of its own that waits in the queue is queued", func(t *testing.T) {
		tiny := extensionstest.MakeRayJob("tiny", ns, extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota("team-a").Obj()
		create(t, tiny)
		unitWhere(t, client.ObjectKey{Namespace: ns, Name: "tiny-ray-qu"}, "created", func(*schedulingv1alpha1.QueueUnit) bool { return true })
		c := extensionstest.MakeRayCluster("big", ns, extensionstest.MakeRayClusterSpec("cpu", "64").Obj()).Quota("team-a").Suspend(false).
			OwnedBy(metav1.OwnerReference{APIVersion: rayv1.GroupVersion.String(), Kind: "RayJob", Name: tiny.Name, UID: tiny.UID, Controller: ptr.To(true)}).Obj()
		create(t, c)
		unitWhere(t, client.ObjectKey{Namespace: ns, Name: "big-raycluster-qu"}, "created", func(*schedulingv1alpha1.QueueUnit) bool { return true })
		jobWhere(t, ray.RayClusterIntegration(), client.ObjectKeyFromObject(c), "suspended", func(j framework.GenericJob) bool { return j.IsSuspended() })
	})
}
