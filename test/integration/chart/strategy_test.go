package chart

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestRolloutStrategy: the upgrade from Koord-Queue v1.8's release rolls
// both Deployments out with strategy Recreate, which starts no pod of this
// chart before every pod of Koord-Queue's has stopped (Koord-Queue elects
// its leaders on Leases of its own, so both would admit). It stays Recreate
// on a later upgrade while one of Koord-Queue's pods has not stopped yet,
// and turns RollingUpdate once none is left; rendered without a cluster
// (`helm template`) it is Recreate. The API server accepts each change of
// strategy that `helm upgrade` patches in.
func TestRolloutStrategy(t *testing.T) {
	e := bareAPIServer(t)
	ctx := context.Background()
	cfg := helmConfig(t, e)
	deployments := []string{"koord-queue", "koord-queue-controllers"}

	installKoordQueueV18(t, cfg)
	// Koord-Queue's running pods, with its Deployments' pod labels (this
	// API server has no controller-manager to make them).
	var oldPods []*corev1.Pod
	for _, name := range deployments {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-v18", Labels: map[string]string{"control-plane": name}},
			Spec: corev1.PodSpec{
				AutomountServiceAccountToken: ptr.To(false),
				Containers:                   []corev1.Container{{Name: "controller", Image: "registry.cn-beijing.aliyuncs.com/koordinator-sh/" + name + ":v1.8.0"}},
			},
		}
		if err := e.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		oldPods = append(oldPods, pod)
	}

	strategies := func() map[string]appsv1.DeploymentStrategyType {
		t.Helper()
		got := map[string]appsv1.DeploymentStrategyType{}
		for _, name := range deployments {
			d := &appsv1.Deployment{}
			if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
				t.Fatal(err)
			}
			got[name] = d.Spec.Strategy.Type
		}
		return got
	}
	all := func(s appsv1.DeploymentStrategyType) map[string]appsv1.DeploymentStrategyType {
		return map[string]appsv1.DeploymentStrategyType{"koord-queue": s, "koord-queue-controllers": s}
	}
	if diff := cmp.Diff(all(appsv1.RollingUpdateDeploymentStrategyType), strategies()); diff != "" {
		t.Fatalf("Koord-Queue v1.8's Deployments before the upgrade (-want +got):\n%s", diff)
	}

	upgradeToThisChart(t, cfg, "from Koord-Queue v1.8")
	if diff := cmp.Diff(all(appsv1.RecreateDeploymentStrategyType), strategies()); diff != "" {
		t.Errorf("after the upgrade from Koord-Queue v1.8 (-want +got):\n%s", diff)
	}

	// Koord-Queue's pods slow to stop: an upgrade meanwhile keeps Recreate.
	upgradeToThisChart(t, cfg, "while Koord-Queue's pods are still there")
	if diff := cmp.Diff(all(appsv1.RecreateDeploymentStrategyType), strategies()); diff != "" {
		t.Errorf("upgraded while Koord-Queue's pods are still there (-want +got):\n%s", diff)
	}
	// One of them gone, the other not yet.
	if err := e.Client.Delete(ctx, oldPods[0]); err != nil {
		t.Fatal(err)
	}
	upgradeToThisChart(t, cfg, "while Koord-Queue's koord-queue-controllers pod is still there")
	want := map[string]appsv1.DeploymentStrategyType{
		"koord-queue":             appsv1.RollingUpdateDeploymentStrategyType,
		"koord-queue-controllers": appsv1.RecreateDeploymentStrategyType,
	}
	if diff := cmp.Diff(want, strategies()); diff != "" {
		t.Errorf("upgraded with one of Koord-Queue's pods left (-want +got):\n%s", diff)
	}

	if err := e.Client.Delete(ctx, oldPods[1]); err != nil {
		t.Fatal(err)
	}
	upgradeToThisChart(t, cfg, "once Koord-Queue's pods are gone")
	if diff := cmp.Diff(all(appsv1.RollingUpdateDeploymentStrategyType), strategies()); diff != "" {
		t.Errorf("upgraded with none of Koord-Queue's pods left (-want +got):\n%s", diff)
	}

	objs, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]appsv1.DeploymentStrategyType{}
	for _, name := range deployments {
		s, _, _ := unstructured.NestedString(find(objs, "Deployment", name).Object, "spec", "strategy", "type")
		got[name] = appsv1.DeploymentStrategyType(s)
	}
	if diff := cmp.Diff(all(appsv1.RecreateDeploymentStrategyType), got); diff != "" {
		t.Errorf("rendered without a cluster (-want +got):\n%s", diff)
	}
}

