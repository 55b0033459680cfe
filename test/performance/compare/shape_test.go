package compare

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

// TestScenariosMirrorKueueConfigs holds each koord-queue scenario that
// perfcompare pairs with a Kueue config to that config's shape: the same
// tree, quotas, preemption and workloads. Kueue's baseline is read from a
// copy of v0.17.0's (testdata), the large-scale config from the copy
// perfcompare runs.
func TestScenariosMirrorKueueConfigs(t *testing.T) {
	for _, tc := range []struct {
		config, generator string
	}{
		{"baseline", filepath.Join("testdata", "kueue-v0.17.0-baseline-generator.yaml")},
		{"large-scale", filepath.Join("configs", "large-scale", "generator.yaml")},
	} {
		t.Run(tc.config, func(t *testing.T) {
			cfg, err := ReadKueueGeneratorConfig(tc.generator)
			if err != nil {
				t.Fatal(err)
			}
			want, err := cfg.Shape()
			if err != nil {
				t.Fatal(err)
			}
			name := Configs[tc.config].Scenario
			s, err := scenario.Get(name, false)
			if err != nil {
				// The large-scale scenario is added to the catalog apart
				// from perfcompare; until then there is nothing to hold.
				t.Skipf("koord-queue has no scenario %q yet: %v", name, err)
			}
			got, err := ScenarioShape(&s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("koord-queue's %s against Kueue's %s (-want +got):\n%s", name, tc.config, diff)
			}
			if s.Units() != cfg.Workloads() {
				t.Errorf("koord-queue's %s creates %d units, Kueue's %s %d workloads", name, s.Units(), tc.config, cfg.Workloads())
			}
		})
	}
}

func TestConfigPaths(t *testing.T) {
	gen, rs := Configs["baseline"].Paths("/mod", "/repo")
	if diff := cmp.Diff([]string{"/mod/test/performance/scheduler/configs/baseline/generator.yaml", "/mod/test/performance/scheduler/configs/baseline/rangespec.yaml"}, []string{gen, rs}); diff != "" {
		t.Errorf("baseline's paths (-want +got):\n%s", diff)
	}
	gen, rs = Configs["large-scale"].Paths("/mod", "/repo")
	if diff := cmp.Diff([]string{"/repo/test/performance/compare/configs/large-scale/generator.yaml", "/repo/test/performance/compare/configs/large-scale/rangespec.yaml"}, []string{gen, rs}); diff != "" {
		t.Errorf("large-scale's paths (-want +got):\n%s", diff)
	}
	// The committed bounds parse as Kueue's checker parses them.
	spec, err := ReadKueueRangeSpec(filepath.Join("configs", "large-scale", "rangespec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Cmd.MaxWallMs != 1_416_000 || spec.WlClassesMaxAvgTimeToAdmissionMs["large"] != 127_000 {
		t.Errorf("large-scale rangespec: %+v", spec)
	}
}

// TestKueueConfigOfShortBaseline: the config perfcompare -short gives
// Kueue reads back as koord-queue's short baseline's shape.
func TestKueueConfigOfShortBaseline(t *testing.T) {
	s, err := scenario.Get("baseline", true)
	if err != nil {
		t.Fatal(err)
	}
	shape, err := ScenarioShape(&s)
	if err != nil {
		t.Fatal(err)
	}
	data, err := shape.KueueConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "generator.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := ReadKueueGeneratorConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cfg.Shape()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(shape, got); diff != "" {
		t.Errorf("the config's shape (-want +got):\n%s", diff)
	}
	if cfg.Workloads() != s.Units() {
		t.Errorf("the config creates %d workloads, the scenario %d units", cfg.Workloads(), s.Units())
	}
}
