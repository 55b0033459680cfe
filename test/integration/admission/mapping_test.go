package admission

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestUnmappedUnitGetsItsQuotaLater: a unit whose quota does not exist says
// so, raises QueueNotFound once, and is admitted as soon as the quota appears.
func TestUnmappedUnitGetsItsQuotaLater(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	quota := ns + "-later"
	create(t, wrappers.MakeQueueUnit("early", ns).Quota(quota).Request(corev1.ResourceCPU, "1").Obj())
	waitMessage(t, ns, "early", quota, "not found")
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		n, err := countEvents(ctx, ns, "early", "QueueNotFound")
		if err != nil || n != 1 {
			return fmt.Errorf("%d QueueNotFound events (err %v), want 1", n, err)
		}
		return nil
	})
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	waitPhase(t, ns, "early", schedulingv1alpha1.Dequeued)
}

// TestNamespaceFallbacks: a unit that names no quota goes to the quota
// whose namespaces annotation lists its namespace.
func TestNamespaceFallbacks(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeQueueUnit("nameless", ns).Request(corev1.ResourceCPU, "1").Obj())
	waitMessage(t, ns, "nameless", "no ElasticQuota serves this unit")
	create(t, wrappers.MakeElasticQuota(ns+"-serves", "default").Max(corev1.ResourceCPU, "4").
		Annotation(elasticquotav1alpha1.AnnotationQuotaNamespaces, fmt.Sprintf("[%q]", ns)).Obj())
	waitPhase(t, ns, "nameless", schedulingv1alpha1.Dequeued)
	// spec.queue is written after the admission itself.
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		u, err := getUnit(ctx, ns, "nameless")
		if err != nil {
			return err
		}
		if u.Spec.Queue != ns+"-serves" {
			return fmt.Errorf("spec.queue = %q, want %s", u.Spec.Queue, ns+"-serves")
		}
		return nil
	})
}

// TestBadElasticQuotas: invalid quotas never crash the controller; their
// units wait with the error and the quota gets a Warning event.
func TestBadElasticQuotas(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	cases := map[string]struct {
		quotas      []*elasticquotav1alpha1.ElasticQuota
		unitQuota   string
		wantMessage string
	}{
		"min above max": {
			quotas:      []*elasticquotav1alpha1.ElasticQuota{wrappers.MakeElasticQuota(ns+"-minmax", ns).Min(corev1.ResourceCPU, "8").Max(corev1.ResourceCPU, "4").Obj()},
			unitQuota:   ns + "-minmax",
			wantMessage: "min",
		},
		"parent cycle": {
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				wrappers.MakeElasticQuota(ns+"-x", ns).Max(corev1.ResourceCPU, "4").Parent(ns + "-y").Obj(),
				wrappers.MakeElasticQuota(ns+"-y", ns).Max(corev1.ResourceCPU, "4").Parent(ns + "-x").Obj(),
			},
			unitQuota:   ns + "-x",
			wantMessage: "cycle",
		},
		"a negative max": {
			quotas:      []*elasticquotav1alpha1.ElasticQuota{wrappers.MakeElasticQuota(ns+"-negative", ns).Max(corev1.ResourceCPU, "-4").Obj()},
			unitQuota:   ns + "-negative",
			wantMessage: "must not be negative",
		},
		"a child whose min its parent's cannot hold": {
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				wrappers.MakeElasticQuota(ns+"-org", ns).Min(corev1.ResourceCPU, "2").Max(corev1.ResourceCPU, "20").IsParent().Obj(),
				wrappers.MakeElasticQuota(ns+"-team-x", ns).Min(corev1.ResourceCPU, "4").Max(corev1.ResourceCPU, "10").Parent(ns + "-org").Obj(),
			},
			unitQuota:   ns + "-team-x",
			wantMessage: "over the min 2 of its parent",
		},
		"a parent not labelled is-parent": {
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				wrappers.MakeElasticQuota(ns+"-unmarked", ns).Max(corev1.ResourceCPU, "20").Obj(),
				wrappers.MakeElasticQuota(ns+"-kid", ns).Max(corev1.ResourceCPU, "10").Parent(ns + "-unmarked").Obj(),
			},
			unitQuota:   ns + "-kid",
			wantMessage: `is-parent: "true"`,
		},
		"a min naming a resource its max does not": {
			quotas:      []*elasticquotav1alpha1.ElasticQuota{wrappers.MakeElasticQuota(ns+"-minonly", ns).Min(corev1.ResourceMemory, "1Gi").Max(corev1.ResourceCPU, "4").Obj()},
			unitQuota:   ns + "-minonly",
			wantMessage: "min names memory, max does not",
		},
		"a child's min naming a resource its parent's min does not": {
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				wrappers.MakeElasticQuota(ns+"-cpu-org", ns).Min(corev1.ResourceCPU, "8").Max(corev1.ResourceCPU, "20").Max(corev1.ResourceMemory, "20Gi").IsParent().Obj(),
				wrappers.MakeElasticQuota(ns+"-mem-kid", ns).Min(corev1.ResourceMemory, "1Gi").Max(corev1.ResourceCPU, "10").Max(corev1.ResourceMemory, "10Gi").Parent(ns + "-cpu-org").Obj(),
			},
			unitQuota:   ns + "-mem-kid",
			wantMessage: "the min of its parent",
		},
		"missing parent": {
			quotas:      []*elasticquotav1alpha1.ElasticQuota{wrappers.MakeElasticQuota(ns+"-orphan", ns).Max(corev1.ResourceCPU, "4").Parent(ns + "-nowhere").Obj()},
			unitQuota:   ns + "-orphan",
			wantMessage: ns + "-nowhere",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, q := range tc.quotas {
				create(t, q)
			}
			unit := "unit-of-" + tc.unitQuota
			create(t, wrappers.MakeQueueUnit(unit, ns).Quota(tc.unitQuota).Request(corev1.ResourceCPU, "1").Obj())
			waitMessage(t, ns, unit, tc.wantMessage)
			staysEnqueued(t, ns, unit)
			testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
				if ok, err := hasEvent(ctx, ns, tc.unitQuota, "QuotaInvalid"); err != nil || !ok {
					return fmt.Errorf("no QuotaInvalid event on %s (err %v)", tc.unitQuota, err)
				}
				return nil
			})
		})
	}
}

