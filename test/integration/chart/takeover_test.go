package chart

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/queue"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestHelmUpgradeThenTakeOver switches as users do: Koord-Queue v1.8's
// release runs with a Job it released (running, its unit Running with
// status.admissions) and a Job it queued, all written under v1.8's CRDs;
// `helm upgrade` to this chart replaces those CRDs with ours; then
// koord-queue and koord-queue-controllers start. Every object written under
// Koord-Queue's CRDs is taken over under ours: the running Job is never
// suspended and its unit keeps its admission; when it finishes, its unit
// finishes and the waiting Job is admitted; the Queue follows its
// ElasticQuota's policy.
func TestHelmUpgradeThenTakeOver(t *testing.T) {
	e := bareAPIServer(t)
	ctx := context.Background()
	cfg := helmConfig(t, e)

	if err := e.Client.Create(ctx, readCRD(t, filepath.Join(testenv.CRDDir(), "scheduling.sigs.k8s.io_elasticquotas.yaml"))); err != nil {
		t.Fatal(err)
	}
	installKoordQueueV18(t, cfg)
	for _, name := range []string{"queues.scheduling.x-k8s.io", "queueunits.scheduling.x-k8s.io", elasticQuotaCRD} {
		waitEstablished(t, e, name)
	}

	// The cluster, the quota (room for one 1-cpu job) and what Koord-Queue
	// v1.8 made for them.
	node := wrappers.Node("node-1", "8", "32Gi")
	nodeStatus := node.Status
	create(t, e, node)
	node.Status = nodeStatus
	if err := e.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	const ns = metav1.NamespaceDefault
	create(t, e, wrappers.MakeElasticQuota("team-a", ns).Max(corev1.ResourceCPU, "1").Policy(schedulingv1alpha1.QueuePolicyBlock).Obj())
	v18Queue := &schedulingv1alpha1.Queue{
		// Koord-Queue copies the quota's annotations, and Koordinator
		// marks every quota it manages with quota-koord-queue-enable.
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: namespace, Annotations: map[string]string{queue.AnnotationKoordQueueEnable: ""}},
		Spec:       schedulingv1alpha1.QueueSpec{QueuePolicy: schedulingv1alpha1.QueuePolicyPriority, Priority: ptr.To[int32](1000)},
	}
	create(t, e, v18Queue)
	running := extensionstest.MakeJob("running", ns).Quota("team-a").Request("cpu", "1").Suspend(false).Obj()
	running.Annotations = wrappers.KoordQueueV18Annotations(true)
	waiting := extensionstest.MakeJob("waiting", ns).Quota("team-a").Request("cpu", "1").Obj()
	waiting.Annotations = wrappers.KoordQueueV18Annotations(false)
	jobKind := metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	unitOf := func(j *batchv1.Job, phase schedulingv1alpha1.QueueUnitPhase) client.ObjectKey {
		create(t, e, j)
		sets := []schedulingv1alpha1.PodSet{{Name: j.Name, Count: 1, Template: *j.Spec.Template.DeepCopy()}}
		u := wrappers.KoordQueueV18Unit(j, jobKind, j.Name, sets, phase)
		status := u.Status
		create(t, e, u)
		u.Status = status
		if err := e.Client.Status().Update(ctx, u); err != nil {
			t.Fatal(err)
		}
		return client.ObjectKeyFromObject(u)
	}
	runningUnit := unitOf(running, schedulingv1alpha1.Running)
	waitingUnit := unitOf(waiting, schedulingv1alpha1.Enqueued)
	now := metav1.Now()
	running.Status.StartTime, running.Status.Active, running.Status.Ready = &now, 1, ptr.To[int32](1)
	if err := e.Client.Status().Update(ctx, running); err != nil {
		t.Fatal(err)
	}

	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = namespace
	if _, err := upgrade.RunWithContext(ctx, "koord-queue", loadChart(t), everything()); err != nil {
		t.Fatalf("helm upgrade from Koord-Queue v1.8's release: %v", err)
	}
	startBinaries(t, e)

	unitWhere(t, e, runningUnit, "adopted, still Running with its admission", func(u *schedulingv1alpha1.QueueUnit) bool {
		owner := metav1.GetControllerOf(u)
		return owner != nil && owner.UID == running.UID && u.Status.Phase == schedulingv1alpha1.Running && len(u.Status.Admissions) == 1
	})
	unitWhere(t, e, waitingUnit, "adopted and waiting", func(u *schedulingv1alpha1.QueueUnit) bool {
		owner := metav1.GetControllerOf(u)
		return owner != nil && owner.UID == waiting.UID && u.EffectivePhase() == schedulingv1alpha1.Enqueued
	})
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		q := &schedulingv1alpha1.Queue{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(v18Queue), q); err != nil {
			return err
		}
		if q.Spec.QueuePolicy != schedulingv1alpha1.QueuePolicyBlock {
			return fmt.Errorf("Queue %s has policy %s, want its ElasticQuota's Block", q.Name, q.Spec.QueuePolicy)
		}
		return nil
	})
	expectJobSuspended(t, e, running, false)
	expectJobSuspended(t, e, waiting, true)

	// The running Job succeeds: its unit finishes and the waiting Job gets
	// its room.
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(running), running); err != nil {
		t.Fatal(err)
	}
	running.Status.Active, running.Status.Ready, running.Status.Succeeded, running.Status.CompletionTime = 0, ptr.To[int32](0), 1, &now
	running.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	if err := e.Client.Status().Update(ctx, running); err != nil {
		t.Fatal(err)
	}
	unitWhere(t, e, runningUnit, "Succeed", func(u *schedulingv1alpha1.QueueUnit) bool {
		return u.Status.Phase == schedulingv1alpha1.Succeed
	})
	unitWhere(t, e, waitingUnit, "admitted", func(u *schedulingv1alpha1.QueueUnit) bool {
		return u.EffectivePhase() == schedulingv1alpha1.Running || u.EffectivePhase() == schedulingv1alpha1.Dequeued
	})
	expectJobSuspended(t, e, waiting, false)
	// Never suspended, not even for a moment: a suspension and its undoing
	// would each have raised the Job's generation.
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(running), running); err != nil {
		t.Fatal(err)
	}
	if running.Generation != 1 {
		t.Errorf("the running Job's spec changed (generation %d): it must run on untouched", running.Generation)
	}

	var events corev1.EventList
	if err := e.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		switch ev.Reason {
		case framework.ReasonUnitNameTaken, framework.ReasonSubmittedRunning, framework.ReasonUnitNotAdoptable:
			t.Errorf("event %s on %s: %s", ev.Reason, ev.InvolvedObject.Name, ev.Message)
		}
	}
}

