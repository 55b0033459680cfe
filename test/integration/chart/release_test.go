package chart

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v3/pkg/chart/loader"
	helmregistry "helm.sh/helm/v3/pkg/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/koord-queue/koord-queue/hack/images/ocilayout"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/helmchart"
)

// TestReleaseTargets runs the make targets the release workflow
// (.github/workflows/release.yaml) runs, against an in-process registry:
// make push builds the images (into a layout of the test's, the build cache
// warm from make images) and pushes them, make push-chart pushes the chart,
// and the chart pulled back from the registry, pointed at it, runs images
// that are there. make release refuses a commit that is not the release,
// and the workflow pushes to the registry the chart's images default to.
func TestReleaseTargets(t *testing.T) {
	reg := inProcessRegistry(t) + "/team"

	if out, err := runMake(t, "release", "REGISTRY="+reg, "VERSION=v9.9.9"); err == nil || !strings.Contains(out, "is not RELEASE_VERSION") {
		t.Fatalf("make release of a commit that is not the release: %v\n%s\nwant a refusal naming RELEASE_VERSION", err, out)
	}

	const tag = "test-release"
	layout := filepath.Join(t.TempDir(), "images")
	if out, err := runMake(t, "push", "push-chart", "REGISTRY="+reg, "TAG="+tag, "IMAGES_DIR="+layout); err != nil {
		t.Fatalf("make push push-chart: %v\n%s", err, out)
	}
	entries, err := ocilayout.Read(layout)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		ref, err := name.NewTag(reg + "/" + e.Name + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Head(ref)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if desc.Digest != e.Digest {
			t.Errorf("%s is %s, the layout's %s is %s", ref, desc.Digest, e.Name, e.Digest)
		}
	}

	local := loadChart(t)
	client, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP())
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := client.Pull(reg + "/charts/koord-queue:" + local.Metadata.Version)
	if err != nil {
		t.Fatalf("pulling the chart as `helm install oci://%s/charts/koord-queue --version %s` does: %v", reg, local.Metadata.Version, err)
	}
	c, err := loader.LoadArchive(bytes.NewReader(pulled.Chart.Data))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.RenderChart(c, namespace, map[string]any{"global": map[string]any{"imagePrefix": reg, "imageTag": tag}})
	if err != nil {
		t.Fatalf("rendering the pulled chart: %v", err)
	}
	deployments := 0
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		deployments++
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		image := containers[0].(map[string]any)["image"].(string)
		ref, err := name.NewTag(image)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := remote.Head(ref); err != nil {
			t.Errorf("Deployment %s of the pulled chart runs %s, which the registry does not have: %v", o.GetName(), image, err)
		}
	}
	if deployments != len(binaryOf) {
		t.Errorf("the pulled chart renders %d Deployments, want %d", deployments, len(binaryOf))
	}

	workflow, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), ".github", "workflows", "release.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`make release REGISTRY=(\S+)`).FindSubmatch(workflow)
	if m == nil {
		t.Fatal("the release workflow runs no `make release REGISTRY=...`")
	}
	global, _ := local.Values["global"].(map[string]any)
	if prefix, _ := global["imagePrefix"].(string); string(m[1]) != prefix {
		t.Errorf("the release workflow pushes to %s, but the chart's images default to %s", m[1], prefix)
	}
}

// runMake runs make with args in the repository's root, apart from any make
// this test runs under, and returns what it printed.
func runMake(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = cluster.RepoRoot()
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "MAKEFLAGS" || k == "MFLAGS" || k == "MAKELEVEL"
	})
	out, err := cmd.CombinedOutput()
	return string(out), err
}
