package extensions

import (
	"context"
	"fmt"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
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
		unitWhere(t, key, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.Status.Phase == schedulingv1alpha1.Enqueued })
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
		first := unitWhere(t, key, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.Status.Phase == schedulingv1alpha1.Enqueued })
		admit(t, key)
		jobWhere(t, job.Integration(), key, "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })
		updateJob(t, j, func() { j.Spec.Parallelism = ptr.To[int32](4) })
		unitWhere(t, key, "a new unit of 4 pods", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.UID != first.UID && u.Spec.PodSets[0].Count == 4 && u.Status.Phase == schedulingv1alpha1.Enqueued
		})
		jobWhere(t, job.Integration(), key, "suspended", func(j framework.GenericJob) bool { return j.IsSuspended() })
		eventRecorded(t, ns, j.Name, corev1.EventTypeNormal, framework.ReasonRequeued, "grew")
	})

	t.Run("a job whose unit is deleted while it runs is suspended and queued again", func(t *testing.T) {
		j := extensionstest.MakeJob("lost", ns).Quota("team-a").Request("cpu", "1").Obj()
		create(t, j)
		key := client.ObjectKeyFromObject(j)
		first := unitWhere(t, key, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.Status.Phase == schedulingv1alpha1.Enqueued })
		admit(t, key)
		jobWhere(t, job.Integration(), key, "released", func(j framework.GenericJob) bool {
			return !j.IsSuspended() && j.Object().GetAnnotations()[schedulingv1alpha1.AnnotationReleasedBy] == string(first.UID)
		})
		if err := k8s.Delete(context.Background(), first); err != nil {
			t.Fatal(err)
		}
		second := unitWhere(t, key, "a new unit, Enqueued, saying why", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.UID != first.UID && u.Status.Phase == schedulingv1alpha1.Enqueued && strings.Contains(u.Status.Message, "deleted while the job ran")
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

	t.Run("a RayCluster made by a RayJob is not queued by itself", func(t *testing.T) {
		parent := extensionstest.MakeRayJob("parent", ns, extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota("team-a").Obj()
		create(t, parent)
		child := extensionstest.MakeRayCluster("parent-raycluster", ns, extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota("team-a").
			OwnedBy(metav1.OwnerReference{APIVersion: rayv1.GroupVersion.String(), Kind: "RayJob", Name: parent.Name, UID: parent.UID, Controller: ptr.To(true)}).Obj()
		create(t, child)
		// A cluster of its own, created after the child, is a barrier: once
		// it has a unit, the child has been seen too.
		own := extensionstest.MakeRayCluster("own", ns, extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota("team-a").Obj()
		create(t, own)
		unitWhere(t, client.ObjectKey{Namespace: ns, Name: "own-raycluster-qu"}, "created", func(*schedulingv1alpha1.QueueUnit) bool { return true })
		unitWhere(t, client.ObjectKey{Namespace: ns, Name: "parent-ray-qu"}, "created", func(*schedulingv1alpha1.QueueUnit) bool { return true })
		noUnit(t, client.ObjectKey{Namespace: ns, Name: "parent-raycluster-raycluster-qu"})
	})
}
