// Package helmchart renders the repository's Helm chart with the Helm v3
// SDK (no helm binary), as `helm template` does, for the tests that check
// the chart (test/integration/chart) and the e2e test that installs it and
// runs the binaries as it configures them (test/e2e/install).
package helmchart

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/koord-queue/koord-queue/test/cluster"
)

// Namespace and Release are the namespace and release name the docs install
// the chart with.
const (
	Namespace = "koord-queue"
	Release   = "koord-queue"
)

// Dir is the chart's directory.
var Dir = filepath.Join(cluster.RepoRoot(), "charts", "koord-queue")

// Load loads the chart.
func Load() (*chart.Chart, error) {
	c, err := loader.Load(Dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	return c, nil
}

// Everything turns on every extension, the webhook and the ElasticQuota CRD.
func Everything() map[string]any {
	ext := map[string]any{}
	for _, name := range []string{"batchjob", "tf", "pytorch", "argo", "ray", "mpi", "spark"} {
		ext[name] = map[string]any{"enable": true}
	}
	return map[string]any{
		"extension":              ext,
		"webhook":                map[string]any{"enable": true},
		"installElasticQuotaCRD": true,
	}
}

// Render renders the chart with values into Namespace, CRDs included, and
// decodes every object.
func Render(values map[string]any) ([]*unstructured.Unstructured, error) {
	return RenderIn(Namespace, values)
}

// RenderIn is Render into another release namespace, as `helm install -n
// namespace` does.
func RenderIn(namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	c, err := Load()
	if err != nil {
		return nil, err
	}
	return RenderChart(c, namespace, values)
}

// RenderChart is RenderIn of a chart loaded from elsewhere, such as a
// registry.
func RenderChart(c *chart.Chart, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	install := action.NewInstall(&action.Configuration{})
	install.ReleaseName, install.Namespace = Release, namespace
	install.DryRun, install.ClientOnly, install.IncludeCRDs = true, true, true
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.34.4", Major: "1", Minor: "34"}
	rel, err := install.Run(c, values)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	decoder := yaml.NewYAMLOrJSONDecoder(strings.NewReader(rel.Manifest), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding the rendered manifest: %w", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
	return objs, nil
}

// Find is the object of that kind and name, or nil.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
