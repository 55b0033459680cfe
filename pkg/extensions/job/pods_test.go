package job

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// TestReconcileCountsPodsOnNodes: an admitted Job's admissions[].running
// counts its pods that a node took, not those still pending nor an earlier
// Job's of the same name, and PodsReady waits for all of them.
func TestReconcileCountsPodsOnNodes(t *testing.T) {
	ctx := context.Background()
	j := extensionstest.MakeJob("j", "ns").Quota("team-a").Parallelism(2).Request("cpu", "1").Obj()
	j.UID = "uid-now"
	c := frameworktest.ClientBuilder(t, testScheme(t)).WithObjects(j).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
	r := framework.NewJobReconciler(c, c, record.NewFakeRecorder(100), Integration())
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
	reconcile := func() *schedulingv1alpha1.QueueUnit {
		t.Helper()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		u := &schedulingv1alpha1.QueueUnit{}
		if err := c.Get(ctx, req.NamespacedName, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	u := reconcile() // creates the unit
	queueunit.Admit(u, "team-a", queueunit.Request(u), nil, nil, metav1.Now())
	if err := c.Status().Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	reconcile() // releases the Job

	jobGVK := batchv1.SchemeGroupVersion.WithKind("Job")
	earlier := j.DeepCopy()
	earlier.UID = "uid-earlier"
	pending := extensionstest.MakePod("j-pending", "ns").ControlledBy(j, jobGVK).Obj()
	for _, p := range []*corev1.Pod{
		extensionstest.MakePod("j-bound", "ns").ControlledBy(j, jobGVK).Node("n1").Phase(corev1.PodRunning).Obj(),
		pending,
		extensionstest.MakePod("j-of-an-earlier-job", "ns").ControlledBy(earlier, jobGVK).Node("n1").Phase(corev1.PodRunning).Obj(),
	} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	type seen struct {
		Running   int64
		PodsReady string
	}
	look := func(u *schedulingv1alpha1.QueueUnit) seen {
		s := seen{Running: u.Status.Admissions[0].Running}
		if cond := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitPodsReady); cond != nil {
			s.PodsReady = string(cond.Status) + ": " + cond.Message
		}
		return s
	}
	if diff := cmp.Diff(seen{Running: 1, PodsReady: "False: pod set main has 1 of 2 pods scheduled"}, look(reconcile())); diff != "" {
		t.Errorf("one pod on a node (-want +got):\n%s", diff)
	}
	pending.Spec.NodeName = "n2"
	if err := c.Update(ctx, pending); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seen{Running: 2, PodsReady: "True: All 2 pods of the job are scheduled"}, look(reconcile())); diff != "" {
		t.Errorf("both pods on nodes (-want +got):\n%s", diff)
	}
}
