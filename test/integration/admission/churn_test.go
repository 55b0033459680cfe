package admission

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// watchedUpdates reads koord_queue_watched_updates_total: what the
// admission cache applied and ignored of one kind.
func watchedUpdates(kind string) (applied, ignored float64) {
	return testutil.ToFloat64(metrics.WatchedUpdates.WithLabelValues(kind, metrics.UpdateApplied)),
		testutil.ToFloat64(metrics.WatchedUpdates.WithLabelValues(kind, metrics.UpdateIgnored))
}

// TestKoordinatorChurnCostsNothing: koord-scheduler merge-patches every
// ElasticQuota's figures and status.used about once a second, and nodes
// send heartbeats. The admission cache ignores all of it (no quota tree
// rebuilt, no queue woken), and still admits and follows a real change.
func TestKoordinatorChurnCostsNothing(t *testing.T) {
	const rounds = 3
	cache := startKoordQueue(t, fastOptions())
	ns := namespace(t)
	var quotas []string
	for i := range 3 {
		name := fmt.Sprintf("%s-%d", ns, i)
		quotas = append(quotas, name)
		create(t, wrappers.MakeElasticQuota(name, ns).Max(corev1.ResourceCPU, "4").Obj())
	}
	waitQuotaMax(t, cache, quotas[0], "4")
	waitQuotaMax(t, cache, quotas[len(quotas)-1], "4")
	quotaApplied, quotaIgnored := watchedUpdates(metrics.KindElasticQuota)
	nodeApplied, nodeIgnored := watchedUpdates(metrics.KindNode)

	ctx := context.Background()
	for round := range rounds {
		for _, name := range quotas {
			eq := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			if err := env.Client.Patch(ctx, eq, wrappers.KoordSchedulerPatch(fmt.Sprint(round+1))); err != nil {
				t.Fatal(err)
			}
		}
		heartbeat(t, "node-1", round)
	}
	// Every event is applied or ignored: once all are counted, all were seen.
	wantQuotaEvents, wantNodeEvents := float64(rounds*len(quotas)), float64(rounds*2)
	testenv.Eventually(t, testenv.DefaultTimeout, func(context.Context) error {
		qa, qi := watchedUpdates(metrics.KindElasticQuota)
		na, ni := watchedUpdates(metrics.KindNode)
		if got := qa - quotaApplied + qi - quotaIgnored; got != wantQuotaEvents {
			return fmt.Errorf("%v ElasticQuota events seen, want %v", got, wantQuotaEvents)
		}
		if got := na - nodeApplied + ni - nodeIgnored; got != wantNodeEvents {
			return fmt.Errorf("%v Node events seen, want %v", got, wantNodeEvents)
		}
		return nil
	})
	qa, _ := watchedUpdates(metrics.KindElasticQuota)
	na, _ := watchedUpdates(metrics.KindNode)
	if qa != quotaApplied || na != nodeApplied {
		t.Errorf("of koord-scheduler's patches %v rebuilt the quota tree, of the heartbeats %v changed the capacity; want none",
			qa-quotaApplied, na-nodeApplied)
	}

	// Still admitting, and a real change is applied.
	create(t, wrappers.MakeQueueUnit("after-churn", ns).Quota(quotas[0]).Request(corev1.ResourceCPU, "1").Obj())
	waitPhase(t, ns, "after-churn", schedulingv1alpha1.Dequeued)
	if err := env.Client.Patch(ctx, &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: quotas[1]}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"max":{"cpu":"6"}}}`))); err != nil {
		t.Fatal(err)
	}
	waitQuotaMax(t, cache, quotas[1], "6")
}

// waitQuotaMax waits until the cache has the quota with that cpu max.
func waitQuotaMax(t *testing.T, cache *admission.Cache, name, max string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(context.Context) error {
		for _, q := range cache.Quotas() {
			if q.Name == name {
				if got := q.Max.Cpu().String(); got != max {
					return fmt.Errorf("quota %s has max cpu %s, want %s", name, got, max)
				}
				return nil
			}
		}
		return fmt.Errorf("quota %s not in the cache", name)
	})
}

// heartbeat writes what a kubelet writes of a node all the time: an
// annotation, and its Ready condition's heartbeat time.
func heartbeat(t *testing.T, name string, round int) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	orig := node.DeepCopy()
	metav1.SetMetaDataAnnotation(&node.ObjectMeta, "node.example.com/heartbeat", fmt.Sprint(round))
	if err := env.Client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	orig = node.DeepCopy()
	for i := range node.Status.Conditions {
		node.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(time.Unix(int64(1000+round), 0))
	}
	if err := env.Client.Status().Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
}
