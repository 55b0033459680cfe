package v1

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// DefaultPlugins are the plugins of a configuration that lists none.
var DefaultPlugins = []Plugin{{Name: PluginPriority}, {Name: PluginElasticQuotaV2}}

var knownPlugins = []string{PluginPriority, PluginElasticQuotaV2, PluginElasticQuota}

// Default fills the fields a configuration left out.
func Default(c *KoordQueueConfiguration) {
	if c.APIVersion == "" {
		c.APIVersion = APIVersion
	}
	if c.Kind == "" {
		c.Kind = Kind
	}
	if len(c.Plugins) == 0 {
		c.Plugins = slices.Clone(DefaultPlugins)
	}
}

// Validate reports every problem of a defaulted configuration at once.
func Validate(c *KoordQueueConfiguration) error {
	var errs []error
	if c.APIVersion != APIVersion {
		errs = append(errs, fmt.Errorf("apiVersion %q: want %q", c.APIVersion, APIVersion))
	}
	if c.Kind != Kind {
		errs = append(errs, fmt.Errorf("kind %q: want %q", c.Kind, Kind))
	}
	seen := map[string]bool{}
	for i, p := range c.Plugins {
		switch {
		case !slices.Contains(knownPlugins, p.Name):
			errs = append(errs, fmt.Errorf("plugins[%d].name %q: unknown plugin, want one of %v", i, p.Name, knownPlugins))
		case seen[p.Name]:
			errs = append(errs, fmt.Errorf("plugins[%d].name %q: listed twice", i, p.Name))
		}
		seen[p.Name] = true
	}
	if len(errs) == 0 && !runsAsListed(c.Plugins) {
		names := make([]string, len(c.Plugins))
		for i, p := range c.Plugins {
			names[i] = p.Name
		}
		errs = append(errs, fmt.Errorf("plugins %v: not supported: koord-queue always orders units by priority and admits them against ElasticQuotas (%s and %s) and runs no other plugin; list those two or none", names, PluginPriority, PluginElasticQuotaV2))
	}
	for _, name := range slices.Sorted(maps.Keys(c.PluginConfigs)) {
		if args := strings.TrimSpace(string(c.PluginConfigs[name])); args != "{}" && args != "null" && args != "" {
			errs = append(errs, fmt.Errorf("pluginConfigs.%s: per-plugin arguments are not supported (neither %s nor %s takes any); remove it or leave it {}", name, PluginPriority, PluginElasticQuotaV2))
		}
	}
	if d := c.DefaultReclaimProtectTime; d != nil && d.Duration < 0 {
		errs = append(errs, fmt.Errorf("defaultReclaimProtectTime %s: must not be negative", d.Duration))
	}
	return errors.Join(errs...)
}

// runsAsListed reports whether plugins (known, each once) name what
// koord-queue runs: Priority and ElasticQuotaV2 (or its older name).
func runsAsListed(plugins []Plugin) bool {
	var priority, quota bool
	for _, p := range plugins {
		priority = priority || p.Name == PluginPriority
		quota = quota || p.Name == PluginElasticQuotaV2 || p.Name == PluginElasticQuota
	}
	return len(plugins) == 2 && priority && quota
}

// Parse decodes, defaults and validates a configuration. Unknown fields are
// errors, so a misspelt key is not silently ignored.
func Parse(data []byte) (*KoordQueueConfiguration, error) {
	c := &KoordQueueConfiguration{}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return nil, fmt.Errorf("decoding KoordQueueConfiguration: %w", err)
	}
	Default(c)
	if err := Validate(c); err != nil {
		return nil, fmt.Errorf("invalid KoordQueueConfiguration: %w", err)
	}
	return c, nil
}

// Load reads a configuration file; an empty path gives the defaults.
func Load(path string) (*KoordQueueConfiguration, error) {
	if path == "" {
		return Parse(nil)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ReclaimProtectTime is the configured protection, zero when unset.
func (c *KoordQueueConfiguration) ReclaimProtectTime() time.Duration {
	if c.DefaultReclaimProtectTime == nil {
		return 0
	}
	return c.DefaultReclaimProtectTime.Duration
}
