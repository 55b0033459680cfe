package v1

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParse(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    *KoordQueueConfiguration
		wantErr string
	}{
		"empty file gets the default plugins": {
			in: "",
			want: &KoordQueueConfiguration{
				TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
				Plugins:  DefaultPlugins,
			},
		},
		"seed 004 chart config": {
			in: `apiVersion: scheduling.k8s.io/v1
kind: KoordQueueConfiguration
plugins:
- name: Priority
- name: ElasticQuotaV2
`,
			want: &KoordQueueConfiguration{
				TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
				Plugins:  DefaultPlugins,
			},
		},
		"reclaim protect time reads a duration and empty plugin args are kept": {
			in: `apiVersion: scheduling.k8s.io/v1
kind: KoordQueueConfiguration
pluginConfigs:
  ElasticQuotaV2: {}
defaultReclaimProtectTime: 5m
`,
			want: &KoordQueueConfiguration{
				TypeMeta:                  metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
				Plugins:                   DefaultPlugins,
				PluginConfigs:             map[string]json.RawMessage{"ElasticQuotaV2": json.RawMessage(`{}`)},
				DefaultReclaimProtectTime: &metav1.Duration{Duration: 5 * time.Minute},
			},
		},
		"the older name of ElasticQuotaV2": {
			in: "plugins: [{name: ElasticQuota}, {name: Priority}]",
			want: &KoordQueueConfiguration{
				TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
				Plugins:  []Plugin{{Name: PluginElasticQuota}, {Name: PluginPriority}},
			},
		},
		"plugin args are refused": {
			in: `pluginConfigs:
  ElasticQuota:
    checkQuotaOversold: true
`,
			wantErr: "pluginConfigs.ElasticQuota: per-plugin arguments are not supported",
		},
		"a plugin list without ElasticQuotaV2 is refused": {
			in:      "plugins: [{name: Priority}]",
			wantErr: "plugins [Priority]: not supported: koord-queue always orders units by priority and admits them against ElasticQuotas",
		},
		"both names of the quota plugin are refused": {
			in:      "plugins: [{name: Priority}, {name: ElasticQuota}, {name: ElasticQuotaV2}]",
			wantErr: "plugins [Priority ElasticQuota ElasticQuotaV2]: not supported",
		},
		"unknown plugin": {
			in:      "plugins: [{name: Priority}, {name: Gang}]",
			wantErr: `plugins[1].name "Gang": unknown plugin`,
		},
		"plugin listed twice": {
			in:      "plugins: [{name: Priority}, {name: Priority}]",
			wantErr: `plugins[1].name "Priority": listed twice`,
		},
		"negative reclaim protect time": {
			in:      "defaultReclaimProtectTime: -1m",
			wantErr: "must not be negative",
		},
		"misspelt field": {
			in:      "plugin: [{name: Priority}]",
			wantErr: `unknown field "plugin"`,
		},
		"wrong kind": {
			in:      "kind: KubeSchedulerConfiguration",
			wantErr: `kind "KubeSchedulerConfiguration"`,
		},
		"bad duration": {
			in:      "defaultReclaimProtectTime: soon",
			wantErr: "decoding KoordQueueConfiguration",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse() error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("defaultReclaimProtectTime: 90s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	if got, want := c.ReclaimProtectTime(), 90*time.Second; got != want {
		t.Errorf("ReclaimProtectTime() = %v, want %v", got, want)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("Load() of a missing file: want an error")
	}
	c, err = Load("")
	if err != nil {
		t.Fatalf("Load(\"\") error = %v", err)
	}
	if diff := cmp.Diff(DefaultPlugins, c.Plugins); diff != "" {
		t.Errorf("default plugins (-want +got):\n%s", diff)
	}
}
