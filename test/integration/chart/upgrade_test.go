package chart

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

const elasticQuotaCRD = "elasticquotas.scheduling.sigs.k8s.io"

// TestUpgradeFromKoordQueueV18: `helm upgrade` over a release of Koord-Queue
// v1.8's chart (testdata/koord-queue-v1.8: its Deployments' selectors, its
// CRDs as templates) succeeds, beside Koordinator's ElasticQuota and
// ElasticQuotaProfile CRDs that no release owns (and the chart, asked to
// install them, leaves alone); no CRD, Queue, QueueUnit or AdmissionCheck
// is lost, and `helm uninstall` afterwards deletes none of them either.
func TestUpgradeFromKoordQueueV18(t *testing.T) {
	e := bareAPIServer(t)
	ctx := context.Background()
	cfg := helmConfig(t, e)

	// Koordinator's CRDs, installed by Koordinator, not by Helm.
	for _, file := range []string{"scheduling.sigs.k8s.io_elasticquotas.yaml", "quota.koordinator.sh_elasticquotaprofiles.yaml"} {
		if err := e.Client.Create(ctx, readCRD(t, filepath.Join(testenv.CRDDir(), file))); err != nil {
			t.Fatal(err)
		}
	}

	installKoordQueueV18(t, cfg)
	crds := []string{"queues.scheduling.x-k8s.io", "queueunits.scheduling.x-k8s.io", "admissionchecks.kueue.x-k8s.io", elasticQuotaCRD, profileCRD}
	for _, name := range crds {
		waitEstablished(t, e, name)
	}

	// What users and Koord-Queue made while v1.8 ran.
	queue := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "team-a"}}
	unit := wrappers.MakeQueueUnit("job-1", metav1.NamespaceDefault).Quota("team-a").Request(corev1.ResourceCPU, "1").Obj()
	check := &unstructured.Unstructured{}
	check.SetAPIVersion("kueue.x-k8s.io/v1beta1")
	check.SetKind("AdmissionCheck")
	check.SetName("provisioning")
	for _, obj := range []client.Object{queue, unit, check} {
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	unit.Status.Phase = schedulingv1alpha1.Running
	if err := e.Client.Status().Update(ctx, unit); err != nil {
		t.Fatal(err)
	}

	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = namespace
	values := everything()
	values["installElasticQuotaProfileCRD"] = true
	if _, err := upgrade.RunWithContext(ctx, "koord-queue", loadChart(t), values); err != nil {
		t.Fatalf("helm upgrade from Koord-Queue v1.8's release: %v", err)
	}
	for _, name := range []string{"koord-queue", "koord-queue-controllers"} {
		d := &appsv1.Deployment{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
			t.Fatal(err)
		}
		if image := d.Spec.Template.Spec.Containers[0].Image; !strings.Contains(image, "koord-queue/"+name+":") {
			t.Errorf("Deployment %s runs %s after the upgrade, want this chart's image", name, image)
		}
	}
	// Koordinator's CRDs stay Koordinator's: not taken into the release.
	for _, name := range []string{elasticQuotaCRD, profileCRD} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		if owner := crd.Annotations["meta.helm.sh/release-name"]; owner != "" {
			t.Errorf("Koordinator's CRD %s was taken into release %q", name, owner)
		}
	}
	expectKept(t, e, "after the upgrade", crds, queue, unit, check)

	if _, err := action.NewUninstall(cfg).Run("koord-queue"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "koord-queue"}, &appsv1.Deployment{}); err == nil {
		t.Error("Deployment koord-queue still there after helm uninstall")
	}
	expectKept(t, e, "after helm uninstall", crds, queue, unit, check)
}

// TestUninstallKeepsCRDs: the CRDs this chart installs (Queue, QueueUnit and,
// when asked, ElasticQuota) outlive `helm uninstall`, with their objects.
func TestUninstallKeepsCRDs(t *testing.T) {
	e := bareAPIServer(t)
	ctx := context.Background()
	cfg := helmConfig(t, e)
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = "koord-queue", namespace, true
	if _, err := install.RunWithContext(ctx, loadChart(t), everything()); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	crds := []string{"queues.scheduling.x-k8s.io", "queueunits.scheduling.x-k8s.io", elasticQuotaCRD}
	for _, name := range crds {
		waitEstablished(t, e, name)
	}
	quota := wrappers.MakeElasticQuota("team-a", metav1.NamespaceDefault).Max(corev1.ResourceCPU, "4").Obj()
	queue := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "team-a"}}
	unit := wrappers.MakeQueueUnit("job-1", metav1.NamespaceDefault).Quota("team-a").Request(corev1.ResourceCPU, "1").Obj()
	for _, obj := range []client.Object{quota, queue, unit} {
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := action.NewUninstall(cfg).Run("koord-queue"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	expectKept(t, e, "after helm uninstall", crds, quota, queue, unit)
}

// TestKoordSchedulerWritesStatusUsed: with the ElasticQuota CRD this chart
// installs, koord-scheduler's write (one merge patch of the quota's
// annotations and status.used) lands whole, as with Koordinator's CRD.
func TestKoordSchedulerWritesStatusUsed(t *testing.T) {
	objs, err := render(t, everything())
	if err != nil {
		t.Fatal(err)
	}
	rendered := find(objs, "CustomResourceDefinition", elasticQuotaCRD)
	if rendered == nil {
		t.Fatal("installElasticQuotaCRD: true rendered no ElasticQuota CRD")
	}
	e := bareAPIServer(t)
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rendered.Object, crd); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	waitEstablished(t, e, elasticQuotaCRD)

	quota := wrappers.MakeElasticQuota("team-a", metav1.NamespaceDefault).Max(corev1.ResourceCPU, "4").Obj()
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		return e.Client.Create(ctx, quota) // the new CRD's type may take a moment to be served
	})
	if err := e.Client.Patch(ctx, quota, wrappers.KoordSchedulerPatch("3")); err != nil {
		t.Fatal(err)
	}
	got := &elasticquotav1alpha1.ElasticQuota{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(quota), got); err != nil {
		t.Fatal(err)
	}
	if used := got.Status.Used[corev1.ResourceCPU]; used.Cmp(resource.MustParse("3")) != 0 {
		t.Errorf("status.used cpu %s after koord-scheduler's patch, want 3: the CRD dropped it", used.String())
	}
	if got.Annotations[elasticquotav1alpha1.KoordSchedulerFigures[0]] == "" {
		t.Errorf("annotation %s missing after koord-scheduler's patch", elasticquotav1alpha1.KoordSchedulerFigures[0])
	}
}

