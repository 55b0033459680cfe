package admission

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/probes"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/visibility"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestVisibilityAPIAndMetrics reads the REST API and /metrics over plain
// HTTP (--visibility-insecure-serving).
func TestVisibilityAPIAndMetrics(t *testing.T) {
	opts := fastOptions()
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	opts.VisibilityAddress = cluster.Loopback(ports[0])
	// What is shown; who may see it is TestVisibilityAPIAuthorization's.
	opts.VisibilityInsecureAllowUnauthenticated = true
	opts.VisibilityInsecureServing = true
	startKoordQueue(t, opts)
	api := &visibility.Client{BaseURL: "http://" + opts.VisibilityAddress}
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Min(corev1.ResourceCPU, "2").Max(corev1.ResourceCPU, "4").Policy(schedulingv1alpha1.QueuePolicyBlock).Obj())
	create(t, wrappers.MakeQueueUnit("running", ns).Quota(ns).Priority(5).Request(corev1.ResourceCPU, "3").Obj())
	waitPhase(t, ns, "running", schedulingv1alpha1.Dequeued)
	create(t, wrappers.MakeQueueUnit("head", ns).Quota(ns).Priority(5).Request(corev1.ResourceCPU, "2").Obj())
	create(t, wrappers.MakeQueueUnit("second", ns).Quota(ns).Priority(1).Request(corev1.ResourceCPU, "1").Obj())
	waitMessage(t, ns, "head", "cpu")

	t.Run("queues list policy, counts and quota", func(t *testing.T) {
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			queues, err := api.Queues(ctx)
			if err != nil {
				return err
			}
			for _, q := range queues {
				if q.Name != ns {
					continue
				}
				if q.Policy != schedulingv1alpha1.QueuePolicyBlock || q.Pending != 2 || q.Admitted != 1 || q.Quota == nil || q.Quota.Used.Cpu().String() != "3" {
					return fmt.Errorf("queue %+v (quota %+v), want Block, 2 pending, 1 admitted, cpu 3 used", q, q.Quota)
				}
				return nil
			}
			return fmt.Errorf("queue %s not listed", ns)
		})
	})

	t.Run("a queue's units in order, with positions and reasons", func(t *testing.T) {
		list, err := api.QueueUnits(context.Background(), ns, schedulingv1alpha1.Enqueued, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if list.Total != 2 || len(list.Items) != 2 || list.Items[0].Name != "head" || list.Items[0].Position != 1 || list.Items[1].Position != 2 {
			t.Fatalf("units %+v, want head at 1 and second at 2", list.Items)
		}
		if !strings.Contains(list.Items[0].Reason, "cpu") {
			t.Errorf("head's reason %q, want it to name cpu", list.Items[0].Reason)
		}
		list, err = api.QueueUnits(context.Background(), ns, "", 1, 1)
		if err != nil || len(list.Items) != 1 || list.Items[0].Name != "second" || list.Total != 3 {
			t.Fatalf("page limit=1 offset=1: err %v items %+v total %d, want [second] of 3", err, list.Items, list.Total)
		}
		list, err = api.QueueUnits(context.Background(), ns, "", 0, visibility.MaxLimit+1)
		if err != nil || len(list.Items) != 3 || list.Limit != visibility.MaxLimit {
			t.Fatalf("page limit=%d: err %v, %d items of limit %d, want 3 of limit %d", visibility.MaxLimit+1, err, len(list.Items), list.Limit, visibility.MaxLimit)
		}
	})

	t.Run("one unit: where it is and why", func(t *testing.T) {
		u, err := api.QueueUnit(context.Background(), ns, "second")
		if err != nil {
			t.Fatal(err)
		}
		if u.Position != 2 || u.Phase != schedulingv1alpha1.Enqueued || u.Queue != ns || u.Reason == "" {
			t.Errorf("unit %+v, want Enqueued at position 2 in %s with a reason", u, ns)
		}
	})

	t.Run("the quota tree", func(t *testing.T) {
		quotas, err := api.Quotas(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range quotas {
			if q.Name == ns {
				if q.Min.Cpu().String() != "2" || q.Max.Cpu().String() != "4" || q.Used.Cpu().String() != "3" || q.Runtime == nil {
					t.Errorf("quota %+v, want min 2 max 4 used 3 and a runtime", q)
				}
				return
			}
		}
		t.Errorf("quota %s not listed", ns)
	})

	t.Run("bad requests get clear 4xx errors", func(t *testing.T) {
		for path, want := range map[string]int{
			"/api/queues/nope":                                http.StatusNotFound,
			"/api/queues/" + ns + "/queueunits?limit=0":       http.StatusBadRequest,
			"/api/queues/" + ns + "/queueunits?offset=-1":     http.StatusBadRequest,
			"/api/queues/" + ns + "/queueunits?phase=Waiting": http.StatusBadRequest,
			"/api/queueunits/" + ns + "/nope":                 http.StatusNotFound,
		} {
			var got *visibility.StatusError
			if err := api.Get(context.Background(), path, &struct{}{}); !errors.As(err, &got) || got.Code != want || got.Message == "" {
				t.Errorf("GET %s: %v, want status %d with an error message", path, err, want)
			}
		}
	})

	t.Run("metrics", func(t *testing.T) {
		srv := httptest.NewServer(promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}))
		defer srv.Close()
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/metrics", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			for _, want := range []string{
				fmt.Sprintf(`koord_queue_pending_units{queue=%q} 2`, ns),
				fmt.Sprintf(`koord_queue_admitted_units{queue=%q} 1`, ns),
				fmt.Sprintf(`koord_queue_quota_resource{kind="used",quota=%q,resource="cpu"} 3`, ns),
				`koord_queue_admission_attempts_total{result="admitted"}`,
				`koord_queue_admission_wait_time_seconds_bucket`,
				`koord_queue_scheduling_cycle_duration_seconds_count`,
			} {
				if !strings.Contains(string(body), want) {
					return fmt.Errorf("/metrics lacks %s", want)
				}
			}
			return nil
		})
	})
}

// TestReadyOnceTheVisibilityAPIListens: /readyz passes only with the
// visibility API listening, so what is sent to a ready replica is answered.
func TestReadyOnceTheVisibilityAPIListens(t *testing.T) {
	opts := fastOptions()
	ports, err := cluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	opts.VisibilityAddress = cluster.Loopback(ports[0])
	opts.VisibilityInsecureAllowUnauthenticated = true
	opts.VisibilityInsecureServing = true
	probeAddr := cluster.Loopback(ports[1])
	stop, err := env.StartManager(context.Background(), func(mgr manager.Manager) error {
		if _, err := app.Setup(context.Background(), mgr, opts); err != nil {
			return err
		}
		return probes.Add(mgr) // as the binary does
	}, func(o *manager.Options) { o.HealthProbeBindAddress = probeAddr })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	var checks string
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+probeAddr+"/readyz?verbose", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz %s:\n%s", resp.Status, body)
		}
		checks = string(body)
		return nil
	})
	if !strings.Contains(checks, "[+]visibility-api ok") {
		t.Errorf("/readyz passed without checking the visibility API:\n%s", checks)
	}
	api := &visibility.Client{BaseURL: "http://" + opts.VisibilityAddress}
	if _, err := api.Queues(context.Background()); err != nil {
		t.Errorf("ready, but the visibility API does not answer: %v", err)
	}
}
