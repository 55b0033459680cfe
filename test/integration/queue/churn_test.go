package queue

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queue"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestKoordinatorChurnDoesNotReconcile: koord-scheduler rewrites every
// ElasticQuota's figures about once a second; none of it is the Queue's
// business, so none of it is reconciled. Every reconcile of a quota with an
// unknown policy raises its Warning event again, which makes reconciles
// countable: the event's count stays as it was.
func TestKoordinatorChurnDoesNotReconcile(t *testing.T) {
	startController(t)
	ctx := context.Background()
	eq := wrappers.MakeElasticQuota("churned", metav1.NamespaceDefault).Policy("Prioritty").Obj()
	if err := env.Client.Create(ctx, eq); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), eq) })
	// Two reconciles: the quota's creation and its Queue's.
	waitWarnings(t, eq.Name, `"Prioritty"`, func(n int) bool { return n == 2 })

	for round := range 5 {
		if err := env.Client.Patch(ctx, eq, wrappers.KoordSchedulerPatch(fmt.Sprint(round+1))); err != nil {
			t.Fatal(err)
		}
	}
	// Reconciles of one quota run one at a time and their events are sent
	// in order: once the policy changed after the churn has its warning,
	// any reconcile of the churn has sent its own.
	if err := env.Client.Patch(ctx, eq, client.RawPatch(types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"Blokc"}}}`, schedulingv1alpha1.LabelQueuePolicy)))); err != nil {
		t.Fatal(err)
	}
	waitWarnings(t, eq.Name, `"Blokc"`, func(n int) bool { return n > 0 })
	if n, err := countWarnings(ctx, eq.Name, `"Prioritty"`); err != nil || n != 2 {
		t.Errorf("%d UnknownQueuePolicy warnings for the churned quota's first policy (err %v), want 2: koord-scheduler's patches were reconciled", n, err)
	}
}

func waitWarnings(t *testing.T, quota, mentioning string, ok func(int) bool) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		n, err := countWarnings(ctx, quota, mentioning)
		if err != nil {
			return err
		}
		if !ok(n) {
			return fmt.Errorf("%d UnknownQueuePolicy warnings mentioning %s", n, mentioning)
		}
		return nil
	})
}

// countWarnings sums the UnknownQueuePolicy events of a quota whose message
// mentions a value.
func countWarnings(ctx context.Context, quota, mentioning string) (int, error) {
	events := &corev1.EventList{}
	if err := env.Client.List(ctx, events, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range events.Items {
		if e.InvolvedObject.Name == quota && e.Reason == queue.ReasonUnknownQueuePolicy && strings.Contains(e.Message, mentioning) {
			n += int(max(e.Count, 1))
		}
	}
	return n, nil
}
