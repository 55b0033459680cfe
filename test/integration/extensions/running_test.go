package extensions

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
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
	// Judged before the extensions' cache has the quota, the job is woken
	// again as the quota reaches it (TestQueuedWhenAQuotaComesToServeTheNamespace).
	integ := job.Integration()
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

// TestQueuedWhenAQuotaComesToServeTheNamespace: unlabelled jobs judged while
// no quota served their namespace are the queue's as soon as one does,
// whether it is created listing the namespace or named after it, or its
// annotation comes to list it: the suspended job gets its unit and the
// running one is suspended, as at any later reconcile. Nothing else wakes
// them: without the quota's event the suspended job would wait with no unit.
func TestQueuedWhenAQuotaComesToServeTheNamespace(t *testing.T) {
	cases := map[string]struct {
		// quota is the quota that comes to serve ns; with annotateLater it
		// exists from the start and the annotation comes later.
		quota         func(ns string) *elasticquotav1alpha1.ElasticQuota
		annotateLater bool
	}{
		"created listing the namespace": {quota: func(ns string) *elasticquotav1alpha1.ElasticQuota {
			return &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: "serves-" + ns, Namespace: "default",
				Annotations: map[string]string{elasticquotav1alpha1.AnnotationQuotaNamespaces: `["` + ns + `"]`}}}
		}},
		"created named after the namespace": {quota: func(ns string) *elasticquotav1alpha1.ElasticQuota {
			return &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: ns, Namespace: ns}}
		}},
		"annotated with the namespace": {annotateLater: true, quota: func(ns string) *elasticquotav1alpha1.ElasticQuota {
			return &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: "serves-" + ns, Namespace: "default",
				Annotations: map[string]string{elasticquotav1alpha1.AnnotationQuotaNamespaces: `["` + ns + `"]`}}}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespaceWithoutWebhook(t)
			quota := tc.quota(ns)
			annotations := quota.Annotations
			if tc.annotateLater {
				quota.Annotations = nil
				create(t, quota)
				t.Cleanup(func() { _ = k8s.Delete(context.Background(), quota) })
			}
			integ := job.Integration()
			suspended := extensionstest.MakeJob("suspended", ns).Request("cpu", "1").Obj()
			running := extensionstest.MakeJob("running", ns).Suspend(false).Request("cpu", "1").Obj()
			create(t, suspended)
			create(t, running)
			// The barrier, created after them, has its unit once the
			// reconciler has taken both jobs from its queue, while no quota
			// served their namespace.
			barrier := extensionstest.MakeJob("barrier", ns).Quota("team-a").Request("cpu", "1").Obj()
			create(t, barrier)
			unitWhere(t, client.ObjectKey{Namespace: ns, Name: integ.UnitName(barrier.Name)}, "created", func(*schedulingv1alpha1.QueueUnit) bool { return true })
			noUnit(t, client.ObjectKey{Namespace: ns, Name: integ.UnitName(suspended.Name)})

			if tc.annotateLater {
				rewrite(t, quota, func() { quota.Annotations = annotations }, func(ctx context.Context) error { return k8s.Update(ctx, quota) })
			} else {
				create(t, quota)
				t.Cleanup(func() { _ = k8s.Delete(context.Background(), quota) })
			}
			for _, j := range []*batchv1.Job{suspended, running} {
				u := unitWhere(t, client.ObjectKey{Namespace: ns, Name: integ.UnitName(j.Name)}, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool {
					return u.EffectivePhase() == schedulingv1alpha1.Enqueued
				})
				if got := u.Labels[elasticquotav1alpha1.LabelQuotaName]; got != quota.Name {
					t.Errorf("unit of job %s labelled with quota %q, want %q", j.Name, got, quota.Name)
				}
			}
			jobWhere(t, integ, client.ObjectKeyFromObject(running), "suspended", func(g framework.GenericJob) bool { return g.IsSuspended() })
			eventRecorded(t, ns, running.Name, corev1.EventTypeWarning, framework.ReasonSubmittedRunning, "until quota "+quota.Name+" admits it")
		})
	}
}
