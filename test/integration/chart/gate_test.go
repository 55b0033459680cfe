package chart

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestAdmissionGatePolicy applies the chart's policy that keeps koord-queue's
// scheduling gate to koord-queue-controllers to the real API server: a
// tenant who may edit pods cannot remove it (but may remove its own gates),
// koord-queue-controllers can.
func TestAdmissionGatePolicy(t *testing.T) {
	ctx := context.Background()
	objs, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The chart's release installed by another test of the package may hold
	// these cluster-wide names: the test's copies are named for it.
	const testName = "koord-queue-admission-gate-under-test"
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		o := find(objs, kind, "koord-queue-admission-gate")
		if o == nil {
			t.Fatalf("no %s koord-queue-admission-gate by default", kind)
		}
		o.SetName(testName)
		if kind == "ValidatingAdmissionPolicyBinding" {
			if err := unstructured.SetNestedField(o.Object, testName, "spec", "policyName"); err != nil {
				t.Fatal(err)
			}
		}
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", kind, o.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gate-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	tenant := "tenant"
	controllers := "system:serviceaccount:" + namespace + ":koord-queue-controllers"
	// Both may edit pods, as the built-in edit role lets a tenant.
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-editor", Namespace: ns.Name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "update", "patch"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-editor", Namespace: ns.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenant}, {Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controllers}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	as := func(user string) client.Client {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	newPod := func(name string) *corev1.Pod {
		p := wrappers.MakePod(name, ns.Name).Obj()
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: schedulingv1alpha1.SchedulingGateAdmission}, {Name: "example.com/tenants-own"}}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	remove := func(c client.Client, p *corev1.Pod, gate string) error {
		i := 0
		for ; i < len(p.Spec.SchedulingGates) && p.Spec.SchedulingGates[i].Name != gate; i++ {
		}
		patch := fmt.Sprintf(`[{"op": "test", "path": "/spec/schedulingGates/%d/name", "value": %q}, {"op": "remove", "path": "/spec/schedulingGates/%d"}]`, i, gate, i)
		return c.Patch(ctx, p, client.RawPatch(types.JSONPatchType, []byte(patch)))
	}

	// The policy is in force once the API server has read it, and the
	// tenant may edit pods once it has read the binding.
	testenv.Eventually(t, 30*time.Second, func(context.Context) error {
		p := newPod(fmt.Sprintf("probe-%d", time.Now().UnixNano()))
		switch err := remove(as(tenant), p, schedulingv1alpha1.SchedulingGateAdmission); {
		case err == nil:
			return errors.New("a tenant removed koord-queue's gate: the policy is not in force yet")
		case !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
			return fmt.Errorf("removing koord-queue's gate as a tenant: %w", err)
		case !strings.Contains(err.Error(), "only koord-queue-controllers removes the scheduling gate"):
			return fmt.Errorf("refused, but not by the policy (yet): %w", err)
		}
		return nil
	})

	p := newPod("pod")
	if err := remove(as(tenant), p, "example.com/tenants-own"); err != nil {
		t.Errorf("a tenant could not remove a gate of its own: %v", err)
	}
	if err := remove(as(controllers), p, schedulingv1alpha1.SchedulingGateAdmission); err != nil {
		t.Errorf("koord-queue-controllers could not remove its gate: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.SchedulingGates) != 0 {
		t.Errorf("gates left: %v", p.Spec.SchedulingGates)
	}
}
