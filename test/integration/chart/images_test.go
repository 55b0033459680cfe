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
	entries := builtImages(t)
	builtVersion := entries[0].Version
	host := inProcessRegistry(t)
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

// builtImages are the images of the layout `make images` wrote.
func builtImages(t *testing.T) []ocilayout.Entry {
	t.Helper()
	if _, err := os.Stat(filepath.Join(imagesLayout, "index.json")); err != nil {
		t.Fatalf("no image layout at %s: run `make images` first (make test does): %v", imagesLayout, err)
	}
	entries, err := ocilayout.Read(imagesLayout)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// inProcessRegistry starts a registry for the test and returns its host.
// Pushes and pulls are anonymous, the test's and those of the programs it
// runs, whatever credentials the machine's user has.
func inProcessRegistry(t *testing.T) string {
	t.Helper()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("HELM_CONFIG_HOME", t.TempDir())
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
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

// TestKoordQueueImageValues: Koord-Queue v1.8's images, which its values
// file names, fail the render naming the value to change (their binaries
// do not take this chart's flags); with the values migration.md says to
// set, the chart runs this project's images from the registry given.
func TestKoordQueueImageValues(t *testing.T) {
	v18Images := func() map[string]any {
		return map[string]any{
			"global":     map[string]any{"imagePrefix": "registry.cn-beijing.aliyuncs.com"},
			"controller": map[string]any{"image": map[string]any{"repository": "koordinator-sh/koord-queue", "tag": "v1.8.0"}},
			"extension": map[string]any{"koord-queue-controllers": map[string]any{
				"repository": "koordinator-sh/koord-queue-controllers", "tag": "v1.8.0",
			}},
		}
	}
	onlyControllers := v18Images()
	onlyControllers["controller"] = map[string]any{"image": map[string]any{"repository": "koord-queue", "tag": ""}}
	for name, tc := range map[string]struct {
		values    map[string]any
		wantError string
		want      map[string]string
	}{
		"Koord-Queue's koord-queue image is refused": {
			values:    v18Images(),
			wantError: "controller.image.repository: koordinator-sh/koord-queue is Koord-Queue v1.8's image",
		},
		"Koord-Queue's koord-queue-controllers image is refused": {
			values:    onlyControllers,
			wantError: "extension.koord-queue-controllers.repository: koordinator-sh/koord-queue-controllers is Koord-Queue v1.8's image",
		},
		"the values migration.md sets run this project's images": {
			values: withImagesOf(v18Images(), "registry.example.com/team"),
			want: map[string]string{
				"koord-queue":             "registry.example.com/team/koord-queue:" + loadChart(t).Metadata.AppVersion,
				"koord-queue-controllers": "registry.example.com/team/koord-queue-controllers:" + loadChart(t).Metadata.AppVersion,
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := render(t, tc.values)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("render error %v, want one saying %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, o := range objs {
				if o.GetKind() == "Deployment" {
					containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
					got[o.GetName()] = containers[0].(map[string]any)["image"].(string)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
		})
	}
}

// withImagesOf sets in values what migration.md's step 1 passes beside
// Koord-Queue's values file: this project's image repositories, the
// chart's own tags, and registry as global.imagePrefix.
func withImagesOf(values map[string]any, registry string) map[string]any {
	values["global"] = map[string]any{"imagePrefix": registry}
	controller, _ := values["controller"].(map[string]any)
	if controller == nil {
		controller = map[string]any{}
		values["controller"] = controller
	}
	controller["image"] = map[string]any{"repository": "koord-queue", "tag": ""}
	ext, _ := values["extension"].(map[string]any)
	if ext == nil {
		ext = map[string]any{}
		values["extension"] = ext
	}
	controllers, _ := ext["koord-queue-controllers"].(map[string]any)
	if controllers == nil {
		controllers = map[string]any{}
		ext["koord-queue-controllers"] = controllers
	}
	controllers["repository"], controllers["tag"] = "koord-queue-controllers", ""
	return values
}

// TestImageValues: global.imageTag tags both images unless an image has its
// own tag, and global.imagePullSecrets reach every pod the chart runs.
func TestImageValues(t *testing.T) {
	appVersion := loadChart(t).Metadata.AppVersion
	for name, tc := range map[string]struct {
		values      map[string]any
		wantImages  map[string]string
		wantSecrets []any
		wantError   string
	}{
		"the defaults: the chart's appVersion, no pull secrets": {
			wantImages: map[string]string{
				"koord-queue":             "ghcr.io/koord-queue/koord-queue:" + appVersion,
				"koord-queue-controllers": "ghcr.io/koord-queue/koord-queue-controllers:" + appVersion,
			},
		},
		"your registry and the tag make push printed": {
			values: map[string]any{"global": map[string]any{"imagePrefix": "registry.example.com/team", "imageTag": "v0.1.0-3-gabcdef0"}},
			wantImages: map[string]string{
				"koord-queue":             "registry.example.com/team/koord-queue:v0.1.0-3-gabcdef0",
				"koord-queue-controllers": "registry.example.com/team/koord-queue-controllers:v0.1.0-3-gabcdef0",
			},
		},
		"an image's own tag wins over global.imageTag": {
			values: map[string]any{
				"global":     map[string]any{"imageTag": "dev"},
				"controller": map[string]any{"image": map[string]any{"tag": "own"}},
			},
			wantImages: map[string]string{
				"koord-queue":             "ghcr.io/koord-queue/koord-queue:own",
				"koord-queue-controllers": "ghcr.io/koord-queue/koord-queue-controllers:dev",
			},
		},
		"pull secrets by name and as references": {
			values:      map[string]any{"global": map[string]any{"imagePullSecrets": []any{"regcred", map[string]any{"name": "other"}}}},
			wantSecrets: []any{map[string]any{"name": "regcred"}, map[string]any{"name": "other"}},
		},
		"a pull secret without a name is refused": {
			values:    map[string]any{"global": map[string]any{"imagePullSecrets": []any{map[string]any{"nam": "regcred"}}}},
			wantError: "imagePullSecrets",
		},
	} {
		t.Run(name, func(t *testing.T) {
			objs := renderOrRefuse(t, chartutil.CoalesceTables(tc.values, everything()), tc.wantError)
			if objs == nil {
				return
			}
			gotImages := map[string]string{}
			pods := 0
			for _, o := range objs {
				podSpec, ok, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
				if o.GetKind() == "Pod" {
					podSpec, ok, _ = unstructured.NestedMap(o.Object, "spec")
				}
				if !ok {
					continue
				}
				pods++
				secrets, _, _ := unstructured.NestedSlice(podSpec, "imagePullSecrets")
				if diff := cmp.Diff(tc.wantSecrets, secrets); diff != "" {
					t.Errorf("%s %s imagePullSecrets (-want +got):\n%s", o.GetKind(), o.GetName(), diff)
				}
				containers, _, _ := unstructured.NestedSlice(podSpec, "containers")
				for _, c := range containers {
					gotImages[o.GetName()] = c.(map[string]any)["image"].(string)
				}
			}
			if pods == 0 {
				t.Fatal("the chart renders no pod template")
			}
			if tc.wantImages != nil {
				if diff := cmp.Diff(tc.wantImages, gotImages); diff != "" {
					t.Errorf("images (-want +got):\n%s", diff)
				}
			}
		})
	}
}
