package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// BenchmarkStatusRefresh is one tick of the Queue status writer at 1,000
// queues (Kueue's large-scale shape), each with waiting units, once every
// queue's first status is written: what the writer costs every second
// whatever happens.
//
//	go test ./pkg/queue -run '^$' -bench StatusRefresh
func BenchmarkStatusRefresh(b *testing.B) {
	const queues, unitsPerQueue = 1000, 15
	scheme := testScheme(b)
	cache := admission.NewCache()
	builder := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&schedulingv1alpha1.Queue{})
	for i := range queues {
		name := fmt.Sprintf("cq-%d-%d", i/100, i%100)
		q := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: name, ResourceVersion: "999"}}
		builder.WithObjects(q.DeepCopy())
		cache.UpsertElasticQuota(wrappers.MakeElasticQuota(name, name).Max(corev1.ResourceCPU, "20").Obj())
		cache.UpsertQueue(q)
		for u := range unitsPerQueue {
			cache.UpsertUnit(wrappers.MakeQueueUnit(fmt.Sprintf("%s-%d", name, u), name).Quota(name).Request(corev1.ResourceCPU, "50").Obj())
		}
	}
	c := informedClient(builder, cache, nil)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	sw := NewStatusWriter(c, c, record.NewFakeRecorder(10), cache, clk, StatusOptions{RefreshInterval: time.Hour, TopN: 20})
	sw.lastWrite, sw.lastQuotaErrs, sw.warnedDuplicates = map[string]time.Time{}, map[string]string{}, map[types.UID]bool{}
	ctx := context.Background()
	sw.refresh(ctx, logr.Discard()) // every queue's first status
	b.ReportAllocs()
	for b.Loop() {
		clk.Step(time.Second)
		sw.refresh(ctx, logr.Discard())
	}
}
