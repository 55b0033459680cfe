package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/visibility"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// The hostile tenant: each attack of docs/concepts/security.md's "what a tenant
// cannot do", made by a tenant as one would be made on a shared cluster,
// through the API server with a ServiceAccount token bound only to the
// built-in edit role in the tenant's namespace.

// quotasNamespace holds the ElasticQuotas of TestHostileTenant, the
// cluster admin's.
const quotasNamespace = "hostile-quotas"

// fullQuota is the tenants' quota t1, max 4 CPU, held whole by another Job
// for the length of TestHostileTenant.
const fullQuota = "hostile-t1"

// TestHostileTenant: a tenant who bends the rules gets its quota and
// nothing more, and learns no other namespace's names. One subtest per
// attack, in parallel; t1 (fullQuota) is full throughout.
func TestHostileTenant(t *testing.T) {
	priorityClasses(t)
	tenantRoles(t)
	create(t, namespaceObj(quotasNamespace))
	create(t, wrappers.MakeElasticQuota(fullQuota, quotasNamespace).Max(corev1.ResourceCPU, "4").Obj())
	filler := batchJob(quotasNamespace, "t1-filler", fullQuota, "4")
	filler.Spec.Template.Annotations = map[string]string{cluster.PodRunTimeAnnotation: "10m"}
	create(t, filler)
	waitAdmitted(t, quotasNamespace, filler.Name)

	t.Run("a forged owner reference earns no exemption", testForgedOwner)
	t.Run("a negative request is refused", testNegativeRequest)
	t.Run("a template's priority gives none", testTemplatePriority)
	t.Run("names stay in their namespace", testNamesStayInTheirNamespace)
	t.Run("made-up resource names widen nothing", testMadeUpResourceNames)
	t.Run("a flood of visibility calls is rate-limited", testVisibilityFlood)
}

// testForgedOwner: a labelled Job submitted running in t1 (full), whose
// controller owner reference names a job of the tenant's own, is suspended
// at creation and waits in its queue: whether the owner is a Job (which
// makes pods, not jobs) or a Workflow that exists but is not admitted.
func testForgedOwner(t *testing.T) {
	t.Parallel()
	ns := "hostile-owner"
	create(t, withWebhook(namespaceObj(ns)))
	tn := newTenant(t, ns)
	cases := []struct {
		name  string
		owner client.Object
		gvk   metav1.TypeMeta
	}{
		{"owned by a suspended Job", extensionstest.MakeJob("owner-job", ns).Request("cpu", "100m").Obj(),
			metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}},
		{"owned by a Workflow waiting in its queue", extensionstest.MakeWorkflow("owner-wf", ns).Quota(fullQuota).QueueTemplate().Suspend(true).MinResources("cpu: 1").Obj(),
			metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tn.create(t, tc.owner)
			forged := extensionstest.MakeJob("forged-"+tc.owner.GetName(), ns).Quota(fullQuota).Request("cpu", "4").Suspend(false).
				OwnedBy(metav1.OwnerReference{APIVersion: tc.gvk.APIVersion, Kind: tc.gvk.Kind, Name: tc.owner.GetName(), UID: tc.owner.GetUID(), Controller: ptr.To(true)}).Obj()
			tn.create(t, forged)
			if !ptr.Deref(forged.Spec.Suspend, false) {
				t.Errorf("%s was created running: the webhook did not suspend it", forged.Name)
			}
			// Its unit decided to wait (a message is written after a
			// scheduling cycle): by then an exempt job would have run.
			testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
				if n := livePods(ctx, t, ns, forged.Name, false); n > 0 {
					t.Fatalf("%d pods of %s exist, which t1 (full) never admitted", n, forged.Name)
				}
				var u schedulingv1alpha1.QueueUnit
				if err := tn.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: forged.Name}, &u); err != nil {
					return fmt.Errorf("the tenant reading the unit of %s: %w", forged.Name, err)
				}
				if queueunit.HoldsQuota(&u) {
					t.Fatalf("%s's unit holds quota in t1, which is full", forged.Name)
				}
				if u.EffectivePhase() != schedulingv1alpha1.Enqueued || u.Status.Message == "" {
					return fmt.Errorf("unit of %s: phase %s, message %q; want it waiting in its queue with a reason", forged.Name, u.EffectivePhase(), u.Status.Message)
				}
				return nil
			})
			var job batchv1.Job
			if err := tn.c.Get(context.Background(), client.ObjectKeyFromObject(forged), &job); err != nil {
				t.Fatal(err)
			}
			if !ptr.Deref(job.Spec.Suspend, false) || job.Status.Active > 0 {
				t.Errorf("%s: suspended %v with %d active pods, want it suspended while it waits", job.Name, ptr.Deref(job.Spec.Suspend, false), job.Status.Active)
			}
		})
	}
}

