package admission

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/test/testenv"
	"github.com/koord-queue/koord-queue/test/wrappers"
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
