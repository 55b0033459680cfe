package compare

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Config is one of Kueue's scheduler performance scenarios and the
// koord-queue scenario that mirrors it.
type Config struct {
	// Scenario is koord-queue's scenario (test/performance/scenario).
	Scenario string
	// InModule: the generator.yaml and rangespec.yaml are in Kueue's module
	// at ModuleDir (test/performance/scheduler/configs/<name>); otherwise
	// they are copies committed in this repository at RepoDir.
	InModule  bool
	ModuleDir string
	RepoDir   string
	// Timeout is the runner's --timeout: Kueue's CI target's, or longer
	// where these machines need it; zero: the runner's default (10
	// minutes).
	Timeout time.Duration
}

// Configs are the scenarios perfcompare runs.
var Configs = map[string]Config{
	// make test-performance-scheduler, whose runner keeps its default
	// --timeout of 10 minutes: Kueue's CI machines finish in about 7. On two
	// cores with the audit log, Kueue's run takes about 11 (613.8 to 658.8 s
	// of wall in docs/performance.md's three pairs), and at 10 its runner
	// gave up with 14,575 of 15,000 workloads finished; a run that ends in
	// time is the same with 20.
	"baseline": {Scenario: "baseline", InModule: true, ModuleDir: "test/performance/scheduler/configs/baseline", Timeout: 20 * time.Minute},
	// make test-large-scale-performance-scheduler (--timeout=30m), whose
	// config came after v0.17.0: copied into configs/large-scale.
	"large-scale": {Scenario: "large-scale", RepoDir: "test/performance/compare/configs/large-scale", Timeout: 30 * time.Minute},
}

// ConfigNames lists Configs' names.
func ConfigNames() []string { return slices.Sorted(maps.Keys(Configs)) }

// ScenarioNames says which koord-queue scenario mirrors each config.
func ScenarioNames() string {
	var parts []string
	for _, name := range ConfigNames() {
		parts = append(parts, name+" → "+Configs[name].Scenario)
	}
	return strings.Join(parts, ", ")
}

// Paths are the config's generator.yaml and rangespec.yaml, given Kueue's
// module root and this repository's.
func (c Config) Paths(moduleDir, repoRoot string) (generator, rangeSpec string) {
	dir := filepath.Join(repoRoot, c.RepoDir)
	if c.InModule {
		dir = filepath.Join(moduleDir, c.ModuleDir)
	}
	return filepath.Join(dir, "generator.yaml"), filepath.Join(dir, "rangespec.yaml")
}