// testNegativeRequest: a PyTorchJob whose master asks cpu -8 and whose two
// workers ask 4 each (0 in all) is not admitted into t1 (full); the
// training-operator makes no pod of it; its unit carries InvalidJob naming
// the field, and the tenant sees a Warning event on the job.
func testNegativeRequest(t *testing.T) {
	t.Parallel()
	needTrainingOperator(t)
	ns := kubeflowNamespace
	tn := newTenant(t, ns)
	integ := integration(t, "pytorchjob")
	job := extensionstest.MakePyTorchJob("hostile-negative", ns).Quota(fullQuota).Suspend(true).
		Replica(kftraining.PyTorchJobReplicaTypeMaster, 1, "cpu", "-8").Replica(kftraining.PyTorchJobReplicaTypeWorker, 2, "cpu", "4").
		Container(kftraining.PyTorchJobDefaultContainerName).Obj()
	tn.create(t, job)
	const field = `pod set "master": containers[0] (pytorch): resources.requests[cpu] is -8`
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		pods, err := operatorPods(ctx, ns, integ.GVK.Kind, job.Name)
		if err != nil {
			return err
		}
		if len(pods) > 0 {
			t.Fatalf("the training-operator made %d pods of %s, asking 8 CPU in a full 4-CPU quota", len(pods), job.Name)
		}
		var u schedulingv1alpha1.QueueUnit
		if err := tn.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: integ.UnitName(job.Name)}, &u); err != nil {
			return fmt.Errorf("the tenant reading the unit of %s: %w", job.Name, err)
		}
		if queueunit.HoldsQuota(&u) {
			t.Fatalf("%s's unit holds quota (%v): admitted with a negative request", job.Name, u.Status.Admissions)
		}
		c := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitInvalidJob)
		if c == nil || !strings.Contains(c.Message, field) || u.IsActive() {
			return fmt.Errorf("unit of %s: active %v, InvalidJob condition %+v; want it held inactive, the condition naming %q", job.Name, u.IsActive(), c, field)
		}
		return nil
	})
	tenantEvent(t, tn, job.Name, corev1.EventTypeWarning, framework.ReasonInvalidJob, field)
	j, err := getJob(context.Background(), integ, ns, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := operatorPods(context.Background(), ns, integ.GVK.Kind, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !j.IsSuspended() || len(pods) > 0 {
		t.Errorf("%s: suspended %v with %d pods, want it suspended with none", job.Name, j.IsSuspended(), len(pods))
	}
}

// testTemplatePriority: in a shared queue with preemption of running units,
// a Job whose template says priority 2000000000 and names no PriorityClass
// gets no priority: it neither preempts another tenant's running unit of
// class e2e-low nor passes its waiting one.
func testTemplatePriority(t *testing.T) {
	t.Parallel()
	nsA, nsB, quota := "hostile-prio-a", "hostile-prio-b", "hostile-shared"
	create(t, namespaceObj(nsA), namespaceObj(nsB))
	create(t, wrappers.MakeElasticQuota(quota, quotasNamespace).Max(corev1.ResourceCPU, "4").Policy(schedulingv1alpha1.QueuePolicyPriority).
		Annotation(schedulingv1alpha1.AnnotationEnableQueueUnitPreemption, "true").
		Annotation(policy.AnnotationPreemptRunning, "true").Obj())
	a, b := newTenant(t, nsA), newTenant(t, nsB)
	b.create(t, longJob(nsB, "running", quota, "4", "e2e-low", 10*time.Minute))
	waitAdmitted(t, nsB, "running")
	b.create(t, longJob(nsB, "waiting", quota, "4", "e2e-low", time.Second))
	waitView(t, b, nsB, "waiting", "waiting decided to wait", func(v api.UnitView) bool { return v.Reason != "" && v.Position == 1 })

	loud := batchJob(nsA, "loud", quota, "4")
	loud.Spec.Template.Spec.Priority = ptr.To[int32](2000000000)
	a.create(t, loud)
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		running, err := unitPhase(ctx, nsB, "running")
		if err != nil {
			return err
		}
		if queueunit.Evicted(running) || !queueunit.HoldsQuota(running) {
			t.Fatalf("the other tenant's running unit was preempted: %s", running.Status.Message)
		}
		var u schedulingv1alpha1.QueueUnit
		if err := a.c.Get(ctx, client.ObjectKeyFromObject(loud), &u); err != nil {
			return fmt.Errorf("the tenant reading its unit: %w", err)
		}
		if queueunit.HoldsQuota(&u) {
			t.Fatalf("loud's unit was admitted in a full quota")
		}
		v, err := a.vis.QueueUnit(ctx, nsA, "loud")
		if err != nil || v.Reason == "" {
			return fmt.Errorf("loud's view %+v (err %v), want it decided to wait", v, err)
		}
		if v.Position != 2 {
			t.Fatalf("loud's position %d, want 2: behind the other tenant's waiting unit of class e2e-low", v.Position)
		}
		return nil
	})
	var u schedulingv1alpha1.QueueUnit
	if err := a.c.Get(context.Background(), client.ObjectKeyFromObject(loud), &u); err != nil {
		t.Fatal(err)
	}
	if u.Spec.Priority != nil || u.Spec.PriorityClassName != "" {
		t.Errorf("loud's unit has priority %d of class %q, want none", ptr.Deref(u.Spec.Priority, 0), u.Spec.PriorityClassName)
	}
}

