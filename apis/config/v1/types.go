// Package v1 is the file format of koord-queue's --config,
// KoordQueueConfiguration in apiVersion scheduling.k8s.io/v1, read the way
// Koord-Queue reads it: defaulted, validated, and strict about unknown fields.
package v1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// APIVersion and Kind identify the file format.
	APIVersion = "scheduling.k8s.io/v1"
	Kind       = "KoordQueueConfiguration"

	// PluginPriority orders units by priority.
	PluginPriority = "Priority"
	// PluginElasticQuotaV2 admits units against ElasticQuota objects.
	PluginElasticQuotaV2 = "ElasticQuotaV2"
	// PluginElasticQuota is the older name of PluginElasticQuotaV2, accepted for compatibility.
	PluginElasticQuota = "ElasticQuota"
)

// KoordQueueConfiguration configures the koord-queue binary.
type KoordQueueConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// plugins enabled, in order; default [Priority, ElasticQuotaV2].
	Plugins []Plugin `json:"plugins,omitempty"`

	// pluginConfigs holds per-plugin arguments keyed by plugin name.
	PluginConfigs map[string]json.RawMessage `json:"pluginConfigs,omitempty"`

	// defaultReclaimProtectTime is how long an admitted unit is safe from
	// reclaim by other quotas, such as "5m"; zero disables the protection.
	DefaultReclaimProtectTime *metav1.Duration `json:"defaultReclaimProtectTime,omitempty"`
}

// Plugin names one plugin.
type Plugin struct {
	Name string `json:"name"`
}
