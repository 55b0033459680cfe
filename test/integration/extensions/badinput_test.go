package extensions

import (
	"context"
	"fmt"
	"strings"
	"testing"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/argo"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestBadInput: a job the queue cannot take as it is gets a Warning event
// and a message on its unit, never a panic or a silent stall.
func TestBadInput(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)

	t.Run("a job with no requests is queued as asking for nothing", func(t *testing.T) {
		j := extensionstest.MakeJob("no-requests", ns).Quota("team-a").Obj()
		create(t, j)
		// The unit is created, then its message written.
		u := unitWhere(t, client.ObjectKeyFromObject(j), "Enqueued with a message", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.EffectivePhase() == schedulingv1alpha1.Enqueued && u.Status.Message != ""
		})
		if !strings.Contains(u.Status.Message, "requests any resource") || len(u.Spec.Request) != 0 {
			t.Errorf("message %q and request %v, want a message about the missing requests and no request", u.Status.Message, u.Spec.Request)
		}
		eventRecorded(t, ns, j.Name, corev1.EventTypeWarning, framework.ReasonNoRequests, "resources.requests")
	})

	t.Run("an unknown PriorityClass gives the default priority, not the template's", func(t *testing.T) {
		j := extensionstest.MakeJob("unknown-class", ns).Quota("team-a").Request("cpu", "1").PriorityClass("nope").Obj()
		create(t, j)
		// The unit is created, then its message written.
		u := unitWhere(t, client.ObjectKeyFromObject(j), "Enqueued with a message", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.EffectivePhase() == schedulingv1alpha1.Enqueued && u.Status.Message != ""
		})
		// No global default PriorityClass in this API server.
		if u.Spec.Priority != nil || u.Spec.PriorityClassName != "" || !strings.Contains(u.Status.Message, `"nope", which does not exist`) {
			t.Errorf("priority %v of class %q, message %q; want none and a message", u.Spec.Priority, u.Spec.PriorityClassName, u.Status.Message)
		}
		eventRecorded(t, ns, j.Name, corev1.EventTypeWarning, framework.ReasonUnknownPriorityClass, "nope")
	})

	t.Run("a system PriorityClass gives the default priority, with a warning naming the field and the class", func(t *testing.T) {
		// The API server makes system-node-critical (2000001000) itself.
		j := extensionstest.MakeJob("system-class", ns).Quota("team-a").Request("cpu", "1").PriorityClass("system-node-critical").Obj()
		create(t, j)
		u := unitWhere(t, client.ObjectKeyFromObject(j), "Enqueued with a message", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.EffectivePhase() == schedulingv1alpha1.Enqueued && u.Status.Message != ""
		})
		if u.Spec.Priority != nil || u.Spec.PriorityClassName != "" || !strings.Contains(u.Status.Message, `spec.priorityClassName of pod set main's template names PriorityClass "system-node-critical", a system PriorityClass`) {
			t.Errorf("priority %v of class %q, message %q; want none and a message naming the field and the class", u.Spec.Priority, u.Spec.PriorityClassName, u.Status.Message)
		}
		eventRecorded(t, ns, j.Name, corev1.EventTypeWarning, framework.ReasonPriorityClassNotAllowed, "system-node-critical")
	})

	t.Run("a template's integer priority without a PriorityClass gives no priority", func(t *testing.T) {
		j := extensionstest.MakeJob("own-priority", ns).Quota("team-a").Request("cpu", "1").Obj()
		j.Spec.Template.Spec.Priority = ptr.To[int32](2000000000)
		create(t, j)
		u := unitWhere(t, client.ObjectKeyFromObject(j), "created", func(*schedulingv1alpha1.QueueUnit) bool { return true })
		if u.Spec.Priority != nil || u.Spec.PriorityClassName != "" {
			t.Errorf("priority %v of class %q; want none", ptr.Deref(u.Spec.Priority, -1), u.Spec.PriorityClassName)
		}
	})

	t.Run("a negative amount in a PyTorchJob's template holds the unit, naming the field, until it is fixed", func(t *testing.T) {
		// The API server validates a Job's template, not one inside a
		// custom resource: this PyTorchJob asks 0 cpu in all.
		j := extensionstest.MakePyTorchJob("negative", ns).Quota("team-a").Suspend(true).
			Replica(kftraining.PyTorchJobReplicaTypeMaster, 1, "cpu", "-8").
			Replica(kftraining.PyTorchJobReplicaTypeWorker, 2, "cpu", "4").Obj()
		create(t, j)
		key := client.ObjectKey{Namespace: ns, Name: "negative-py-qu"}
		const field = `pod set "master": containers[0] (main): resources.requests[cpu] is -8`
		unitWhere(t, key, "held inactive with an InvalidJob condition", func(u *schedulingv1alpha1.QueueUnit) bool {
			c := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitInvalidJob)
			return !u.IsActive() && c != nil && strings.Contains(c.Message, field)
		})
		eventRecorded(t, ns, j.Name, corev1.EventTypeWarning, framework.ReasonInvalidJob, field)

		updateJob(t, j, func() {
			j.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeMaster].Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
		})
		unitWhere(t, key, "active with the fixed request and no condition", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.IsActive() && u.Spec.Request.Cpu().String() == "9" &&
				apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitInvalidJob) == nil
		})
	})

	t.Run("a workflow without min-resources is warned about", func(t *testing.T) {
		w := extensionstest.MakeWorkflow("no-min", ns).QueueTemplate().Suspend(true).Obj()
		create(t, w)
		unitWhere(t, client.ObjectKeyFromObject(w), "with a message", func(u *schedulingv1alpha1.QueueUnit) bool {
			return strings.Contains(u.Status.Message, schedulingv1alpha1.AnnotationMinResources)
		})
		eventRecorded(t, ns, w.Name, corev1.EventTypeWarning, argo.ReasonMissingMinResources, schedulingv1alpha1.AnnotationMinResources)
	})

	t.Run("a malformed min-resources holds the unit until it is fixed", func(t *testing.T) {
		w := extensionstest.MakeWorkflow("bad-min", ns).QueueTemplate().Suspend(true).MinResources("cpu: lots").Obj()
		create(t, w)
		key := client.ObjectKeyFromObject(w)
		unitWhere(t, key, "held inactive with a message", func(u *schedulingv1alpha1.QueueUnit) bool {
			return !u.IsActive() && u.Annotations[schedulingv1alpha1.AnnotationInvalidJob] != "" &&
				strings.Contains(u.Status.Message, "cannot be queued")
		})
		eventRecorded(t, ns, w.Name, corev1.EventTypeWarning, framework.ReasonInvalidJob, schedulingv1alpha1.AnnotationMinResources)

		updateJob(t, w, func() { w.Annotations[schedulingv1alpha1.AnnotationMinResources] = "cpu: 2" })
		unitWhere(t, key, "active with the fixed request and no message", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.IsActive() && u.Annotations[schedulingv1alpha1.AnnotationInvalidJob] == "" &&
				u.Spec.Request.Cpu().String() == "2" && u.Status.Message == ""
		})
	})

	t.Run("a Spark size Spark would refuse holds the unit, saying which field, until it is fixed", func(t *testing.T) {
		a := extensionstest.MakeSparkApplication("bad-memory", ns).Quota("team-a").Driver(1, "1.5g").Executors(2, 1, "1g").Obj()
		create(t, a)
		key := client.ObjectKey{Namespace: ns, Name: "bad-memory-spark-qu"}
		unitWhere(t, key, "held inactive with a message", func(u *schedulingv1alpha1.QueueUnit) bool {
			return !u.IsActive() && strings.Contains(u.Status.Message, `spec.driver: memory: "1.5g"`)
		})
		eventRecorded(t, ns, a.Name, corev1.EventTypeWarning, framework.ReasonInvalidJob, "1536m")

		updateJob(t, a, func() { a.Spec.Driver.Memory = ptr.To("1536m") })
		unitWhere(t, key, "active with the fixed request", func(u *schedulingv1alpha1.QueueUnit) bool {
			// 1536 + 384 for the driver, 2 × (1024 + 384) for the executors.
			return u.IsActive() && u.Status.Message == "" && u.Spec.Request.Memory().String() == "4736Mi"
		})
	})

	t.Run("more than eight pod sets hold the unit", func(t *testing.T) {
		spec := extensionstest.MakeRayClusterSpec("cpu", "1")
		for _, g := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			spec.WorkerGroup(g, 1, "cpu", "1")
		}
		c := extensionstest.MakeRayCluster("too-many", ns, spec.Obj()).Quota("team-a").Obj()
		create(t, c)
		u := unitWhere(t, client.ObjectKey{Namespace: ns, Name: "too-many-raycluster-qu"}, "held inactive", func(u *schedulingv1alpha1.QueueUnit) bool {
			return !u.IsActive() && strings.Contains(u.Status.Message, "9 groups of pods")
		})
		if len(u.Spec.PodSets) != 1 {
			t.Errorf("pod sets %+v, want one placeholder", u.Spec.PodSets)
		}
		eventRecorded(t, ns, c.Name, corev1.EventTypeWarning, framework.ReasonInvalidJob, "at most 8")
	})

	t.Run("more kinds of resources than a unit holds hold the unit, saying so", func(t *testing.T) {
		j := extensionstest.MakeJob("many-resources", ns).Quota("team-a").Request("cpu", "1").Obj()
		res := &j.Spec.Template.Spec.Containers[0].Resources
		res.Limits = corev1.ResourceList{}
		for i := range schedulingv1alpha1.MaxResourceNames {
			// Extended resources are asked in whole units, limits equal to requests.
			name := corev1.ResourceName(fmt.Sprintf("example.com/made-up-%02d", i))
			res.Requests[name], res.Limits[name] = resource.MustParse("1"), resource.MustParse("1")
		}
		create(t, j)
		want := fmt.Sprintf("the job asks for %d kinds of resources; a queue unit holds at most %d", schedulingv1alpha1.MaxResourceNames+1, schedulingv1alpha1.MaxResourceNames)
		unitWhere(t, client.ObjectKeyFromObject(j), "held inactive with a message", func(u *schedulingv1alpha1.QueueUnit) bool {
			return !u.IsActive() && strings.Contains(u.Status.Message, want)
		})
		eventRecorded(t, ns, j.Name, corev1.EventTypeWarning, framework.ReasonInvalidJob, want)
	})

	t.Run("an autoscaling RayCluster with no maxReplicas holds the unit", func(t *testing.T) {
		spec := extensionstest.MakeRayClusterSpec("cpu", "1").WorkerGroup("workers", 1, "cpu", "1").Autoscaling().Obj()
		spec.WorkerGroupSpecs[0].MaxReplicas = nil // the API server's default is the largest int32
		c := extensionstest.MakeRayCluster("unbounded", ns, spec).Quota("team-a").Obj()
		create(t, c)
		unitWhere(t, client.ObjectKey{Namespace: ns, Name: "unbounded-raycluster-qu"}, "held inactive", func(u *schedulingv1alpha1.QueueUnit) bool {
			return !u.IsActive() && strings.Contains(u.Status.Message, "sets no maxReplicas")
		})
		eventRecorded(t, ns, c.Name, corev1.EventTypeWarning, framework.ReasonInvalidJob, "maxReplicas")
	})

	t.Run("a unit of the job's name that is not the job's is left alone", func(t *testing.T) {
		taken := wrappers.MakeQueueUnit("taken", ns).PodSet("main", 1, "cpu", "1").Obj()
		create(t, taken)
		j := extensionstest.MakeJob("taken", ns).Quota("team-a").Request("cpu", "1").Obj()
		create(t, j)
		eventRecorded(t, ns, j.Name, corev1.EventTypeWarning, framework.ReasonUnitNameTaken, "taken")
		var u schedulingv1alpha1.QueueUnit
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(taken), &u); err != nil || len(u.OwnerReferences) != 0 {
			t.Errorf("the user's unit was touched: %v, owners %v", err, u.OwnerReferences)
		}
		// As the event says: once the unit is deleted, the job is queued.
		if err := k8s.Delete(context.Background(), taken); err != nil {
			t.Fatal(err)
		}
		unitWhere(t, client.ObjectKeyFromObject(j), "the job's own", func(u *schedulingv1alpha1.QueueUnit) bool {
			owner := metav1.GetControllerOf(u)
			return owner != nil && owner.UID == j.UID
		})
	})
}
