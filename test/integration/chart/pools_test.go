package chart

import (
	"context"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/test/testenv"
)

const profileCRD = "elasticquotaprofiles.quota.koordinator.sh"

// TestElasticQuotaProfileCRD: the chart installs Koordinator's
// ElasticQuotaProfile CRD only with installElasticQuotaProfileCRD, with
// Koordinator's schema, and keeps it on uninstall. koord-queue with
// computeTreeCapacity on a cluster without it does not start, and says
// which CRD is missing and which value installs it; with it, it starts.
func TestElasticQuotaProfileCRD(t *testing.T) {
	t.Run("not rendered by default; rendered as config/crd/bases has it with installElasticQuotaProfileCRD", func(t *testing.T) {
		objs, err := render(t, map[string]any{"computeTreeCapacity": true})
		if err != nil {
			t.Fatal(err)
		}
		if find(objs, "CustomResourceDefinition", profileCRD) != nil {
			t.Errorf("the ElasticQuotaProfile CRD is rendered while installElasticQuotaProfileCRD is false")
		}
		objs, err = render(t, map[string]any{"installElasticQuotaProfileCRD": true})
		if err != nil {
			t.Fatal(err)
		}
		rendered := find(objs, "CustomResourceDefinition", profileCRD)
		if rendered == nil {
			t.Fatal("installElasticQuotaProfileCRD: true rendered no ElasticQuotaProfile CRD")
		}
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rendered.Object, got); err != nil {
			t.Fatal(err)
		}
		want := readCRD(t, testenv.CRDDir()+"/quota.koordinator.sh_elasticquotaprofiles.yaml")
		if !equality.Semantic.DeepEqual(want.Spec, got.Spec) {
			t.Errorf("the rendered ElasticQuotaProfile CRD's spec differs from config/crd/bases'")
		}
		if got.Annotations["helm.sh/resource-policy"] != "keep" {
			t.Errorf("annotations %v, want helm.sh/resource-policy: keep", got.Annotations)
		}
	})

	e := bareAPIServer(t)
	ctx := context.Background()
	cfg := helmConfig(t, e)
	values := map[string]any{"installElasticQuotaCRD": true, "computeTreeCapacity": true}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = "koord-queue", namespace, true
	if _, err := install.RunWithContext(ctx, loadChart(t), values); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	for _, name := range []string{"queues.scheduling.x-k8s.io", "queueunits.scheduling.x-k8s.io", elasticQuotaCRD} {
		waitEstablished(t, e, name)
	}

	t.Run("without the CRD and computeTreeCapacity: koord-queue starts, with no node pools", func(t *testing.T) {
		if err := startKoordQueue(t, e, app.Options{}); err != nil {
			t.Fatalf("koord-queue without --compute-tree-capacity on a cluster without the ElasticQuotaProfile CRD: %v", err)
		}
	})

	t.Run("computeTreeCapacity without the CRD: koord-queue names the CRD and the value that installs it", func(t *testing.T) {
		err := startKoordQueue(t, e, computeTreeCapacity)
		if err == nil {
			t.Fatal("koord-queue started with --compute-tree-capacity and no ElasticQuotaProfile CRD")
		}
		t.Logf("koord-queue: %v", err)
		for _, want := range []string{profileCRD, "installElasticQuotaProfileCRD", "--compute-tree-capacity"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
	})

	values["installElasticQuotaProfileCRD"] = true
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = namespace
	if _, err := upgrade.RunWithContext(ctx, "koord-queue", loadChart(t), values); err != nil {
		t.Fatalf("helm upgrade with installElasticQuotaProfileCRD: %v", err)
	}
	waitEstablished(t, e, profileCRD)

	t.Run("computeTreeCapacity with the chart's CRD: koord-queue starts", func(t *testing.T) {
		testenv.Eventually(t, testenv.DefaultTimeout, func(context.Context) error {
			return startKoordQueue(t, e, computeTreeCapacity) // the new CRD's type may take a moment to be served
		})
	})

	t.Run("helm uninstall keeps the CRD", func(t *testing.T) {
		if _, err := action.NewUninstall(cfg).Run("koord-queue"); err != nil {
			t.Fatalf("helm uninstall: %v", err)
		}
		expectKept(t, e, "after helm uninstall", []string{profileCRD})
	})
}

var computeTreeCapacity = app.Options{Admission: admission.Options{ComputeTreeCapacity: true}}

// startKoordQueue sets koord-queue up on e as cmd/queue does, with opts,
// and starts it until the test ends, or returns why it could not.
func startKoordQueue(t *testing.T, e *testenv.Env, opts app.Options) error {
	t.Helper()
	cacheOpts, err := app.CacheOptions(opts.QueueNamespace, e.Config)
	if err != nil {
		return err
	}
	stop, err := e.StartManager(context.Background(), func(mgr manager.Manager) error {
		_, err := app.Setup(context.Background(), mgr, opts)
		return err
	}, func(o *manager.Options) { o.Cache = cacheOpts })
	if err != nil {
		return err
	}
	t.Cleanup(stop)
	return nil
}
