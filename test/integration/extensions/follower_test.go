package extensions

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/pkg/extensions/webhook"
	"github.com/koord-queue/koord-queue/test/cluster"
)

// TestWebhookOnFollower: a second replica, sharing the suite's certificate
// Secret and never elected (another holds its Lease), gets the certificate
// files in its own directory and becomes ready, as every replica behind the
// chart's Service must.
func TestWebhookOnFollower(t *testing.T) {
	t.Parallel()
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "koord-queue-webhook-follower-test", Namespace: webhookSecret.Namespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("another-replica"),
			LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
	create(t, lease)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), lease) })

	ports, err := cluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	probeAddr := fmt.Sprintf("127.0.0.1:%d", ports[1])
	certDir := t.TempDir()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                  env.Scheme,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  probeAddr,
		WebhookServer:           ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: ports[0], CertDir: certDir}),
		LeaderElection:          true,
		LeaderElectionID:        lease.Name,
		LeaderElectionNamespace: lease.Namespace,
	})
	if err != nil {
		t.Fatal(err)
	}
	scope, err := integrations.Scope(integrations.All(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	err = webhook.Setup(mgr, webhook.Options{
		CertDir: certDir, Rotate: true, Secret: webhookSecret, ConfigName: webhookConfigName, DNSName: "localhost",
		// The suite's manager in this process runs a rotator too.
		RotatorName: "cert-rotator-follower",
	}, integrations.All(), scope)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("the follower's manager: %v", err)
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})

	httpClient := &http.Client{Timeout: time.Second}
	var status string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+probeAddr+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			status = err.Error()
			return false, nil
		}
		resp.Body.Close()
		status = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("the follower never became ready (last /readyz: %s): %v", status, err)
	}
	select {
	case <-mgr.Elected():
		t.Fatal("the second manager was elected: the test needs it a follower")
	default:
	}
}
