package admission

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/visibility"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestVisibilityAPIAuthorization reads the REST API, served over TLS with
// the certificate of its cert dir, as two users the real API server
// authenticates (ServiceAccount tokens) and authorizes (RBAC): a tenant who
// may list QueueUnits in its namespace only, and an admin who may
// everywhere.
func TestVisibilityAPIAuthorization(t *testing.T) {
	opts := fastOptions()
	base, httpClient := startTLSVisibilityAPI(t, &opts)
	startKoordQueue(t, opts)
	as := func(token string) *visibility.Client {
		return &visibility.Client{BaseURL: base, HTTP: httpClient, Token: token}
	}

	mine, theirs, tenant, admin := twoTenantsInOneQueue(t)
	ctx := context.Background()

	t.Run("no token, a bad one, or one meant for another audience: 401", func(t *testing.T) {
		elsewhere := tokenOf(t, mine, "admin", "https://vault.example")
		for name, token := range map[string]string{"none": "", "bad": "not-a-token", "another audience": elsewhere} {
			_, err := as(token).Queues(ctx)
			var status *visibility.StatusError
			if !errors.As(err, &status) || status.Code != 401 {
				t.Errorf("token %s: %v, want 401", name, err)
			}
		}
	})

	t.Run("plain HTTP is not served", func(t *testing.T) {
		if _, err := (&visibility.Client{BaseURL: "http" + strings.TrimPrefix(base, "https"), Token: admin}).Queues(ctx); err == nil {
			t.Error("a plain HTTP request was answered")
		}
	})

	t.Run("the tenant sees its unit named, the other namespace's redacted", func(t *testing.T) {
		list, err := as(tenant).QueueUnits(ctx, mine, schedulingv1alpha1.Enqueued, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := []api.UnitView{
			{Queue: mine, Phase: schedulingv1alpha1.Enqueued, Priority: 5, Position: 1, Redacted: true},
			{Namespace: mine, Name: "mine", Queue: mine, Phase: schedulingv1alpha1.Enqueued, Priority: 1, Position: 2},
		}
		if diff := cmp.Diff(want, list.Items, cmpUnitWhere()); diff != "" || list.Total != 2 {
			t.Errorf("total %d (want 2), units (-want +got):\n%s", list.Total, diff)
		}
	})

	t.Run("the tenant asking for a unit of another namespace: 403", func(t *testing.T) {
		_, err := as(tenant).QueueUnit(ctx, theirs, "ahead")
		var status *visibility.StatusError
		if !errors.As(err, &status) || status.Code != 403 {
			t.Errorf("%v, want 403", err)
		}
	})

	t.Run("the admin sees every unit named", func(t *testing.T) {
		list, err := as(admin).QueueUnits(ctx, mine, schedulingv1alpha1.Enqueued, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := []api.UnitView{
			{Namespace: theirs, Name: "ahead", Queue: mine, Phase: schedulingv1alpha1.Enqueued, Priority: 5, Position: 1},
			{Namespace: mine, Name: "mine", Queue: mine, Phase: schedulingv1alpha1.Enqueued, Priority: 1, Position: 2},
		}
		if diff := cmp.Diff(want, list.Items, cmpUnitWhere()); diff != "" {
			t.Errorf("units (-want +got):\n%s", diff)
		}
	})

	t.Run("a renewed certificate is served without a restart", func(t *testing.T) {
		caPEM, err := cluster.WriteServingCert(opts.VisibilityCertDir)
		if err != nil {
			t.Fatal(err)
		}
		renewed, err := visibility.HTTPClientTrusting(caPEM)
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			_, err := (&visibility.Client{BaseURL: base, HTTP: renewed, Token: admin}).Queues(ctx)
			return err
		})
	})
}

// twoTenantsInOneQueue fills the queue of quota mine (a new namespace's
// name) with units of two namespaces: "holder" (theirs) admitted, "ahead"
// (theirs) waiting first, "mine" (mine) waiting second. It returns the
// namespaces and tokens of a tenant who may list QueueUnits in mine only
// and of an admin who may everywhere.
func twoTenantsInOneQueue(t *testing.T) (mine, theirs, tenant, admin string) {
	t.Helper()
	mine = namespace(t)
	theirs = "other-" + mine
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: theirs}})
	create(t, wrappers.MakeElasticQuota(mine, mine).Min(corev1.ResourceCPU, "1").Max(corev1.ResourceCPU, "1").Obj())
	create(t, wrappers.MakeQueueUnit("holder", theirs).Quota(mine).Priority(9).Request(corev1.ResourceCPU, "1").Obj())
	waitPhase(t, theirs, "holder", schedulingv1alpha1.Dequeued)
	create(t, wrappers.MakeQueueUnit("ahead", theirs).Quota(mine).Priority(5).Request(corev1.ResourceCPU, "1").Obj())
	create(t, wrappers.MakeQueueUnit("mine", mine).Quota(mine).Priority(1).Request(corev1.ResourceCPU, "1").Obj())
	waitMessage(t, mine, "mine", "position 2")
	waitMessage(t, theirs, "ahead", "cpu")

	reader := clusterRole(t, "queueunit-reader-"+mine, queueUnitReader)
	tenant = serviceAccountToken(t, mine, "tenant", reader, mine)
	admin = serviceAccountToken(t, mine, "admin", reader, "")
	return mine, theirs, tenant, admin
}

