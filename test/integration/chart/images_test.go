package chart

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/koord-queue/koord-queue/hack/images/ocilayout"
	"github.com/koord-queue/koord-queue/test/cluster"
)

// imagesLayout is where `make images` writes the images (make test builds
// them before the integration tests).
var imagesLayout = filepath.Join(cluster.RepoRoot(), "_output", "images")

// binaryOf is the binary each Deployment's args are the flags of.
var binaryOf = map[string]string{
	"koord-queue":             "/koord-queue",
	"koord-queue-controllers": "/koord-queue-controllers",
}

// TestImagesResolve pushes the images `make images` built into an
// in-process registry, renders the chart with that registry as
// global.imagePrefix and nothing else changed, and checks what a kubelet
// would do with each Deployment: its image resolves for both platforms, the
// image's entrypoint is the binary whose flags the Deployment passes (the
// Deployment sets no command), its user satisfies runAsNonRoot, and (on
// linux/amd64) that binary, run with exactly the rendered args, knows every
// flag and reports the images' version.
func TestImagesResolve(t *testing.T) {
	if _, err := os.Stat(filepath.Join(imagesLayout, "index.json")); err != nil {
		t.Fatalf("no image layout at %s: run `make images` first (make test does): %v", imagesLayout, err)
	}
	entries, err := ocilayout.Read(imagesLayout)
	if err != nil {
		t.Fatal(err)
	}
	builtVersion := entries[0].Version

	t.Setenv("DOCKER_CONFIG", t.TempDir()) // anonymous, whatever the machine's user has
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	// The chart's default tag is its appVersion: a release's images are
	// built from the commit tagged with it, so they carry that version. The
	// images built here are of whatever commit this is, so they are pushed
	// under the chart's tag, as the release pushes them.
	appVersion := loadChart(t).Metadata.AppVersion
	ctx := context.Background()
	if _, err := ocilayout.Push(ctx, imagesLayout, host, appVersion); err != nil {
		t.Fatal(err)
	}

	objs, err := render(t, chartutil.CoalesceTables(map[string]any{"global": map[string]any{"imagePrefix": host}}, everything()))
	if err != nil {
		t.Fatal(err)
	}
	var deployments []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			deployments = append(deployments, o)
		}
	}
	if len(deployments) != len(binaryOf) {
		t.Fatalf("the chart renders %d Deployments, want %d (%v)", len(deployments), len(binaryOf), binaryOf)
	}
	for _, d := range deployments {
		t.Run(d.GetName(), func(t *testing.T) {
			binary, ok := binaryOf[d.GetName()]
			if !ok {
				t.Fatalf("Deployment %s: which binary is it?", d.GetName())
			}
			podSpec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
			runAsNonRoot, _, _ := unstructured.NestedBool(podSpec, "securityContext", "runAsNonRoot")
			containers, _, _ := unstructured.NestedSlice(podSpec, "containers")
			if len(containers) != 1 {
				t.Fatalf("%d containers, want 1", len(containers))
			}
			c := containers[0].(map[string]any)
			ref := c["image"].(string)
			if want := host + "/" + strings.TrimPrefix(binary, "/") + ":" + appVersion; ref != want {
				t.Errorf("image %q, want %q: the chart's defaults with only global.imagePrefix set", ref, want)
			}
			if cmd, ok := c["command"]; ok {
				t.Fatalf("the container sets command %v: the image's entrypoint is not what runs", cmd)
			}
			args, _, _ := unstructured.NestedStringSlice(c, "args")
			tag, err := name.NewTag(ref, name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			for _, platform := range []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}} {
				img, err := remote.Image(tag, remote.WithPlatform(platform), remote.WithContext(ctx))
				if err != nil {
					t.Fatalf("%s for %s does not resolve: %v", ref, platform, err)
				}
				cfg, err := img.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]string{binary}, cfg.Config.Entrypoint); diff != "" {
					t.Errorf("%s entrypoint (-want +got):\n%s", platform, diff)
				}
				if runAsNonRoot {
					// The kubelet refuses to start a runAsNonRoot container
					// whose image's user is a name or 0.
					uid, err := strconv.Atoi(strings.SplitN(cfg.Config.User, ":", 2)[0])
					if err != nil || uid == 0 {
						t.Errorf("%s user %q: runAsNonRoot needs a numeric, non-zero uid", platform, cfg.Config.User)
					}
				}
				if platform.OS != runtime.GOOS || platform.Architecture != runtime.GOARCH {
					continue
				}
				exe := extract(t, img, binary)
				out, err := exec.CommandContext(ctx, exe, append(args, "--version")...).CombinedOutput()
				if err != nil {
					t.Fatalf("%s %s --version: %v\n%s", binary, strings.Join(args, " "), err, out)
				}
				if !strings.Contains(string(out), builtVersion) {
					t.Errorf("%s --version printed %q, want the images' version %s", binary, out, builtVersion)
				}
			}
		})
	}
}

// extract writes the file at path of img's filesystem to a temporary
// executable and returns its path.
func extract(t *testing.T, img v1.Image, path string) string {
	t.Helper()
	fs := mutate.Extract(img)
	defer fs.Close()
	r := tar.NewReader(fs)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("the image has no %s", path)
		} else if err != nil {
			t.Fatal(err)
		}
		if "/"+strings.TrimPrefix(h.Name, "/") != path {
			continue
		}
		var b bytes.Buffer
		if _, err := io.Copy(&b, r); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), filepath.Base(path))
		if err := os.WriteFile(out, b.Bytes(), 0o755); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// TestKoordQueueImageValues: the image values of Koord-Queue v1.8's
// documented values file still pick the images they name.
func TestKoordQueueImageValues(t *testing.T) {
	values := map[string]any{
		"global":     map[string]any{"imagePrefix": "registry.cn-beijing.aliyuncs.com"},
		"controller": map[string]any{"image": map[string]any{"repository": "koordinator-sh/koord-queue", "tag": "v1.8.0"}},
		"extension": map[string]any{"koord-queue-controllers": map[string]any{
			"repository": "koordinator-sh/koord-queue-controllers", "tag": "v1.8.0",
		}},
	}
	objs, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"koord-queue":             "registry.cn-beijing.aliyuncs.com/koordinator-sh/koord-queue:v1.8.0",
		"koord-queue-controllers": "registry.cn-beijing.aliyuncs.com/koordinator-sh/koord-queue-controllers:v1.8.0",
	}
	got := map[string]string{}
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			got[o.GetName()] = containers[0].(map[string]any)["image"].(string)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
}