// testNamesStayInTheirNamespace: tenant ana reclaims its min from tenant
// bob, who borrowed it. What each reads (its units' status, the events in
// its namespace, the visibility API with its own token) names no unit
// and no namespace of the other.
func testNamesStayInTheirNamespace(t *testing.T) {
	t.Parallel()
	nsA, nsB := "tenant-ana", "tenant-bob"
	parent, qa, qb := "hostile-parent", "hostile-qa", "hostile-qb"
	create(t, namespaceObj(nsA), namespaceObj(nsB))
	create(t,
		wrappers.MakeElasticQuota(parent, quotasNamespace).Min(corev1.ResourceCPU, "8").Max(corev1.ResourceCPU, "8").IsParent().Obj(),
		wrappers.MakeElasticQuota(qa, quotasNamespace).Min(corev1.ResourceCPU, "4").Max(corev1.ResourceCPU, "8").Parent(parent).Obj(),
		wrappers.MakeElasticQuota(qb, quotasNamespace).Min(corev1.ResourceCPU, "4").Max(corev1.ResourceCPU, "8").Parent(parent).Obj())
	ana, bob := newTenant(t, nsA), newTenant(t, nsB)
	for _, name := range []string{"bob-first", "bob-second"} {
		bob.create(t, longJob(nsB, name, qb, "4", "", 10*time.Minute))
		waitAdmitted(t, nsB, name)
	}
	ana.create(t, longJob(nsA, "ana-claim", qa, "4", "", 10*time.Minute))

	// What ana reads while it waits for the reclaim, until it is admitted
	// (the wait is short: a preempted Job's quota comes back once its pods
	// are terminating), then while ana-behind waits in bob's queue behind
	// bob's victim, and what bob reads once its victim is told.
	anaSaw := map[string]bool{}
	saw := func(ctx context.Context, name string) (*schedulingv1alpha1.QueueUnit, api.UnitView, error) {
		var u schedulingv1alpha1.QueueUnit
		if err := ana.c.Get(ctx, client.ObjectKey{Namespace: nsA, Name: name}, &u); err != nil {
			return nil, api.UnitView{}, err
		}
		for _, s := range readable(&u) {
			anaSaw[s] = true
		}
		v, err := ana.vis.QueueUnit(ctx, nsA, name)
		if err == nil {
			anaSaw["view of "+name+": "+v.Reason] = true
		}
		return &u, v, err
	}
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, _, err := saw(ctx, "ana-claim")
		if err != nil {
			return err
		}
		if !queueunit.HoldsQuota(u) {
			return fmt.Errorf("ana-claim not admitted yet (%s)", u.Status.Message)
		}
		return nil
	})
	ana.create(t, longJob(nsA, "ana-behind", qb, "4", "", time.Second))
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, v, err := saw(ctx, "ana-behind")
		if err != nil {
			return err
		}
		if !strings.Contains(u.Status.Message, "behind") || !strings.Contains(v.Reason, "behind") {
			return fmt.Errorf("ana-behind's message %q, view's reason %q: want it waiting behind bob's victim", u.Status.Message, v.Reason)
		}
		return nil
	})
	events, err := tenantEvents(context.Background(), ana)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		anaSaw["event "+e.Reason+": "+e.Message] = true
	}
	var bobSaw []string
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		var list schedulingv1alpha1.QueueUnitList
		if err := bob.c.List(ctx, &list, client.InNamespace(nsB)); err != nil {
			return err
		}
		bobSaw = nil
		evicted := false
		for i := range list.Items {
			u := &list.Items[i]
			evicted = evicted || queueunit.Evicted(u)
			bobSaw = append(bobSaw, readable(u)...)
		}
		events, err := tenantEvents(ctx, bob)
		if err != nil {
			return err
		}
		preempted := false
		for _, e := range events {
			preempted = preempted || e.Reason == queueunit.EventPreempted
			bobSaw = append(bobSaw, "event "+e.Reason+": "+e.Message)
		}
		if !evicted || !preempted {
			return fmt.Errorf("bob's units evicted %v, Preempted event %v; want a victim told", evicted, preempted)
		}
		for _, u := range list.Items {
			v, err := bob.vis.QueueUnit(ctx, nsB, u.Name)
			if err != nil {
				return fmt.Errorf("bob's view of %s: %w", u.Name, err)
			}
			bobSaw = append(bobSaw, "view of "+u.Name+": "+v.Reason)
		}
		return nil
	})
	for _, tc := range []struct {
		who    *tenant
		saw    []string
		others []string
	}{{ana, slices.Sorted(maps.Keys(anaSaw)), []string{nsB, "bob-first", "bob-second"}}, {bob, bobSaw, []string{nsA, "ana-claim", "ana-behind"}}} {
		for _, q := range []string{qa, qb} {
			list, err := tc.who.vis.QueueUnits(context.Background(), q, "", 0, 0)
			if err != nil {
				t.Fatalf("%s listing queue %s: %v", tc.who.ns, q, err)
			}
			for _, v := range list.Items {
				if v.Namespace != tc.who.ns && !v.Redacted {
					t.Errorf("%s sees %s/%s in queue %s, not redacted", tc.who.ns, v.Namespace, v.Name, q)
				}
				tc.saw = append(tc.saw, fmt.Sprintf("queue %s: %s/%s %s", q, v.Namespace, v.Name, v.Reason))
			}
		}
		for _, s := range tc.saw {
			for _, other := range tc.others {
				if strings.Contains(s, other) {
					t.Errorf("%s reads %q, naming %s of another namespace", tc.who.ns, s, other)
				}
			}
		}
		t.Logf("%s reads:\n%s", tc.who.ns, strings.Join(tc.saw, "\n"))
	}
}

