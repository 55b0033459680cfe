package extensions

import (
	"testing"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
)

// TestDeclaredRuntime: a job's max-exec-time label (koord-queue's, or
// Kueue's) becomes its unit's spec.maximumExecutionTimeSeconds, whatever
// its framework; a change of the label reaches the unit while it waits,
// and only once it is queued again when it is admitted.
func TestDeclaredRuntime(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ours, kueue := schedulingv1alpha1.LabelMaxExecTimeSeconds, schedulingv1alpha1.LabelMaxExecTimeSecondsKueue
	limit := func(want *int32) func(*schedulingv1alpha1.QueueUnit) bool {
		return func(u *schedulingv1alpha1.QueueUnit) bool { return ptr.Equal(u.Spec.MaximumExecutionTimeSeconds, want) }
	}

	t.Run("a labelled Job's unit carries the runtime; a change while it waits reaches it, a removal clears it", func(t *testing.T) {
		j := extensionstest.MakeJob("declared", ns).Quota("team-a").Label(ours, "600").Request("cpu", "1").Obj()
		create(t, j)
		key := client.ObjectKeyFromObject(j)
		unitWhere(t, key, "maximumExecutionTimeSeconds 600", limit(ptr.To[int32](600)))
		updateJob(t, j, func() { j.Labels[ours] = "900" })
		unitWhere(t, key, "maximumExecutionTimeSeconds 900", limit(ptr.To[int32](900)))
		eventRecorded(t, ns, j.Name, corev1.EventTypeNormal, framework.ReasonUpdatedUnit, "at most 900 s")
		updateJob(t, j, func() { delete(j.Labels, ours) })
		unitWhere(t, key, "no maximumExecutionTimeSeconds", limit(nil))
	})

	t.Run("a PyTorchJob with Kueue's label", func(t *testing.T) {
		p := extensionstest.MakePyTorchJob("kueue-label", ns).Quota("team-a").Suspend(true).
			Replica(kftraining.PyTorchJobReplicaTypeMaster, 1, "cpu", "1").Obj()
		p.Labels[kueue] = "120"
		create(t, p)
		unitWhere(t, client.ObjectKey{Namespace: ns, Name: "kueue-label-py-qu"}, "maximumExecutionTimeSeconds 120", limit(ptr.To[int32](120)))
	})

	t.Run("an invalid value is ignored, with a Warning naming the label", func(t *testing.T) {
		j := extensionstest.MakeJob("invalid", ns).Quota("team-a").Label(ours, "1h").Request("cpu", "1").Obj()
		create(t, j)
		u := unitWhere(t, client.ObjectKeyFromObject(j), "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.EffectivePhase() == schedulingv1alpha1.Enqueued
		})
		if u.Spec.MaximumExecutionTimeSeconds != nil {
			t.Errorf("maximumExecutionTimeSeconds %d, want none", *u.Spec.MaximumExecutionTimeSeconds)
		}
		eventRecorded(t, ns, j.Name, corev1.EventTypeWarning, framework.ReasonInvalidMaxExecTime, `Label koord-queue/max-exec-time-seconds is "1h"`)
	})

	t.Run("above the ceiling: cut to it, with a Warning that the unit is stopped then", func(t *testing.T) {
		j := extensionstest.MakeJob("capped", ns).Quota("team-a").Label(kueue, "9999999999").Request("cpu", "1").Obj()
		create(t, j)
		unitWhere(t, client.ObjectKeyFromObject(j), "maximumExecutionTimeSeconds 7 days", limit(ptr.To[int32](7*24*3600)))
		eventRecorded(t, ns, j.Name, corev1.EventTypeWarning, framework.ReasonMaxExecTimeCapped, "the QueueUnit takes 604800 s, and is stopped")
	})

	t.Run("a change while admitted applies once the unit is queued again", func(t *testing.T) {
		j := extensionstest.MakeJob("admitted", ns).Quota("team-a").Label(ours, "600").Request("cpu", "1").Obj()
		create(t, j)
		key := client.ObjectKeyFromObject(j)
		unitWhere(t, key, "maximumExecutionTimeSeconds 600", limit(ptr.To[int32](600)))
		admit(t, key)
		jobWhere(t, job.Integration(), key, "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })
		updateJob(t, j, func() { j.Labels[ours] = "60" })
		// The barrier: a change the reconciler makes after it has seen the
		// new label (the Job's status followed onto the unit).
		now := metav1.Now()
		updateJobStatus(t, j, func() { j.Status.StartTime, j.Status.Active, j.Status.Ready = &now, 1, ptr.To[int32](0) })
		u := unitWhere(t, key, "one pod active", func(u *schedulingv1alpha1.QueueUnit) bool {
			return u.Status.PodState.Running+u.Status.PodState.Pending == 1
		})
		if got := ptr.Deref(u.Spec.MaximumExecutionTimeSeconds, 0); got != 600 {
			t.Errorf("admitted unit's maximumExecutionTimeSeconds %d, want the 600 it was admitted with", got)
		}
		evict(t, key)
		updateJobStatus(t, j, func() { j.Status.Active = 0 })
		unitWhere(t, key, "queued again with maximumExecutionTimeSeconds 60", limit(ptr.To[int32](60)))
	})
}
