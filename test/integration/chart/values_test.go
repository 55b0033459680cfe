package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestKoordQueueV18ValuesFile: Koord-Queue v1.8's published values file
// alone is refused for its images (Koord-Queue's own binaries); with the
// image values migration.md's step 1 sets beside it, it renders, and its
// values take effect where this chart has them.
func TestKoordQueueV18ValuesFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "koord-queue-v1.8", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	if _, err := render(t, values); err == nil || !strings.Contains(err.Error(), "controller.image.repository") {
		t.Errorf("rendering Koord-Queue v1.8's values file alone: error %v, want one naming controller.image.repository", err)
	}
	objs, err := render(t, withImagesOf(values, "registry.example.com/team"))
	if err != nil {
		t.Fatalf("rendering with Koord-Queue v1.8's values file and migration.md's image values: %v", err)
	}
	// Its controller.enableVisibilityServer: false turns the REST API off.
	if args := containerArgs(t, objs, "koord-queue"); !slices.Contains(args, "--visibility-bind-address=") {
		t.Errorf("koord-queue's args %v: want the visibility server off, as controller.enableVisibilityServer: false asks", args)
	}
	// Its top-level burst: 50 applies to both binaries.
	for _, d := range []string{"koord-queue", "koord-queue-controllers"} {
		if args := containerArgs(t, objs, d); !slices.Contains(args, "--burst=50") {
			t.Errorf("%s's args %v: want --burst=50 from the top-level burst", d, args)
		}
	}
}

