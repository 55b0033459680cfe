package admission

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestRestartRebuildsUsage: a restarted koord-queue counts every admitted
// unit before it admits anything, so nothing is over-admitted afterwards.
func TestRestartRebuildsUsage(t *testing.T) {
	const admitted, extra, finished = 200, 40, 10
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, fmt.Sprint(admitted)).Obj())

	stop, err := env.StartManager(context.Background(), func(mgr manager.Manager) error {
		_, err := app.Setup(context.Background(), mgr, fastOptions())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range admitted {
		create(t, wrappers.MakeQueueUnit(fmt.Sprintf("first-%03d", i), ns).Quota(ns).Request(corev1.ResourceCPU, "1").Obj())
	}
	waitHolding(t, ns, admitted)
	stop()

	// While koord-queue is down, more units arrive.
	for i := range extra {
		create(t, wrappers.MakeQueueUnit(fmt.Sprintf("later-%03d", i), ns).Quota(ns).Request(corev1.ResourceCPU, "1").Obj())
	}
	startKoordQueue(t, fastOptions())
	waitMessage(t, ns, "later-000", "cpu")
	waitMessage(t, ns, fmt.Sprintf("later-%03d", extra-1), "position")
	if n := countHolding(t, ns); n != admitted {
		t.Fatalf("%d units hold quota after the restart, want %d: the quota's max", n, admitted)
	}
	for i := range finished {
		finish(t, ns, fmt.Sprintf("first-%03d", i))
	}
	waitHolding(t, ns, admitted)
	// Exactly as many later units as were freed were admitted.
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		n := 0
		for i := range extra {
			u, err := getUnit(ctx, ns, fmt.Sprintf("later-%03d", i))
			if err != nil {
				return err
			}
			if queueunit.HoldsQuota(u) {
				n++
			}
		}
		if n != finished {
			return fmt.Errorf("%d later units admitted, want %d", n, finished)
		}
		return nil
	})
	if n := countHolding(t, ns); n != admitted {
		t.Fatalf("%d units hold quota, want %d", n, admitted)
	}
}

// countHolding sums the cpu that the namespace's units hold, in whole cores.
func countHolding(t *testing.T, ns string) int {
	t.Helper()
	list := &schedulingv1alpha1.QueueUnitList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	total := resource.Quantity{}
	for _, u := range list.Items {
		for _, a := range u.Status.Admissions {
			total.Add(a.Resources[corev1.ResourceCPU])
		}
	}
	return int(total.Value())
}

func waitHolding(t *testing.T, ns string, want int) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(context.Context) error {
		if n := countHolding(t, ns); n != want {
			return fmt.Errorf("%d cpu held, want %d", n, want)
		}
		return nil
	})
}
