package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/visibility/api/v1alpha1"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestAggregatedAPIAuthorization reads the aggregated visibility API
// (visibility.koord-queue.x-k8s.io/v1alpha1) over HTTPS, its certificate
// made by koord-queue's rotator, as callers the real API server
// authenticates (ServiceAccount tokens through TokenReview, a client
// certificate of the cluster's client CA read from
// kube-system/extension-apiserver-authentication) and authorizes (RBAC):
// a tenant who may list QueueUnits in its namespace only, and admins who
// may everywhere. Through the API server's aggregation layer: the install
// e2e test.
func TestAggregatedAPIAuthorization(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "visibility-api-cert"}}
	create(t, secret)
	// The APIService the rotator writes the CA into; no Service behind it
	// here, so the API server finds it unavailable, which does not matter.
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": v1alpha1.APIServiceName},
		"spec": map[string]any{
			"group": v1alpha1.GroupVersion.Group, "version": v1alpha1.GroupVersion.Version,
			"service":              map[string]any{"namespace": schedulingv1alpha1.QueueNamespace, "name": "koord-queue-visibility-api", "port": int64(443)},
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
		},
	}}
	create(t, apiService)

	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	opts := fastOptions()
	opts.AggregatedAPI = app.AggregatedAPIOptions{
		Address: cluster.Loopback(ports[0]), CertDir: t.TempDir(), Rotate: true,
		Secret: types.NamespacedName{Namespace: secret.Namespace, Name: secret.Name}, DNSName: "localhost",
		RotatorName: "visibility-api-rotator",
	}
	startKoordQueue(t, opts)

	mine, theirs, tenant, admin := twoTenantsInOneQueue(t)
	// The chart's <release>-visibility-reader: get on the API's two
	// resources, here bound to the tenant and the admin only.
	aggregatedReader := clusterRole(t, "visibility-reader-"+mine, rbacv1.PolicyRule{
		APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"queues/queueunits", "elasticquotas/queueunits"}, Verbs: []string{"get"},
	})
	for _, sa := range []string{"tenant", "admin"} {
		create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "visibility-reader-" + mine + "-" + sa}, RoleRef: aggregatedReader,
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: mine, Name: sa}}})
	}
	// May list every QueueUnit, but not get the aggregated API's resources.
	outsider := serviceAccountToken(t, mine, "outsider", clusterRole(t, "queueunit-lister-"+mine, queueUnitReader), "")

	// The rotator wrote the certificate and its CA into the APIService.
	var caBundle []byte
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		got := apiService.DeepCopy()
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(apiService), got); err != nil {
			return err
		}
		encoded, _, _ := unstructured.NestedString(got.Object, "spec", "caBundle")
		if encoded == "" {
			return fmt.Errorf("APIService %s has no caBundle yet", got.GetName())
		}
		var err error
		caBundle, err = base64.StdEncoding.DecodeString(encoded)
		return err
	})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caBundle) {
		t.Fatalf("the APIService's caBundle holds no certificate: %q", caBundle)
	}
	base := "https://" + opts.AggregatedAPI.Address + "/apis/" + v1alpha1.GroupVersion.String()
	tlsConfig := &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}
	// The suite's client certificate: an administrator (system:masters)
	// signed by the cluster's client CA.
	adminCert, err := tls.X509KeyPair(env.Config.CertData, env.Config.KeyData)
	if err != nil {
		t.Fatal(err)
	}

	// get reads path as the caller: a bearer token, or a client certificate.
	get := func(t *testing.T, path, token string, cert *tls.Certificate) (int, []byte) {
		t.Helper()
		cfg := tlsConfig.Clone()
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		var code int
		var body []byte
		// The server starts once its certificate is written and the
		// API server's authentication ConfigMap read: retry until then.
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
			if err != nil {
				return err
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := httpClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			code = resp.StatusCode
			body, err = io.ReadAll(resp.Body)
			return err
		})
		return code, body
	}
	list := func(t *testing.T, path, token string, cert *tls.Certificate) v1alpha1.QueueUnitsSummary {
		t.Helper()
		code, body := get(t, path, token, cert)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		var s v1alpha1.QueueUnitsSummary
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
		return s
	}
	queueUnits := "/queues/" + mine + "/queueunits"
	named := func(ns, name string, priority int32, position int) v1alpha1.QueueUnit {
		return v1alpha1.QueueUnit{Metadata: v1alpha1.ObjectMeta{Namespace: ns, Name: name}, QuotaName: mine, QueueName: mine,
			Phase: schedulingv1alpha1.Enqueued, Priority: priority, Position: position}
	}
	where := cmp.Transformer("where", func(u v1alpha1.QueueUnit) v1alpha1.QueueUnit {
		return v1alpha1.QueueUnit{Metadata: u.Metadata, QuotaName: u.QuotaName, QueueName: u.QueueName, Phase: u.Phase,
			Priority: u.Priority, Position: u.Position, Redacted: u.Redacted}
	})

	t.Run("no credentials or a bad token: 401", func(t *testing.T) {
		for name, token := range map[string]string{"none": "", "bad": "not-a-token"} {
			code, body := get(t, queueUnits, token, nil)
			var status metav1.Status
			_ = json.Unmarshal(body, &status)
			if code != http.StatusUnauthorized || status.Reason != metav1.StatusReasonUnauthorized {
				t.Errorf("token %s: %d %s, want 401 and a Status saying Unauthorized", name, code, body)
			}
		}
	})

	t.Run("a token sent directly, of a caller RBAC does not let get the API's resource: 403", func(t *testing.T) {
		for _, path := range []string{queueUnits, "/elasticquotas/" + mine + "/queueunits"} {
			code, body := get(t, path, outsider, nil)
			var status metav1.Status
			_ = json.Unmarshal(body, &status)
			if code != http.StatusForbidden || status.Reason != metav1.StatusReasonForbidden {
				t.Errorf("GET %s: %d %s, want 403 and a Status saying Forbidden", path, code, body)
			}
		}
	})

	t.Run("the tenant sees its unit named, the other namespace's redacted in its place", func(t *testing.T) {
		got := list(t, queueUnits, tenant, nil)
		want := []v1alpha1.QueueUnit{
			{QuotaName: mine, QueueName: mine, Phase: schedulingv1alpha1.Enqueued, Priority: 5, Position: 1, Redacted: true},
			named(mine, "mine", 1, 2),
		}
		if diff := cmp.Diff(want, got.Items, where); diff != "" || got.Total != 2 || got.Kind != "QueueUnitsSummary" {
			t.Errorf("kind %s, total %d (want 2), units (-want +got):\n%s", got.Kind, got.Total, diff)
		}
		if mineItem := got.Items[1]; mineItem.Reason == "" || mineItem.Request.Cpu().String() != "1" {
			t.Errorf("the tenant's own unit %+v: want its reason and request", mineItem)
		}
	})

	t.Run("the tenant reads the quota's admitted unit of another namespace redacted", func(t *testing.T) {
		got := list(t, "/elasticquotas/"+mine+"/queueunits?phase=Dequeued", tenant, nil)
		want := []v1alpha1.QueueUnit{{QuotaName: mine, QueueName: mine, Phase: schedulingv1alpha1.Dequeued, Priority: 9, Redacted: true}}
		if diff := cmp.Diff(want, got.Items, where); diff != "" {
			t.Errorf("units (-want +got):\n%s", diff)
		}
	})

	for name, caller := range map[string]struct {
		token string
		cert  *tls.Certificate
	}{
		"an admin's token":              {token: admin},
		"an admin's client certificate": {cert: &adminCert},
	} {
		t.Run(name+" sees every unit named, paged with limit and continue", func(t *testing.T) {
			first := list(t, queueUnits+"?limit=1", caller.token, caller.cert)
			if diff := cmp.Diff([]v1alpha1.QueueUnit{named(theirs, "ahead", 5, 1)}, first.Items, where); diff != "" || first.Continue == "" {
				t.Fatalf("first page: continue %q, units (-want +got):\n%s", first.Continue, diff)
			}
			second := list(t, queueUnits+"?limit=1&continue="+first.Continue, caller.token, caller.cert)
			if diff := cmp.Diff([]v1alpha1.QueueUnit{named(mine, "mine", 1, 2)}, second.Items, where); diff != "" || second.Continue != "" {
				t.Errorf("second page: continue %q (want none), units (-want +got):\n%s", second.Continue, diff)
			}
		})
	}

	t.Run("an unknown queue: 404", func(t *testing.T) {
		if code, body := get(t, "/queues/no-such-queue/queueunits", admin, nil); code != http.StatusNotFound {
			t.Errorf("%d %s, want 404", code, body)
		}
	})
}