// TestKoordQueueV18Values: each Koord-Queue v1.8 value either takes effect
// or fails the render with a message naming it; so does an unknown key.
func TestKoordQueueV18Values(t *testing.T) {
	toleration := map[string]any{"key": "dedicated", "operator": "Exists"}
	for name, tc := range map[string]struct {
		values map[string]any
		// wantError is in the render's error; empty: it renders.
		wantError string
		// wantArgs are in both Deployments' args.
		wantArgs []string
		// wantControllersArgs are in koord-queue-controllers' args.
		wantControllersArgs []string
		// wantTolerations are both Deployments' tolerations.
		wantTolerations []any
	}{
		"top-level qps and burst go to both binaries": {
			values:   map[string]any{"qps": 20, "burst": 40},
			wantArgs: []string{"--qps=20", "--burst=40"},
		},
		"top-level tolerations go to both Deployments, before their own": {
			values: map[string]any{
				"tolerations": []any{toleration},
				"controller":  map[string]any{"tolerations": []any{map[string]any{"key": "own", "operator": "Exists"}}},
			},
			wantTolerations: []any{toleration},
		},
		"oversellrate 1 is what koord-queue does": {values: map[string]any{"oversellrate": 1}},
		"oversellrate above 1 is refused":         {values: map[string]any{"oversellrate": 1.5}, wantError: "oversellrate: 1.5 is not supported"},
		"jobRunningTimeout and jobBackoffTime go to koord-queue-controllers": {
			values:              map[string]any{"jobRunningTimeout": "10m", "jobBackoffTime": "1m30s"},
			wantControllersArgs: []string{"--job-running-timeout=10m", "--job-backoff-time=1m30s"},
		},
		"Koord-Queue's defaults, off": {
			values:              map[string]any{"jobRunningTimeout": "0", "jobBackoffTime": "0"},
			wantControllersArgs: []string{"--job-running-timeout=0", "--job-backoff-time=0"},
		},
		"a jobRunningTimeout without a unit is refused": {values: map[string]any{"jobRunningTimeout": "600"}, wantError: "jobRunningTimeout"},
		"a negative jobBackoffTime is refused":          {values: map[string]any{"jobBackoffTime": "-5m"}, wantError: "jobBackoffTime"},
		"installation.namespace koord-queue":            {values: map[string]any{"installation": map[string]any{"namespace": "koord-queue"}}},
		"another installation.namespace is refused":     {values: map[string]any{"installation": map[string]any{"namespace": "queues"}}, wantError: `installation.namespace: "queues" differs from queueNamespace "koord-queue"`},
		"installation.namespace equal to queueNamespace": {
			values: map[string]any{"queueNamespace": "queues", "installation": map[string]any{"namespace": "queues"}},
		},
		"roleListGroups other than * is refused": {
			values:    map[string]any{"installation": map[string]any{"roleListGroups": []any{"apps"}}},
			wantError: "installation.roleListGroups",
		},
		"enableBlockingMode is refused": {
			values:    map[string]any{"controller": map[string]any{"enableBlockingMode": true}},
			wantError: "controller.enableBlockingMode",
		},
		"enableResourceCheckWithScheduler is refused": {
			values:    map[string]any{"controller": map[string]any{"enableResourceCheckWithScheduler": false}},
			wantError: "controller.enableResourceCheckWithScheduler",
		},
		"defaultPreemptible is refused": {
			values:    map[string]any{"controller": map[string]any{"defaultPreemptible": true}},
			wantError: "controller.defaultPreemptible",
		},
		"Koord-Queue's plugins, in either order": {
			values: map[string]any{"pluginConfigs": map[string]any{"plugins": []any{map[string]any{"name": "ElasticQuotaV2"}, map[string]any{"name": "Priority"}}}},
		},
		"the older ElasticQuota name": {
			values: map[string]any{"pluginConfigs": map[string]any{"plugins": []any{map[string]any{"name": "Priority"}, map[string]any{"name": "ElasticQuota"}}}},
		},
		"empty pluginConfigs.pluginConfigs": {
			values: map[string]any{"pluginConfigs": map[string]any{"pluginConfigs": map[string]any{}}},
		},
		"a plugin list without Priority is refused": {
			values:    map[string]any{"pluginConfigs": map[string]any{"plugins": []any{map[string]any{"name": "ElasticQuotaV2"}}}},
			wantError: "pluginConfigs.plugins: [ElasticQuotaV2] is not supported",
		},
		"another plugin is refused": {
			values: map[string]any{"pluginConfigs": map[string]any{"plugins": []any{
				map[string]any{"name": "Priority"}, map[string]any{"name": "ElasticQuotaV2"}, map[string]any{"name": "Gang"},
			}}},
			wantError: "pluginConfigs.plugins: [Priority ElasticQuotaV2 Gang] is not supported",
		},
		"per-plugin arguments are refused": {
			values:    map[string]any{"pluginConfigs": map[string]any{"pluginConfigs": map[string]any{"ElasticQuotaV2": map[string]any{"x": 1}}}},
			wantError: "pluginConfigs.pluginConfigs: per-plugin arguments are not supported",
		},
		"an unknown pluginConfigs key is refused by name": {
			values:    map[string]any{"pluginConfigs": map[string]any{"defaultReclaimProtectionTime": "5m"}},
			wantError: "defaultReclaimProtectionTime",
		},
		"an unknown top-level key is refused by name": {values: map[string]any{"webhok": map[string]any{"enable": true}}, wantError: "webhok"},
		"an unknown nested key is refused by name": {
			values:    map[string]any{"extension": map[string]any{"pytorch": map[string]any{"enabled": true}}},
			wantError: "enabled",
		},
	} {
		t.Run(name, func(t *testing.T) {
			objs := renderOrRefuse(t, tc.values, tc.wantError)
			if objs == nil {
				return
			}
			if args := containerArgs(t, objs, "koord-queue-controllers"); len(tc.wantControllersArgs) > 0 {
				for _, want := range tc.wantControllersArgs {
					if !slices.Contains(args, want) {
						t.Errorf("koord-queue-controllers' args %v: want %s", args, want)
					}
				}
			}
			for _, d := range []string{"koord-queue", "koord-queue-controllers"} {
				args := containerArgs(t, objs, d)
				for _, want := range tc.wantArgs {
					if !slices.Contains(args, want) {
						t.Errorf("%s's args %v: want %s", d, args, want)
					}
				}
				if tc.wantTolerations != nil {
					got, _, _ := unstructured.NestedSlice(find(objs, "Deployment", d).Object, "spec", "template", "spec", "tolerations")
					if len(got) < len(tc.wantTolerations) {
						t.Fatalf("%s's tolerations %v: want %v first", d, got, tc.wantTolerations)
					}
					if diff := cmp.Diff(tc.wantTolerations, got[:len(tc.wantTolerations)]); diff != "" {
						t.Errorf("%s's first tolerations (-want +got):\n%s", d, diff)
					}
				}
			}
		})
	}
}