// TestNoElasticQuotaCRD: on a cluster without Koordinator's ElasticQuota
// CRD (the chart's installElasticQuotaCRD off), koord-queue does not start,
// and says which CRD is missing and how to get it.
func TestNoElasticQuotaCRD(t *testing.T) {
	e := bareAPIServer(t)
	cfg := helmConfig(t, e)
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = "koord-queue", namespace, true
	if _, err := install.RunWithContext(context.Background(), loadChart(t), nil); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	for _, name := range []string{"queues.scheduling.x-k8s.io", "queueunits.scheduling.x-k8s.io"} {
		waitEstablished(t, e, name)
	}
	err := startKoordQueue(t, e, app.Options{})
	if err == nil {
		t.Fatal("koord-queue started on a cluster without the ElasticQuota CRD")
	}
	for _, want := range []string{elasticQuotaCRD, "installElasticQuotaCRD"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// installKoordQueueV18 installs release koord-queue of Koord-Queue v1.8's
// chart (testdata/koord-queue-v1.8) in namespace, as users have it.
func installKoordQueueV18(t *testing.T, cfg *action.Configuration) {
	t.Helper()
	v18, err := loader.Load(filepath.Join("testdata", "koord-queue-v1.8"))
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = "koord-queue", namespace, true
	if _, err := install.RunWithContext(context.Background(), v18, nil); err != nil {
		t.Fatalf("installing Koord-Queue v1.8's chart: %v", err)
	}
}

// bareAPIServer starts an API server of the test's own, without CRDs: a
// release's cluster-scoped objects (CRDs, ClusterRoles, a namespace) would
// meet those of the package's other tests.
func bareAPIServer(t *testing.T) *testenv.Env {
	t.Helper()
	e, err := testenv.StartWithCRDs(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	return e
}

func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return crd
}

func waitEstablished(t *testing.T, e *testenv.Env, name string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("CRD %s not established", name)
	})
}

// expectKept fails unless every CRD named is there and not being deleted,
// and every object still exists.
func expectKept(t *testing.T, e *testenv.Env, when string, crds []string, objs ...client.Object) {
	t.Helper()
	ctx := context.Background()
	for _, name := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Errorf("%s: CRD %s: %v", when, name, err)
		} else if crd.DeletionTimestamp != nil {
			t.Errorf("%s: CRD %s is being deleted", when, name)
		}
	}
	for _, obj := range objs {
		key := client.ObjectKeyFromObject(obj)
		got := obj.DeepCopyObject().(client.Object)
		if err := e.Client.Get(ctx, key, got); err != nil {
			t.Errorf("%s: %T %s: %v", when, obj, key, err)
		}
	}
}

// TestQueueNamespace: installed into a namespace of its own choosing, the
// release creates the Queues' namespace (koord-queue by default, which
// koord-queue is told with --queue-namespace) and keeps it on uninstall.
func TestQueueNamespace(t *testing.T) {
	e := bareAPIServer(t)
	ctx := context.Background()
	const release = "kq-system"
	cfg := helmConfig(t, e, release)
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = "koord-queue", release, true
	if _, err := install.RunWithContext(ctx, loadChart(t), everything()); err != nil {
		t.Fatalf("helm install -n %s: %v", release, err)
	}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: namespace}, &corev1.Namespace{}); err != nil {
		t.Fatalf("the Queues' namespace %s: %v", namespace, err)
	}
	d := &appsv1.Deployment{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: release, Name: "koord-queue"}, d); err != nil {
		t.Fatal(err)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--queue-namespace="+namespace) {
		t.Errorf("koord-queue's args %v: want --queue-namespace=%s", args, namespace)
	}
	if _, err := action.NewUninstall(cfg).Run("koord-queue"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	ns := &corev1.Namespace{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("the Queues' namespace after helm uninstall: %v (being deleted: %v), want it kept", err, ns.DeletionTimestamp != nil)
	}
}