// cmpUnitWhere compares where units are and whose they are, not what
// they ask for or why they wait (TestVisibilityAPIAndMetrics's).
func cmpUnitWhere() cmp.Option {
	return cmp.Transformer("where", func(u api.UnitView) api.UnitView {
		return api.UnitView{Namespace: u.Namespace, Name: u.Name, Queue: u.Queue, Phase: u.Phase, Priority: u.Priority, Position: u.Position, Redacted: u.Redacted}
	})
}

// queueUnitReader is the rule the visibility API asks about.
var queueUnitReader = rbacv1.PolicyRule{APIGroups: []string{schedulingv1alpha1.GroupVersion.Group}, Resources: []string{"queueunits"}, Verbs: []string{"get", "list"}}

// clusterRole creates a ClusterRole of rules, deleted when the test ends.
func clusterRole(t *testing.T, name string, rules ...rbacv1.PolicyRule) rbacv1.RoleRef {
	t.Helper()
	create(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules})
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}

// serviceAccountToken creates ServiceAccount name in ns, bound to role in
// bindNamespace ("" for a ClusterRoleBinding), and returns a token of it.
func serviceAccountToken(t *testing.T, ns, name string, role rbacv1.RoleRef, bindNamespace string) string {
	t.Helper()
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}
	if bindNamespace == "" {
		create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}, RoleRef: role, Subjects: subject})
	} else {
		create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: bindNamespace, Name: name}, RoleRef: role, Subjects: subject})
	}
	return tokenOf(t, ns, name)
}

// tokenOf returns a new token of ServiceAccount ns/name meant for
// audiences; none is the API server's own, as `kubectl create token`.
func tokenOf(t *testing.T, ns, name string, audiences ...string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a token of %s/%s for %v: %v", ns, name, audiences, err)
	}
	return tr.Status.Token
}

// startTLSVisibilityAPI sets opts to serve the visibility API on a free
// loopback port over TLS, with a certificate of its own CA in a cert dir,
// and returns the API's URL and a client that trusts that CA alone.
func startTLSVisibilityAPI(t *testing.T, opts *app.Options) (string, *http.Client) {
	t.Helper()
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	opts.VisibilityAddress = cluster.Loopback(ports[0])
	opts.VisibilityCertDir = t.TempDir()
	caPEM, err := cluster.WriteServingCert(opts.VisibilityCertDir)
	if err != nil {
		t.Fatal(err)
	}
	httpClient, err := visibility.HTTPClientTrusting(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	return "https://" + opts.VisibilityAddress, httpClient
}

// TestVisibilityAPITokenAudience serves the REST API to tokens meant for
// its own audience only (--visibility-token-audiences): such a token is
// accepted, an ordinary one for the API server, or one for anything else,
// is refused, as the real API server's TokenReview tells.
func TestVisibilityAPITokenAudience(t *testing.T) {
	const audience = "koord-queue-visibility"
	opts := fastOptions()
	opts.VisibilityTokenAudiences = []string{audience}
	base, httpClient := startTLSVisibilityAPI(t, &opts)
	startKoordQueue(t, opts)
	ns := namespace(t)
	serviceAccountToken(t, ns, "reader", clusterRole(t, "queueunit-reader-"+ns, queueUnitReader), "")

	cases := map[string]struct {
		audiences  []string
		wantStatus int
	}{
		"a token meant for the visibility API":        {audiences: []string{audience}, wantStatus: http.StatusOK},
		"a token meant for it and for another":        {audiences: []string{"https://vault.example", audience}, wantStatus: http.StatusOK},
		"an ordinary token, meant for the API server": {wantStatus: http.StatusUnauthorized},
		"a token meant for something else":            {audiences: []string{"https://vault.example"}, wantStatus: http.StatusUnauthorized},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := (&visibility.Client{BaseURL: base, HTTP: httpClient, Token: tokenOf(t, ns, "reader", tc.audiences...)}).Queues(context.Background())
			got := http.StatusOK
			var status *visibility.StatusError
			if errors.As(err, &status) {
				got = status.Code
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tc.wantStatus {
				t.Errorf("status %d (%v), want %d", got, err, tc.wantStatus)
			}
		})
	}
}