// madeUpNames is how many made-up extended resources each job of
// testMadeUpResourceNames asks for.
const madeUpNames = 15

// testMadeUpResourceNames: a tenant's jobs asking for many made-up extended
// resources (no quota and no node names them) are queued and charged what
// quotas name (cpu) only: nothing limits the rest, as koord-scheduler does
// not, no quota or queue view shows them, and another tenant's job is
// admitted meanwhile. A job asking more kinds than a unit holds is held
// with a Warning.
func testMadeUpResourceNames(t *testing.T) {
	t.Parallel()
	ns, otherNS := "hostile-resnames", "hostile-other"
	quota, otherQuota := "hostile-resnames-q", "hostile-other-q"
	create(t, namespaceObj(ns), namespaceObj(otherNS))
	create(t, wrappers.MakeElasticQuota(quota, quotasNamespace).Max(corev1.ResourceCPU, "2").Obj(),
		wrappers.MakeElasticQuota(otherQuota, quotasNamespace).Max(corev1.ResourceCPU, "4").Obj())
	tn, other := newTenant(t, ns), newTenant(t, otherNS)
	madeUp := func(name string, names int) *batchv1.Job {
		j := batchJob(ns, name, quota, "100m")
		res := &j.Spec.Template.Spec.Containers[0].Resources
		res.Limits = corev1.ResourceList{}
		for k := range names {
			r := corev1.ResourceName(fmt.Sprintf("hostile.example.com/%s-%02d", name, k))
			// Extended resources are asked in whole units, limits equal to requests.
			res.Requests[r], res.Limits[r] = resource.MustParse("1"), resource.MustParse("1")
		}
		return j
	}
	const jobs = 20 // of 100m cpu each: 2 CPU in all, quota's max
	for i := range jobs {
		tn.create(t, madeUp(fmt.Sprintf("made-up-%02d", i), madeUpNames))
	}
	// One asking more kinds than a unit holds is held, and told so.
	tooMany := madeUp("too-many", schedulingv1alpha1.MaxResourceNames)
	tn.create(t, tooMany)
	start := time.Now()
	other.create(t, batchJob(otherNS, "other", otherQuota, "1"))
	waitAdmitted(t, otherNS, "other")
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the other tenant's job took %v to be admitted, want it prompt", took)
	}
	// Every made-up job is admitted and charged its cpu only.
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		var list schedulingv1alpha1.QueueUnitList
		if err := tn.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var waiting []string
		held := false
		for _, u := range list.Items {
			if u.Name == tooMany.Name {
				held = true
				if u.IsActive() || queueunit.HoldsQuota(&u) {
					t.Fatalf("%s's unit is active (holds quota %v), want it held", u.Name, queueunit.HoldsQuota(&u))
				}
				continue
			}
			if !queueunit.HoldsQuota(&u) {
				waiting = append(waiting, fmt.Sprintf("%s (%s)", u.Name, u.Status.Message))
			}
		}
		if len(list.Items) != jobs+1 || len(waiting) > 0 || !held {
			return fmt.Errorf("%d units (%s's among them: %v), of which not admitted: %s; want %d admitted, made-up names limiting nothing, and %s's held",
				len(list.Items), tooMany.Name, held, strings.Join(waiting, "; "), jobs, tooMany.Name)
		}
		return nil
	})
	tenantEvent(t, tn, tooMany.Name, corev1.EventTypeWarning, framework.ReasonInvalidJob,
		fmt.Sprintf("asks for %d kinds of resources; a queue unit holds at most %d", schedulingv1alpha1.MaxResourceNames+1, schedulingv1alpha1.MaxResourceNames))
	// What the other tenant sees of the quotas and queues names none.
	testenv.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		quotas, err := other.vis.Quotas(ctx)
		if err != nil {
			return err
		}
		queues, err := other.vis.Queues(ctx)
		if err != nil {
			return err
		}
		for _, q := range quotas {
			if q.Name == quota && q.Used.Cpu().Cmp(resource.MustParse("2")) != 0 {
				return fmt.Errorf("quota %s used %v, want 2 cpu", quota, q.Used)
			}
			for _, list := range []corev1.ResourceList{q.Min, q.Max, q.Used, q.Runtime} {
				for name := range list {
					if strings.HasPrefix(string(name), "hostile.example.com/") {
						t.Fatalf("quota %s's view shows the made-up resource %s", q.Name, name)
					}
				}
			}
		}
		for _, q := range queues {
			if q.Quota == nil {
				continue
			}
			for _, list := range []corev1.ResourceList{q.Quota.Used, q.Quota.Runtime} {
				for name := range list {
					if strings.HasPrefix(string(name), "hostile.example.com/") {
						t.Fatalf("queue %s's view shows the made-up resource %s", q.Name, name)
					}
				}
			}
		}
		return nil
	})
}