// TestRollbackToKoordQueueV18: migration.md's rollback. With this chart's
// Deployments scaled to zero first, `helm rollback` to Koord-Queue v1.8's
// revision puts back its Deployments with one replica each and the default
// RollingUpdate, its images, deletes the webhook only this chart made, and
// keeps the CRDs and their objects.
func TestRollbackToKoordQueueV18(t *testing.T) {
	e := bareAPIServer(t)
	ctx := context.Background()
	cfg := helmConfig(t, e)
	deployments := []string{"koord-queue", "koord-queue-controllers"}

	installKoordQueueV18(t, cfg)
	upgradeToThisChart(t, cfg, "from Koord-Queue v1.8")
	crds := []string{"queues.scheduling.x-k8s.io", "queueunits.scheduling.x-k8s.io"}
	for _, name := range crds {
		waitEstablished(t, e, name)
	}
	unit := wrappers.MakeQueueUnit("job-1", metav1.NamespaceDefault).Quota("team-a").Request(corev1.ResourceCPU, "1").Obj()
	if err := e.Client.Create(ctx, unit); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "koord-queue-controllers"}, &admissionregistrationv1.MutatingWebhookConfiguration{}); err != nil {
		t.Fatalf("this chart's webhook after the upgrade: %v", err)
	}

	for _, name := range deployments {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		if err := e.Client.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))); err != nil {
			t.Fatal(err)
		}
	}
	rollback := action.NewRollback(cfg)
	rollback.Version = 1
	if err := rollback.Run("koord-queue"); err != nil {
		t.Fatalf("helm rollback to Koord-Queue v1.8's revision: %v", err)
	}

	type deployment struct {
		Replicas int32
		Strategy appsv1.DeploymentStrategyType
		Image    string
	}
	want := map[string]deployment{
		"koord-queue":             {1, appsv1.RollingUpdateDeploymentStrategyType, "registry.cn-beijing.aliyuncs.com/koordinator-sh/koord-queue:v1.8.0"},
		"koord-queue-controllers": {1, appsv1.RollingUpdateDeploymentStrategyType, "registry.cn-beijing.aliyuncs.com/koordinator-sh/koord-queue-controllers:v1.8.0"},
	}
	got := map[string]deployment{}
	for _, name := range deployments {
		d := &appsv1.Deployment{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
			t.Fatal(err)
		}
		got[name] = deployment{ptr.Deref(d.Spec.Replicas, 1), d.Spec.Strategy.Type, d.Spec.Template.Spec.Containers[0].Image}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Deployments after the rollback (-want +got):\n%s", diff)
	}
	err := e.Client.Get(ctx, client.ObjectKey{Name: "koord-queue-controllers"}, &admissionregistrationv1.MutatingWebhookConfiguration{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("this chart's webhook after the rollback: %v, want it deleted", err)
	}
	expectKept(t, e, "after the rollback", crds, unit)
}

// upgradeToThisChart runs `helm upgrade` of release koord-queue to this
// chart with its default values; when says when, for the failure.
func upgradeToThisChart(t *testing.T, cfg *action.Configuration, when string) {
	t.Helper()
	u := action.NewUpgrade(cfg)
	u.Namespace = namespace
	if _, err := u.RunWithContext(context.Background(), "koord-queue", loadChart(t), map[string]any{}); err != nil {
		t.Fatalf("helm upgrade %s: %v", when, err)
	}
}
