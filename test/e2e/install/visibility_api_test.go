package install

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/visibility/api/v1alpha1"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// testAggregatedAPI reads `kubectl get --raw
// /apis/visibility.koord-queue.x-k8s.io/v1alpha1/queues/<queue>/queueunits`
// through the API server's aggregation layer (the chart's APIService, its
// Service, the caBundle koord-queue's rotator wrote), with the Service
// pointing at one replica at a time, as a tenant who may list QueueUnits
// in one namespace and as an admin who may everywhere.
func testAggregatedAPI(t *testing.T, rs []*replica) {
	ctx := context.Background()
	kubectl, err := cluster.Tool("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	const queue = "visibility"
	tenantNS, otherNS := "visibility-tenant", "visibility-other"
	for _, ns := range []string{tenantNS, otherNS} {
		if err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	createQuota(t, queue, "1")
	// One unit of the other namespace holds the quota, one waits first;
	// the tenant's waits second.
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := k8sClient.Create(ctx, o); err != nil {
				t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
			}
		}
	}
	create(wrappers.MakeQueueUnit("holder", otherNS).Quota(queue).Priority(9).Request(corev1.ResourceCPU, "1").Obj())
	waitAdmitted(t, nil, otherNS, "holder")
	create(wrappers.MakeQueueUnit("ahead", otherNS).Quota(queue).Priority(5).Request(corev1.ResourceCPU, "1").Obj(),
		wrappers.MakeQueueUnit("mine", tenantNS).Quota(queue).Priority(1).Request(corev1.ResourceCPU, "1").Obj())

	lister := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "queueunit-lister"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{schedulingv1alpha1.GroupVersion.Group}, Resources: []string{"queueunits"}, Verbs: []string{"get", "list"}}}}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: lister.Name}
	subject := func(name string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: releaseNamespace, Name: name}}
	}
	create(lister,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: "visibility-tenant"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: "visibility-admin"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "visibility-tenant"}, RoleRef: ref, Subjects: subject("visibility-tenant")},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "visibility-admin"}, RoleRef: ref, Subjects: subject("visibility-admin")},
	)
	tenant, admin := serviceAccountKubeconfig(t, "visibility-tenant"), serviceAccountKubeconfig(t, "visibility-admin")

	path := "/apis/" + v1alpha1.GroupVersion.String() + "/queues/" + queue + "/queueunits"
	// getRaw is `kubectl get --raw path` as the kubeconfig's user; lastRaw
	// its last answer.
	var lastRaw []byte
	getRaw := func(ctx context.Context, kubeconfig string) (v1alpha1.QueueUnitsSummary, error) {
		var s v1alpha1.QueueUnitsSummary
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "--raw", path).Output()
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				return s, fmt.Errorf("kubectl get --raw %s: %w: %s", path, err, exit.Stderr)
			}
			return s, err
		}
		if err := json.Unmarshal(out, &s); err != nil {
			return s, fmt.Errorf("kubectl get --raw %s: %w: %s", path, err, out)
		}
		lastRaw = out
		return s, nil
	}
	where := cmp.Transformer("where", func(u v1alpha1.QueueUnit) v1alpha1.QueueUnit {
		return v1alpha1.QueueUnit{Metadata: u.Metadata, QueueName: u.QueueName, Phase: u.Phase, Priority: u.Priority, Position: u.Position, Redacted: u.Redacted}
	})
	unit := func(ns, name string, priority int32, position int) v1alpha1.QueueUnit {
		return v1alpha1.QueueUnit{Metadata: v1alpha1.ObjectMeta{Namespace: ns, Name: name}, QueueName: queue, Phase: schedulingv1alpha1.Enqueued, Priority: priority, Position: position}
	}
	wantAdmin := []v1alpha1.QueueUnit{unit(otherNS, "ahead", 5, 1), unit(tenantNS, "mine", 1, 2)}
	wantTenant := []v1alpha1.QueueUnit{{QueueName: queue, Phase: schedulingv1alpha1.Enqueued, Priority: 5, Position: 1, Redacted: true}, unit(tenantNS, "mine", 1, 2)}

	var slices []*discoveryv1.EndpointSlice
	for _, r := range rs {
		// The Service points at this replica only, and the API server is
		// seen answering without it first, so that what answers next is
		// this replica.
		for _, s := range slices {
			if err := k8sClient.Delete(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
			if _, err := getRaw(ctx, admin); err == nil {
				return errors.New("the aggregated API still answers with no endpoint")
			}
			return nil
		})
		slices = pointService(t, "koord-queue-visibility-api", []*replica{r})
		testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
			got, err := getRaw(ctx, admin)
			if err != nil {
				return fmt.Errorf("%s: %w%s", r.name, err, apiServiceConditions(ctx))
			}
			if diff := cmp.Diff(wantAdmin, got.Items, where); diff != "" {
				return fmt.Errorf("%s: the admin's units (-want +got):\n%s", r.name, diff)
			}
			if got.Items[1].Reason == "" {
				return fmt.Errorf("%s: the tenant's unit says no reason yet: %+v", r.name, got.Items[1])
			}
			return nil
		})
		got, err := getRaw(ctx, tenant)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if diff := cmp.Diff(wantTenant, got.Items, where); diff != "" || got.Total != 2 {
			t.Errorf("%s: the tenant's units: total %d (want 2) (-want +got):\n%s", r.name, got.Total, diff)
		}
		if mine := got.Items[len(got.Items)-1]; mine.Reason == "" {
			t.Errorf("%s: the tenant's unit says no reason: %+v", r.name, mine)
		}
		t.Logf("%s served the aggregated API to the tenant and the admin; the tenant's answer: %s", r.name, lastRaw)
	}

	t.Run("a caller the API server does not authenticate is refused", func(t *testing.T) {
		anonymous, err := kubernetes.NewForConfig(rest.AnonymousClientConfig(localCluster.Config))
		if err != nil {
			t.Fatal(err)
		}
		body, err := anonymous.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err) {
			t.Errorf("anonymous: %v %s, want 401 or 403", err, body)
		}
	})
}

// apiServiceConditions says why the chart's APIService is not available.
func apiServiceConditions(ctx context.Context) string {
	a := &unstructured.Unstructured{}
	a.SetAPIVersion("apiregistration.k8s.io/v1")
	a.SetKind("APIService")
	if err := k8sClient.Get(ctx, client.ObjectKey{Name: v1alpha1.APIServiceName}, a); err != nil {
		return "; APIService: " + err.Error()
	}
	conditions, _, _ := unstructured.NestedSlice(a.Object, "status", "conditions")
	return fmt.Sprintf("; APIService conditions: %v", conditions)
}