// testVisibilityFlood: a tenant's token calling the visibility API as fast
// as it can is answered 429 past its rate, while another tenant's calls
// are answered and its job is admitted promptly.
func testVisibilityFlood(t *testing.T) {
	t.Parallel()
	ns, calmNS, calmQuota := "hostile-flood", "hostile-calm", "hostile-calm-q"
	create(t, namespaceObj(ns), namespaceObj(calmNS))
	create(t, wrappers.MakeElasticQuota(calmQuota, quotasNamespace).Max(corev1.ResourceCPU, "4").Obj())
	flooder, calm := newTenant(t, ns), newTenant(t, calmNS)

	const calls, workers = 400, 8
	var ok, limited, other atomic.Int64
	var wg sync.WaitGroup
	next := make(chan struct{}, calls)
	for range calls {
		next <- struct{}{}
	}
	close(next)
	floodStart := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				_, err := flooder.vis.QueueUnits(context.Background(), fullQuota, "", 0, 0)
				var status *visibility.StatusError
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &status) && status.Code == 429:
					limited.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	start := time.Now()
	calm.create(t, batchJob(calmNS, "calm", calmQuota, "1"))
	waitAdmitted(t, calmNS, "calm")
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the calm tenant's job took %v to be admitted during the flood, want it prompt", took)
	}
	if _, err := calm.vis.QueueUnit(context.Background(), calmNS, "calm"); err != nil {
		t.Errorf("the calm tenant's call during the flood: %v, want an answer", err)
	}
	wg.Wait()
	elapsed := time.Since(floodStart)
	t.Logf("%d calls in %v: %d answered, %d refused 429, %d failed otherwise", calls, elapsed, ok.Load(), limited.Load(), other.Load())
	if limited.Load() == 0 {
		t.Errorf("none of %d calls in %v was refused 429", calls, elapsed)
	}
	// The bucket: a burst of 40, then 20 a second (authz.DefaultBurst, DefaultRate).
	if most := 40 + int64(20*elapsed.Seconds()) + 5; ok.Load() > most {
		t.Errorf("%d calls answered in %v, more than the %d the rate allows", ok.Load(), elapsed, most)
	}
}

