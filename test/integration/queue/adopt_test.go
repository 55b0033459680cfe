package queue

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queue"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestAdoptKoordQueueQueue starts from what Koord-Queue v1.8 leaves: an
// ElasticQuota and the Queue it made for it (the quota's parent label, its
// quota-koord-queue-enable annotation, policy Priority, no managed-by
// label), the quota's policy label changed to Block since. koord-queue takes
// the Queue over and follows the quota from then on.
func TestAdoptKoordQueueQueue(t *testing.T) {
	ctx := context.Background()
	eq := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: "v18-team", Namespace: "default",
		Labels: map[string]string{elasticquotav1alpha1.LabelQuotaParent: "", schedulingv1alpha1.LabelQueuePolicy: "Block"}}}
	q := &schedulingv1alpha1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: "v18-team", Namespace: schedulingv1alpha1.QueueNamespace,
			Labels:      map[string]string{elasticquotav1alpha1.LabelQuotaParent: ""},
			Annotations: map[string]string{queue.AnnotationKoordQueueEnable: ""}},
		Spec: schedulingv1alpha1.QueueSpec{QueuePolicy: schedulingv1alpha1.QueuePolicyPriority, Priority: ptr.To[int32](1000)},
	}
	startController(t) // makes namespace koord-queue; the objects predate the quota's first event
	for _, o := range []client.Object{q, eq} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	follows := func(policy schedulingv1alpha1.QueuePolicy) {
		t.Helper()
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			got, err := getQueue(ctx, "v18-team")
			if err != nil {
				return err
			}
			if got.Spec.QueuePolicy != policy || got.Labels[queue.LabelManagedBy] != queue.ManagedByElasticQuota {
				return fmt.Errorf("queue policy %q, managed-by %q; want %q and %q", got.Spec.QueuePolicy,
					got.Labels[queue.LabelManagedBy], policy, queue.ManagedByElasticQuota)
			}
			return nil
		})
	}
	follows(schedulingv1alpha1.QueuePolicyBlock)

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(eq), eq); err != nil {
			return err
		}
		eq.Labels[schedulingv1alpha1.LabelQueuePolicy] = "Intelligent"
		return env.Client.Update(ctx, eq)
	})
	if err != nil {
		t.Fatal(err)
	}
	follows(schedulingv1alpha1.QueuePolicyIntelligent)
}
