package extensions

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
)

// TestSubmittedRunning: without the webhook, the reconciler is the
// backstop. A labelled job of each framework submitted running gets its unit
// and is suspended in the same pass, with a Warning saying why (on the job
// and in the unit's message); admitted, it is released and keeps running,
// even when something wakes its reconciler again.
func TestSubmittedRunning(t *testing.T) {
	for _, d := range drivers() {
		t.Run(d.integ.Name, func(t *testing.T) {
			t.Parallel()
			testSubmittedRunning(t, d)
		})
	}
}

func testSubmittedRunning(t *testing.T, d driver) {
	ns := newNamespaceWithoutWebhook(t)
	submitted := frameworktest.SubmittedRunning(t, d.integ, d.newJob(ns))
	obj := submitted.Object()
	create(t, obj)
	if submitted.IsSuspended() {
		t.Fatalf("the %s was created suspended: the webhook is not off in this namespace", d.integ.GVK.Kind)
	}
	jobKey := client.ObjectKeyFromObject(obj)
	unitKey := client.ObjectKey{Namespace: ns, Name: d.integ.UnitName(obj.GetName())}

	jobWhere(t, d.integ, jobKey, "suspended by the reconciler", func(j framework.GenericJob) bool { return j.IsSuspended() })
	// An Argo Workflow is held by its koord-queue-suspend step by design:
	// submitting it running is no mistake, so nothing is said.
	_, heldByItself := d.integ.NewJob().(framework.JobWithManagedCheck)
	unitWhere(t, unitKey, "Enqueued, saying why the job was suspended", func(u *schedulingv1alpha1.QueueUnit) bool {
		said := strings.Contains(u.Status.Message, "Submitted running: suspended until quota team-a admits it")
		return u.EffectivePhase() == schedulingv1alpha1.Enqueued && said != heldByItself
	})
	if !heldByItself {
		eventRecorded(t, ns, obj.GetName(), corev1.EventTypeWarning, framework.ReasonSubmittedRunning, "until quota team-a admits it")
	}

	admit(t, unitKey)
	jobWhere(t, d.integ, jobKey, "released", func(j framework.GenericJob) bool {
		return !j.IsSuspended() && j.Object().GetAnnotations()[schedulingv1alpha1.AnnotationReleasedBy] != ""
	})
	updateJobStatus(t, obj, func() { d.running(obj) })
	unitWhere(t, unitKey, "Running", func(u *schedulingv1alpha1.QueueUnit) bool { return u.Status.Phase == schedulingv1alpha1.Running })

	// A released job is not "submitted running": woken again, it runs on.
	updateJob(t, obj, func() {
		labels := obj.GetLabels()
		labels["touched"] = "yes"
		obj.SetLabels(labels)
	})
	barrier := extensionstest.MakeJob("barrier", ns).Quota("team-a").Request("cpu", "1").Obj()
	create(t, barrier)
	unitWhere(t, client.ObjectKeyFromObject(barrier), "created", func(*schedulingv1alpha1.QueueUnit) bool { return true })
	jobWhere(t, d.integ, jobKey, "still running after the change", func(j framework.GenericJob) bool {
		return !j.IsSuspended() && j.Object().GetLabels()["touched"] == "yes"
	})
}

// TestSubmittedRunningInServedNamespace: an unlabelled Job submitted running
// in a namespace an ElasticQuota serves is the queue's too, and is told which
// quota it waits for.
func TestSubmittedRunningInServedNamespace(t *testing.T) {
	t.Parallel()
	ns := newNamespaceWithoutWebhook(t)
	quota := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{
		Name: "serves-" + ns, Namespace: ns,
		Annotations: map[string]string{elasticquotav1alpha1.AnnotationQuotaNamespaces: `["` + ns + `"]`},
	}}
	create(t, quota)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), quota) })
	// An unlabelled Job submitted suspended is queued only once the
	// extensions' cache has the quota: then so is the one submitted running.
	integ := job.Integration()
	barrier := extensionstest.MakeJob("barrier", ns).Request("cpu", "1").Obj()
	create(t, barrier)
	unitWhere(t, client.ObjectKey{Namespace: ns, Name: integ.UnitName(barrier.Name)}, "created", func(*schedulingv1alpha1.QueueUnit) bool { return true })

	j := extensionstest.MakeJob("unlabelled", ns).Suspend(false).Request("cpu", "1").Obj()
	create(t, j)
	jobWhere(t, integ, client.ObjectKeyFromObject(j), "suspended", func(g framework.GenericJob) bool { return g.IsSuspended() })
	u := unitWhere(t, client.ObjectKey{Namespace: ns, Name: integ.UnitName(j.Name)}, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool {
		return u.EffectivePhase() == schedulingv1alpha1.Enqueued
	})
	if got := u.Labels[elasticquotav1alpha1.LabelQuotaName]; got != quota.Name {
		t.Errorf("unit labelled with quota %q, want %q", got, quota.Name)
	}
	eventRecorded(t, ns, j.Name, corev1.EventTypeWarning, framework.ReasonSubmittedRunning, "until quota "+quota.Name+" admits it")
}
