package kubeflow

import (
	"context"
	"slices"
	"strings"
	"testing"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-queue/koord-queue/apis"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// TestKubeflowJobsAreNotAdmittedPartially: a Kubeflow job cannot run fewer
// replicas than it asks for, so its unit has no minCount, and a unit
// admitted with fewer pods anyway (a minCount written on it by hand) does
// not release the job: the unit is deleted and the job queued again whole.
func TestKubeflowJobsAreNotAdmittedPartially(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kftraining.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	integ := PyTorchJobIntegration()
	j := extensionstest.MakePyTorchJob("py", "ns").Quota("team-a").
		Replica(kftraining.PyTorchJobReplicaTypeMaster, 1, "cpu", "1").
		Replica(kftraining.PyTorchJobReplicaTypeWorker, 3, "cpu", "1").Obj()
	c := frameworktest.ClientBuilder(t, scheme).WithObjects(j).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &kftraining.PyTorchJob{}).Build()
	recorder := record.NewFakeRecorder(100)
	r := framework.NewJobReconciler(c, c, recorder, integ)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
	unitKey := client.ObjectKey{Namespace: "ns", Name: integ.UnitName("py")}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	unit := func() *schedulingv1alpha1.QueueUnit {
		t.Helper()
		u := &schedulingv1alpha1.QueueUnit{}
		if err := c.Get(ctx, unitKey, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	noMinCount := func(u *schedulingv1alpha1.QueueUnit) {
		t.Helper()
		for _, ps := range u.Spec.PodSets {
			if ps.MinCount != nil {
				t.Errorf("pod set %s of the unit has minCount %d, want none", ps.Name, *ps.MinCount)
			}
		}
	}

	reconcile()
	u := unit()
	noMinCount(u)

	// By hand, and admitted with 1 of its 3 workers before the extension
	// noticed.
	u.Spec.PodSets[1].MinCount = new(int32)
	*u.Spec.PodSets[1].MinCount = 1
	if err := c.Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	queueunit.Admit(u, "team-a", queueunit.Request(u), map[string]int32{"worker": 1}, nil, metav1.Now())
	if err := c.Status().Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	reconcile()
	var got kftraining.PyTorchJob
	if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	if !NewPyTorchJob(&got).IsSuspended() {
		t.Error("the job was released with fewer workers than it runs")
	}
	if err := c.Get(ctx, unitKey, &schedulingv1alpha1.QueueUnit{}); err == nil {
		t.Error("the unit admitted with fewer pods is still there")
	}
	var events []string
	for len(recorder.Events) > 0 {
		events = append(events, <-recorder.Events)
	}
	want := "Warning Requeued The QueueUnit was admitted with fewer pods than the job runs (1 of 3 pods of pod set worker), and a PyTorchJob cannot run fewer"
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, want) }) {
		t.Errorf("events %q, want one starting %q", events, want)
	}

	reconcile()
	noMinCount(unit())
}

// TestGrownWorkerTemplateIsQueuedAgain: a PyTorchJob's templates can change
// while it runs; one whose Worker template is patched from 1 to 7 CPU after
// its release (the training-operator would make its next workers at 7) is
// suspended, with a Warning naming the pod set and the resource, and queued
// again at its new size.
func TestGrownWorkerTemplateIsQueuedAgain(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kftraining.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	integ := PyTorchJobIntegration()
	j := extensionstest.MakePyTorchJob("py", "ns").Quota("team-a").
		Replica(kftraining.PyTorchJobReplicaTypeMaster, 1, "cpu", "1").
		Replica(kftraining.PyTorchJobReplicaTypeWorker, 2, "cpu", "1").Obj()
	c := frameworktest.ClientBuilder(t, scheme).WithObjects(j).
		WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &kftraining.PyTorchJob{}).Build()
	recorder := record.NewFakeRecorder(100)
	r := framework.NewJobReconciler(c, c, recorder, integ, framework.WithStatusDelay(0))
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}
	unitKey := client.ObjectKey{Namespace: "ns", Name: integ.UnitName("py")}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	job := func() *kftraining.PyTorchJob {
		t.Helper()
		var got kftraining.PyTorchJob
		if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}

	reconcile()
	var u schedulingv1alpha1.QueueUnit
	if err := c.Get(ctx, unitKey, &u); err != nil {
		t.Fatal(err)
	}
	queueunit.Admit(&u, "team-a", queueunit.Request(&u), nil, nil, metav1.Now())
	if err := c.Status().Update(ctx, &u); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if NewPyTorchJob(job()).IsSuspended() {
		t.Fatal("the admitted job was not released")
	}

	// The tenant patches the running job's Worker template.
	grown := job()
	grown.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker].Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("7")
	if err := c.Update(ctx, grown); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if !NewPyTorchJob(job()).IsSuspended() {
		t.Fatal("the job whose workers grew to 7 CPU each runs on, on an admission of 1 CPU each")
	}
	var events []string
	for len(recorder.Events) > 0 {
		events = append(events, <-recorder.Events)
	}
	want := "Warning ExceedsAdmission The job asks for more than QueueUnit py-py-qu was admitted with (pod set worker: cpu per pod 1 -> 7)"
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, want) }) {
		t.Errorf("events %q, want one starting %q", events, want)
	}

	reconcile() // the unit goes
	reconcile() // the job is queued again, at its new size
	if err := c.Get(ctx, unitKey, &u); err != nil {
		t.Fatal(err)
	}
	if queueunit.HoldsQuota(&u) {
		t.Errorf("the new unit holds quota: %+v", u.Status)
	}
	if got, want := u.Spec.Request[corev1.ResourceCPU], resource.MustParse("15"); got.Cmp(want) != 0 {
		t.Errorf("the new unit asks for %s CPU, want %s (a master of 1, two workers of 7)", got.String(), want.String())
	}
}
