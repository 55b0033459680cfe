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

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/patch"
	"github.com/koord-queue/koord-queue/pkg/queue"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
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
		if !meta.IsStatusConditionTrue(q.Status.Conditions, queue.QueueConditionReady) {
			return fmt.Errorf("conditions %+v, want Ready", q.Status.Conditions)
		}
		return nil
	})
}

// TestQueueColumnsShowZero: `kubectl get queues` shows 0, not a blank, in
// the Pending and Admitted columns of a queue with nothing in it.
func TestQueueColumnsShowZero(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "2").Obj())
	path := fmt.Sprintf("/apis/%s/namespaces/%s/queues/%s", schedulingv1alpha1.GroupVersion, schedulingv1alpha1.QueueNamespace, ns)
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		got, err := tableRow(ctx, path)
		if err != nil {
			return err
		}
		if got["Pending"] != float64(0) || got["Admitted"] != float64(0) {
			return fmt.Errorf("columns %v, want Pending and Admitted 0", got)
		}
		return nil
	})
}

// TestQueueUnitColumnsSummarizeAdmissions: `kubectl get queueunits` shows a
// unit's admissions as each pod set's running/admitted replicas, not as the
// raw JSON list.
func TestQueueUnitColumnsSummarizeAdmissions(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "8").Obj())
	create(t, wrappers.MakeQueueUnit("unit", ns).Quota(ns).PodSet("master", 1, "cpu", "1").PodSet("worker", 3, "cpu", "1").Obj())
	waitPhase(t, ns, "unit", schedulingv1alpha1.Dequeued)
	path := fmt.Sprintf("/apis/%s/namespaces/%s/queueunits/unit", schedulingv1alpha1.GroupVersion, ns)
	wantColumn := func(want string) {
		t.Helper()
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			got, err := tableRow(ctx, path)
			if err != nil {
				return err
			}
			if got["ADMISSIONS"] != want {
				return fmt.Errorf("ADMISSIONS %q, want %q", got["ADMISSIONS"], want)
			}
			return nil
		})
	}
	wantColumn("master 0/1, worker 0/3")

	// The job's extension counts the running pods (the same write path).
	u := &schedulingv1alpha1.QueueUnit{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "unit"}, u); err != nil {
		t.Fatal(err)
	}
	if _, err := patch.Patch(context.Background(), env.Client, env.Client, u, patch.Status, "test", func(u *schedulingv1alpha1.QueueUnit) bool {
		for i := range u.Status.Admissions {
			u.Status.Admissions[i].Running = u.Status.Admissions[i].Replicas - 1
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	wantColumn("master 0/1, worker 2/3")
}

// tableRow reads the object at path as kubectl get does (a server-side
// Table) and returns its one row, by column name.
func tableRow(ctx context.Context, path string) (map[string]any, error) {
	httpClient, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(env.Config.Host, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		return nil, fmt.Errorf("reading the table at %s (%s): %w", url, resp.Status, err)
	}
	if len(table.Rows) != 1 {
		return nil, fmt.Errorf("table rows %v, want one", table.Rows)
	}
	row := map[string]any{}
	for i, col := range table.ColumnDefinitions {
		row[col.Name] = table.Rows[0].Cells[i]
	}
	return row, nil
}

// TestQueueColumnsShowTheTree: `kubectl get queues` shows each queue's quota
// tree by its pool (the profile koord-manager labels the tree's root with),
// and `-o wide` the tree's root and, on the root's queue, what the tree's
// units hold of its capacity.
func TestQueueColumnsShowTheTree(t *testing.T) {
	startKoordQueue(t, fastOptions())
	ns := namespace(t)
	root, team := ns+"-a100", ns+"-gpu-team"
	create(t,
		wrappers.MakeElasticQuota(root, ns).IsParent().
			Label(elasticquotav1alpha1.LabelQuotaTreeID, ns+"-t1").Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").
			Label(elasticquotav1alpha1.LabelQuotaProfile, ns+"-pool").
			Annotation(elasticquotav1alpha1.AnnotationTotalResource, `{"cpu":"8"}`).Obj(),
		wrappers.MakeElasticQuota(team, ns).Parent(root).Label(elasticquotav1alpha1.LabelQuotaTreeID, ns+"-t1").Obj(),
	)
	create(t, wrappers.MakeQueueUnit("job", ns).Quota(team).Request(corev1.ResourceCPU, "6").Obj())
	waitPhase(t, ns, "job", schedulingv1alpha1.Dequeued)
	// The root's total-resource names cpu only: the tree has no memory
	// and no pods. Only the root's queue carries the tree's usage.
	for queue, want := range map[string]map[string]any{
		team: {"Tree": ns + "-pool", "Tree Root": root, "Tree Usage": nil},
		root: {"Tree": ns + "-pool", "Tree Root": root, "Tree Usage": "cpu 6/8, memory 0/0, pods 0/0"},
	} {
		path := fmt.Sprintf("/apis/%s/namespaces/%s/queues/%s", schedulingv1alpha1.GroupVersion, schedulingv1alpha1.QueueNamespace, queue)
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			row, err := tableRow(ctx, path)
			if err != nil {
				return err
			}
			got := map[string]any{"Tree": row["Tree"], "Tree Root": row["Tree Root"], "Tree Usage": row["Tree Usage"]}
			if diff := cmp.Diff(want, got); diff != "" {
				return fmt.Errorf("queue %s: columns (-want +got):\n%s", queue, diff)
			}
			return nil
		})
	}
}