// startBinaries runs koord-queue and koord-queue-controllers (the batch Job
// extension, without the webhook) on e until the test ends, as the chart's
// Deployments would.
func startBinaries(t *testing.T, e *testenv.Env) {
	t.Helper()
	// The scheme is complete before either manager reads it.
	integs := []framework.Integration{job.Integration()}
	if err := integrations.AddToScheme(e.Scheme, integs); err != nil {
		t.Fatal(err)
	}
	if err := startKoordQueue(t, e, app.Options{QueueNamespace: namespace}); err != nil {
		t.Fatal(err)
	}
	scope, err := integrations.Scope(integs, false, false)
	if err != nil {
		t.Fatal(err)
	}
	stopControllers, err := e.StartManager(context.Background(), func(mgr manager.Manager) error {
		return integrations.Setup(context.Background(), mgr, integs, scope)
	}, func(o *manager.Options) {
		o.Cache = cache.Options{ByObject: framework.CacheByObject()}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopControllers)
}

func create(t *testing.T, e *testenv.Env, obj client.Object) {
	t.Helper()
	if err := e.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func unitWhere(t *testing.T, e *testenv.Env, key client.ObjectKey, what string, cond func(*schedulingv1alpha1.QueueUnit) bool) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		u := &schedulingv1alpha1.QueueUnit{}
		if err := e.Client.Get(ctx, key, u); err != nil {
			return err
		}
		if !cond(u) {
			return fmt.Errorf("unit %s is not %s: phase %s, owners %v, conditions %v", key, what, u.Status.Phase, u.OwnerReferences, u.Status.Conditions)
		}
		return nil
	})
}

// expectJobSuspended waits until j's spec.suspend is suspended.
func expectJobSuspended(t *testing.T, e *testenv.Env, j *batchv1.Job, suspended bool) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		got := &batchv1.Job{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(j), got); err != nil {
			return err
		}
		if ptr.Deref(got.Spec.Suspend, false) != suspended {
			return fmt.Errorf("Job %s suspended %v, want %v", j.Name, !suspended, suspended)
		}
		return nil
	})
}