// TestQuotaResolutionOrder: a unit that names no quota is charged as
// koord-scheduler charges its pods: to the ElasticQuota named after its
// namespace and living in it, else to a quota whose namespaces annotation
// lists the namespace. A quota of the namespace's name elsewhere serves
// nothing. The wait reason says which rule chose the quota.
func TestQuotaResolutionOrder(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	elsewhere := wrappers.MakeElasticQuota(ns, "default").Max(corev1.ResourceCPU, "4").Obj()
	create(t, elsewhere)
	create(t, wrappers.MakeQueueUnit("first", ns).Request(corev1.ResourceCPU, "1").Obj())
	waitMessage(t, ns, "first", "no ElasticQuota serves this unit")
	if err := env.Client.Delete(context.Background(), elsewhere); err != nil {
		t.Fatal(err)
	}

	create(t, wrappers.MakeElasticQuota(ns+"-serves", "default").Max(corev1.ResourceCPU, "4").
		Annotation(elasticquotav1alpha1.AnnotationQuotaNamespaces, fmt.Sprintf("[%q]", ns)).Obj())
	waitQueue(t, ns, "first", ns+"-serves")

	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "4").Obj())
	create(t, wrappers.MakeQueueUnit("second", ns).Request(corev1.ResourceCPU, "1").Obj())
	waitQueue(t, ns, "second", ns)
	create(t, wrappers.MakeQueueUnit("too-big", ns).Request(corev1.ResourceCPU, "8").Obj())
	waitMessage(t, ns, "too-big", "is the ElasticQuota named after the unit's namespace")
}

// waitQueue waits until the unit is admitted with spec.queue naming queue.
func waitQueue(t *testing.T, ns, name, queue string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		u, err := getUnit(ctx, ns, name)
		if err != nil {
			return err
		}
		if u.Spec.Queue != queue || u.Status.Phase != schedulingv1alpha1.Dequeued {
			return fmt.Errorf("unit %s: phase %s, spec.queue %q; want Dequeued in %s (message %q)", name, u.Status.Phase, u.Spec.Queue, queue, u.Status.Message)
		}
		return nil
	})
}

// TestDuplicateQuotaNames: quota names are global in Koordinator. Of two
// ElasticQuotas with one name in two namespaces the older is used, the
// other gets a Warning event, and when the one used goes, the other is used.
func TestDuplicateQuotaNames(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-b"}}
	create(t, other)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), other) })
	quota := ns + "-dup"
	used := wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj()
	create(t, used)
	// Created in the same second at worst: then the namespace that sorts
	// first (ns) is used, as when it is older.
	create(t, wrappers.MakeElasticQuota(quota, other.Name).Max(corev1.ResourceCPU, "8").Obj())
	create(t, wrappers.MakeQueueUnit("big", ns).Quota(quota).Request(corev1.ResourceCPU, "6").Obj())
	waitMessage(t, ns, "big", "exceeds max 4")
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		// At least one: every koord-queue the package's tests run sees every
		// quota (that each raises it once is TestDuplicateQuotaNames in
		// pkg/admission).
		n, err := countEvents(ctx, other.Name, quota, "DuplicateQuotaName")
		if err != nil || n < 1 {
			return fmt.Errorf("%d DuplicateQuotaName events on %s/%s (err %v), want one", n, other.Name, quota, err)
		}
		return nil
	})
	if err := env.Client.Delete(context.Background(), used); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, ns, "big", schedulingv1alpha1.Dequeued)
}

// TestInvalidChildLeavesItsParentAdmitting: a child quota whose min its
// parent's cannot hold (the parent has no min at all) is refused, as Koordinator's webhook refuses it; its
// parent and its siblings keep admitting (they all waited before).
func TestInvalidChildLeavesItsParentAdmitting(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	org := ns + "-org"
	create(t, wrappers.MakeElasticQuota(org, ns).Max(corev1.ResourceCPU, "20").IsParent().Obj())
	create(t, wrappers.MakeElasticQuota(ns+"-team-x", ns).Min(corev1.ResourceCPU, "4").Max(corev1.ResourceCPU, "10").Parent(org).Obj())
	create(t, wrappers.MakeElasticQuota(ns+"-team-y", ns).Max(corev1.ResourceCPU, "10").Parent(org).Obj())
	create(t, wrappers.MakeQueueUnit("in-y", ns).Quota(ns+"-team-y").Request(corev1.ResourceCPU, "2").Obj())
	create(t, wrappers.MakeQueueUnit("in-x", ns).Quota(ns+"-team-x").Request(corev1.ResourceCPU, "2").Obj())
	waitPhase(t, ns, "in-y", schedulingv1alpha1.Dequeued)
	waitMessage(t, ns, "in-x", ns+"-team-x", "min names cpu, the min of its parent")
}