// tenant is a user who may do what the edit role allows in namespace ns,
// and nothing else: c talks to the API server with its token, vis to
// koord-queue's visibility API.
type tenant struct {
	ns  string
	c   client.Client
	vis *visibility.Client
}

// newTenant makes a ServiceAccount in ns bound to the edit ClusterRole in
// ns only, and a tenant with a token of it (TokenRequest).
func newTenant(t *testing.T, ns string) *tenant {
	t.Helper()
	const name = "hostile-tenant"
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-edit"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		})
	token, err := serviceAccountToken(context.Background(), localCluster, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(localCluster.Config)
	cfg.BearerToken = token
	c, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme(), Mapper: k8sClient.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	return &tenant{ns: ns, c: c, vis: &visibility.Client{BaseURL: visibilityURL, HTTP: visibilityHTTP, Token: token}}
}

// create creates obj as the tenant, and deletes it (and what it made)
// when the test ends. Forbidden is retried for a while: the edit role
// takes in tenantRoles' rules asynchronously.
func (tn *tenant) create(t *testing.T, obj client.Object) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		err := tn.c.Create(ctx, obj)
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("the tenant creating %T %s: %w", obj, obj.GetName(), err)
		}
		if err != nil {
			t.Fatalf("the tenant creating %T %s: %v", obj, obj.GetName(), err)
		}
		return nil
	})
	t.Cleanup(func() {
		_ = k8sClient.Delete(context.Background(), obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
}

// tenantRoles adds to the built-in edit role what a cluster admin grants
// tenants, as the operators' own installs do: writing PyTorchJobs and
// Workflows, and reading QueueUnits (the visibility API names units only
// to those who may list them).
func tenantRoles(t *testing.T) {
	t.Helper()
	roles := []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "hostile-tenant-jobs", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"kubeflow.org"}, Resources: []string{"pytorchjobs"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
				{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflows"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
				{APIGroups: []string{schedulingv1alpha1.GroupVersion.Group}, Resources: []string{"queueunits"}, Verbs: []string{"get", "list", "watch"}},
			}},
	}
	for _, r := range roles {
		if err := k8sClient.Create(context.Background(), r); err != nil && !isAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// withWebhook has the API server call the extensions' webhook for the jobs
// of the namespace.
func withWebhook(ns *corev1.Namespace) *corev1.Namespace {
	ns.Labels = map[string]string{webhookOnLabel: "on"}
	return ns
}

// waitAdmitted waits until the unit ns/name holds quota.
func waitAdmitted(t *testing.T, ns, name string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitPhase(ctx, ns, name)
		if err != nil {
			return err
		}
		if !queueunit.HoldsQuota(u) {
			return fmt.Errorf("unit %s/%s: phase %s, not admitted (%s)", ns, name, u.EffectivePhase(), u.Status.Message)
		}
		return nil
	})
}

