package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/test/testenv"
	"github.com/koord-queue/koord-queue/test/wrappers"
)

// TestQueueStatus: a Queue's status lists its pending units in order with
// 1-based positions, counts pending and admitted units, and says whether
// its quota is usable.
func TestQueueStatus(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "2").Obj())
	create(t, wrappers.MakeQueueUnit("admitted", ns).Quota(ns).Request(corev1.ResourceCPU, "2").Obj())
	waitPhase(t, ns, "admitted", schedulingv1alpha1.Dequeued)
	create(t,
		wrappers.MakeQueueUnit("low", ns).Quota(ns).Priority(1).Request(corev1.ResourceCPU, "1").Obj(),
		wrappers.MakeQueueUnit("high", ns).Quota(ns).Priority(9).Request(corev1.ResourceCPU, "1").Obj(),
	)
	want := []schedulingv1alpha1.QueueItemDetail{
		{Name: "high", Namespace: ns, Priority: 9, Position: 1},
		{Name: "low", Namespace: ns, Priority: 1, Position: 2},
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		q := &schedulingv1alpha1.Queue{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: schedulingv1alpha1.QueueNamespace, Name: ns}, q); err != nil {
			return err
		}
		if diff := cmp.Diff(want, q.Status.QueueItemDetails[schedulingv1alpha1.QueueItemDetailsActive]); diff != "" {
			return fmt.Errorf("queueItemDetails[active] (-want +got):\n%s", diff)
		}
		if q.Status.Pending != 2 || q.Status.Admitted != 1 {
			return fmt.Errorf("pending %d admitted %d, want 2 and 1", q.Status.Pending, q.Status.Admitted)
		}
		if !meta.IsStatusConditionTrue(q.Status.Conditions, admission.QueueConditionReady) {
			return fmt.Errorf("conditions %+v, want Ready", q.Status.Conditions)
		}
		return nil
	})
}

// TestQueueColumnsShowZero: `kubectl get queues` shows 0, not a blank, in
// the Pending and Admitted columns of a queue with no units (the API
// server's table of a Queue is what kubectl prints).
func TestQueueColumnsShowZero(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "2").Obj())
	httpClient, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("%s/apis/%s/namespaces/%s/queues/%s", strings.TrimSuffix(env.Config.Host, "/"), schedulingv1alpha1.GroupVersion, schedulingv1alpha1.QueueNamespace, ns)
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		resp, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var table metav1.Table
		if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
			return fmt.Errorf("reading the table at %s (%s): %w", url, resp.Status, err)
		}
		if len(table.Rows) != 1 {
			return fmt.Errorf("table rows %v, want the queue's", table.Rows)
		}
		got := map[string]any{}
		for i, col := range table.ColumnDefinitions {
			got[col.Name] = table.Rows[0].Cells[i]
		}
		if got["Pending"] != float64(0) || got["Admitted"] != float64(0) {
			return fmt.Errorf("columns %v, want Pending and Admitted 0", got)
		}
		return nil
	})
}
