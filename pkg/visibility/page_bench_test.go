package visibility

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

// BenchmarkLargestPageServed: the largest page a caller can get of a queue
// of 50,000 waiting units (limit MaxLimit), served whole by each API: B/op
// is what one request allocates (the page, its views and its JSON),
// resp-bytes the answer's length. The admission lock's hold for the same
// page is BenchmarkQueueUnitsPage50000Waiting's "largest page".
func BenchmarkLargestPageServed(b *testing.B) {
	c := admission.NewCache()
	c.UpsertNode(wrappers.Node("n1", "1000", "1000Ti"))
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "quotas").Max(corev1.ResourceCPU, "1000").Obj())
	c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
	t0 := time.Unix(1_000_000, 0)
	for i := range 50_000 {
		u := wrappers.MakeQueueUnit(fmt.Sprintf("job-%06d", i), fmt.Sprintf("tenant-%d", i%10)).Quota("team").
			Request(corev1.ResourceCPU, "1").Priority(int32(i % 7)).Obj()
		u.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(i) * time.Millisecond))
		c.UpsertUnit(u)
	}
	limit := "?limit=" + strconv.Itoa(MaxLimit)
	for _, tc := range []struct {
		name, path string
		handler    http.Handler
	}{
		{name: "REST", path: "/api/queues/team/queueunits" + limit, handler: NewHandler(c, nil)},
		{name: "aggregated", path: "/apis/visibility.koord-queue.x-k8s.io/v1alpha1/queues/team/queueunits" + limit,
			handler: NewAggregatedHandler(c, headerUser, authz.NewAuthorizer(namespaceReviewer{"admin": {""}}), nil)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var size int
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, tc.path, nil)
				req.Header.Set("X-Test-User", "admin")
				tc.handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %.200s", rec.Code, rec.Body)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "resp-bytes")
		})
	}
}
