package admission

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestSecureMetrics reads /metrics served as the binaries serve it by
// default (metrics.ServerOptions, secure): HTTPS, and only for a token the
// API server accepts whose user may get /metrics.
func TestSecureMetrics(t *testing.T) {
	addr := startSecureMetricsManager(t)
	ns := namespace(t)
	reader := clusterRole(t, "metrics-reader-"+ns, metricsReaderRule)
	allowed := serviceAccountToken(t, ns, "prometheus", reader, "")
	denied := serviceAccountToken(t, ns, "tenant", clusterRole(t, "queueunit-reader-"+ns, queueUnitReader), ns)

	cases := map[string]struct {
		token      string
		wantStatus int
	}{
		"no token":                    {wantStatus: http.StatusUnauthorized},
		"a token the server rejects":  {token: "not-a-token", wantStatus: http.StatusUnauthorized},
		"a user without /metrics":     {token: denied, wantStatus: http.StatusForbidden},
		"a user who may get /metrics": {token: allowed, wantStatus: http.StatusOK},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
				status, body, err := getMetrics(ctx, addr, tc.token)
				if err != nil {
					return err
				}
				if status != tc.wantStatus {
					return fmt.Errorf("status %d, want %d", status, tc.wantStatus)
				}
				if status == http.StatusOK && !strings.Contains(body, "koord_queue_") {
					return fmt.Errorf("no koord_queue_ metric in %d bytes", len(body))
				}
				return nil
			})
		})
	}
}

// metricsReaderRule lets Prometheus read /metrics, as the chart's
// metrics-reader ClusterRole does.
var metricsReaderRule = rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}

// startSecureMetricsManager starts koord-queue's manager with /metrics served
// as the binary serves it by default (HTTPS, authenticated and authorized)
// on a free loopback port, stopped when t ends; it returns the address.
func startSecureMetricsManager(t *testing.T) string {
	t.Helper()
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := cluster.Loopback(ports[0])
	stop, err := env.StartManager(context.Background(), func(mgr manager.Manager) error {
		_, err := app.Setup(context.Background(), mgr, fastOptions())
		return err
	}, func(o *manager.Options) { o.Metrics = metrics.ServerOptions(addr, true, "") })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}

// getMetrics reads https://addr/metrics with a bearer token ("" for none).
// The certificate is self-signed: what the tests check is who may read and
// what is served.
func getMetrics(ctx context.Context, addr, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
