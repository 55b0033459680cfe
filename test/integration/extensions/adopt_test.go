package extensions

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
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
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestAdoptKoordQueueUnits starts from what Koord-Queue v1.8 leaves in a
// namespace: a Job it released (its enqueue and dequeue annotations, running)
// whose unit is Running with status.admissions, and a suspended Job whose
// unit is Enqueued; each unit named like its Job, with an owner reference
// without controller: true and its pod set named after the Job. The
// extension takes both over: the running Job runs on and, when it
// succeeds, its unit finishes and gives its quota back; the waiting Job stays
// suspended, its unit waiting, and is released when the queue admits it.
func TestAdoptKoordQueueUnits(t *testing.T) {
	ns := newNamespaceWithoutWebhook(t)
	integ := job.Integration()

	// The Jobs are made without the quota label, so that the extension
	// leaves them be until their v1.8 units exist; then they get it, as
	// Koord-Queue's users' Jobs have it.
	released := extensionstest.MakeJob("released", ns).Parallelism(2).Request("cpu", "1").Suspend(false).Obj()
	released.Annotations = wrappers.KoordQueueV18Annotations(true)
	create(t, released)
	waiting := extensionstest.MakeJob("waiting", ns).Parallelism(1).Request("cpu", "1").Obj()
	waiting.Annotations = wrappers.KoordQueueV18Annotations(false)
	create(t, waiting)

	v18Unit := func(j *batchv1.Job, phase schedulingv1alpha1.QueueUnitPhase) client.ObjectKey {
		t.Helper()
		ps := schedulingv1alpha1.PodSet{Name: j.Name, Count: ptr.Deref(j.Spec.Parallelism, 1), Template: *j.Spec.Template.DeepCopy()}
		u := wrappers.KoordQueueV18Unit(j, metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, j.Name, []schedulingv1alpha1.PodSet{ps}, phase)
		u.Labels = map[string]string{elasticquotav1alpha1.LabelQuotaName: "team-a"}
		status := u.Status
		create(t, u)
		key := client.ObjectKeyFromObject(u)
		setUnitStatus(t, key, func(u *schedulingv1alpha1.QueueUnit) { u.Status = status })
		return key
	}
	releasedKey := v18Unit(released, schedulingv1alpha1.Running)
	waitingKey := v18Unit(waiting, schedulingv1alpha1.Enqueued)
	now := metav1.Now()
	updateJobStatus(t, released, func() {
		released.Status.StartTime, released.Status.Active, released.Status.Ready = &now, 2, ptr.To[int32](2)
	})
	for _, j := range []*batchv1.Job{released, waiting} {
		updateJob(t, j, func() { j.Labels = map[string]string{elasticquotav1alpha1.LabelQuotaName: "team-a"} })
	}

	adopted := func(u *schedulingv1alpha1.QueueUnit, uid string) bool {
		owner := metav1.GetControllerOf(u)
		return owner != nil && string(owner.UID) == uid &&
			apimeta.IsStatusConditionTrue(u.Status.Conditions, schedulingv1alpha1.QueueUnitAdopted)
	}
	unitWhere(t, releasedKey, "adopted, still Running and holding its pod set main", func(u *schedulingv1alpha1.QueueUnit) bool {
		return adopted(u, string(released.UID)) && u.Status.Phase == schedulingv1alpha1.Running &&
			len(u.Status.Admissions) == 1 && u.Status.Admissions[0].Name == schedulingv1alpha1.DefaultPodSetName &&
			u.Spec.PodSets[0].Name == schedulingv1alpha1.DefaultPodSetName
	})
	unitWhere(t, waitingKey, "adopted and waiting", func(u *schedulingv1alpha1.QueueUnit) bool {
		return adopted(u, string(waiting.UID)) && u.EffectivePhase() == schedulingv1alpha1.Enqueued
	})
	// Renaming the pod sets kept their templates whole, though the
	// extensions' cache keeps them stripped to their requests.
	for key, j := range map[client.ObjectKey]*batchv1.Job{releasedKey: released, waitingKey: waiting} {
		var u schedulingv1alpha1.QueueUnit
		if err := k8s.Get(context.Background(), key, &u); err != nil {
			t.Fatal(err)
		}
		if got, want := u.Spec.PodSets[0].Template.Spec.Containers[0].Image, j.Spec.Template.Spec.Containers[0].Image; got != want || got == "" {
			t.Errorf("unit %s's pod set template, renamed, has image %q, want its job's %q", key.Name, got, want)
		}
	}
	jobWhere(t, integ, client.ObjectKeyFromObject(released), "running", func(g framework.GenericJob) bool { return !g.IsSuspended() })
	jobWhere(t, integ, client.ObjectKeyFromObject(waiting), "suspended", func(g framework.GenericJob) bool { return g.IsSuspended() })

	// The released Job succeeds: its unit finishes and gives its quota back.
	updateJobStatus(t, released, func() {
		released.Status.Active, released.Status.Ready, released.Status.Succeeded, released.Status.CompletionTime = 0, ptr.To[int32](0), 2, &now
		released.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	})
	unitWhere(t, releasedKey, "Succeed, its admissions given back", func(u *schedulingv1alpha1.QueueUnit) bool {
		return u.Status.Phase == schedulingv1alpha1.Succeed && len(u.Status.Admissions) == 0
	})

	// The queue admits the waiting unit: its Job is released.
	admit(t, waitingKey)
	jobWhere(t, integ, client.ObjectKeyFromObject(waiting), "released", func(g framework.GenericJob) bool { return !g.IsSuspended() })

	var events corev1.EventList
	if err := k8s.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == framework.ReasonUnitNameTaken || e.Reason == framework.ReasonSubmittedRunning {
			t.Errorf("event %s on %s: %s", e.Reason, e.InvolvedObject.Name, e.Message)
		}
	}
}