// waitView waits until the tenant's view of its unit ns/name satisfies ok.
func waitView(t *testing.T, tn *tenant, ns, name, what string, ok func(api.UnitView) bool) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		v, err := tn.vis.QueueUnit(ctx, ns, name)
		if err != nil || !ok(v) {
			return fmt.Errorf("view of %s/%s %+v (err %v), want %s", ns, name, v, err, what)
		}
		return nil
	})
}

// readable is what a unit's status says to those who read it.
func readable(u *schedulingv1alpha1.QueueUnit) []string {
	out := []string{u.Name + " message: " + u.Status.Message}
	for _, c := range u.Status.Conditions {
		out = append(out, fmt.Sprintf("%s condition %s: %s", u.Name, c.Type, c.Message))
	}
	return out
}

// tenantEvents lists the events of the tenant's namespace as it reads them.
func tenantEvents(ctx context.Context, tn *tenant) ([]corev1.Event, error) {
	var events corev1.EventList
	if err := tn.c.List(ctx, &events, client.InNamespace(tn.ns)); err != nil {
		return nil, fmt.Errorf("the tenant listing its events: %w", err)
	}
	return events.Items, nil
}

// tenantEvent waits until the tenant reads an event of reason on the object
// called name whose message says saying.
func tenantEvent(t *testing.T, tn *tenant, name, eventType, reason, saying string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		events, err := tenantEvents(ctx, tn)
		if err != nil {
			return err
		}
		for _, e := range events {
			if e.InvolvedObject.Name == name && e.Type == eventType && e.Reason == reason && strings.Contains(e.Message, saying) {
				return nil
			}
		}
		return fmt.Errorf("no %s event %s on %s/%s saying %q", eventType, reason, tn.ns, name, saying)
	})
}
