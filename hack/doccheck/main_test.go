package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testSchema = `{"properties": {
  "global": {"type": "object", "additionalProperties": true, "properties": {"imagePrefix": {"type": "string"}}},
  "webhook": {"type": "object", "additionalProperties": false, "properties": {"enable": {"type": "boolean"}}},
  "visibility": {"type": "object", "additionalProperties": false, "properties": {"insecureServing": {"type": "boolean"}}},
  "metrics": {"type": "object", "additionalProperties": false, "properties": {"secure": {"type": "boolean"}}},
  "extension": {"type": "object", "additionalProperties": false, "properties": {
    "batchjob": {"type": "object", "additionalProperties": false, "properties": {"enable": {"type": "boolean"}}},
    "koord-queue-controllers": {"type": "object", "additionalProperties": false, "properties": {
      "repository": {"type": "string"}, "tag": {"type": "string"}, "resources": {"type": "object"}}}}}}}`

func TestCheckDoc(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal([]byte(testSchema), &schema); err != nil {
		t.Fatal(err)
	}
	flags := map[string]bool{"--burst": true, "--job-running-timeout": true}
	metrics := map[string]bool{"koord_queue_wait_seconds": true}
	keys := map[string]bool{"koord-queue/queue-policy": true, "quota.scheduling.koordinator.sh/name": true, "koord-queue.x-k8s.io/admission": true}
	for name, tc := range map[string]struct {
		doc  string
		want []string
	}{
		"flags of ours and of other programs": {
			doc: "`--burst` and `--job-running-timeout=10m`; kubectl's `--cascade=orphan`.",
		},
		"a flag neither binary has": {
			doc:  "Set `--job-timeout=10m`.",
			want: []string{"flag --job-timeout: neither binary has it (docs/reference/flags.md)"},
		},
		"flags in code blocks are another program's": {
			doc:  "```sh\nkubectl get --raw /apis\n```\n`--raw` aside.",
			want: []string{"flag --raw: neither binary has it (docs/reference/flags.md)"},
		},
		"chart values, with placeholders, alternatives and open objects": {
			doc: "`webhook.enable: true`, `extension.<name>.enable`, `extension.koord-queue-controllers.{repository,tag}`, " +
				"`extension.koord-queue-controllers.resources.limits.memory`, `global.anything`, `visibility.insecureServing=true`",
		},
		"a chart value the schema does not accept": {
			doc:  "Turn on `webhook.enabled` or `extension.koord-queue-controllers.{repository,tags}`.",
			want: []string{"chart value webhook.enabled: values.schema.json does not accept it", "chart value extension.koord-queue-controllers.{repository,tags}: values.schema.json does not accept it"},
		},
		"--set in a code block": {
			doc:  "```sh\nhelm install x charts/koord-queue --set global.imagePrefix=r \\\n  --set 'webhook.enabled=true'\n```",
			want: []string{"--set webhook.enabled: the chart has no such value (values.schema.json)"},
		},
		"file names, API groups and Go names are not values": {
			doc: "[m](metrics.md) `metrics.md`, `visibility.koord-queue.x-k8s.io/v1alpha1`, `visibility.HTTPClientTrusting`",
		},
		"metrics, a histogram's series included": {
			doc: "`koord_queue_wait_seconds_bucket` and koord_queue_wait_seconds_count",
		},
		"a metric the code does not have": {
			doc:  "Alert on koord_queue_pending_units.",
			want: []string{"metric koord_queue_pending_units: no such metric (docs/reference/metrics.md)"},
		},
		"labels, annotations and gates the code has, in prose and in code blocks": {
			doc: "Label it `quota.scheduling.koordinator.sh/name=team-a`; the gate `koord-queue.x-k8s.io/admission`.\n" +
				"```yaml\nmetadata:\n  labels:\n    koord-queue/queue-policy: Block\n```",
		},
		"keys of other programs, API versions, paths and wildcards are not checked": {
			doc: "Kueue's `kueue.x-k8s.io/queue-name`; `visibility.koord-queue.x-k8s.io/v1alpha1`, `scheduling.x-k8s.io/v1alpha1`; " +
				"`ghcr.io/koord-queue/koord-queue`, `charts/koord-queue/values.yaml`, `~/.cache/koord-queue/x`; `koord-queue/*`, " +
				"`quota.scheduling.koordinator.sh/<key>`.",
		},
		"a label or annotation the code does not have": {
			doc: "Set `koord-queue/queue-polcy: Block`.\n```yaml\nannotations:\n  quota.scheduling.koordinator.sh/max-jobs: \"3\"\n```\n" +
				"Kueue's own kueue.x-k8s.io/priority-class.",
			want: []string{
				"label or annotation koord-queue/queue-polcy: the code has no such key (docs/reference/labels-and-annotations.md)",
				"label or annotation quota.scheduling.koordinator.sh/max-jobs: the code has no such key (docs/reference/labels-and-annotations.md)",
				"label or annotation kueue.x-k8s.io/priority-class: the code has no such key (docs/reference/labels-and-annotations.md)",
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := checkDoc(tc.doc, known{flags: flags, metrics: metrics, keys: keys}, schema)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckLayout(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"pkg/a/a.go", "pkg/a/sub/s.go", "pkg/b/b.go", "pkg/b/testdata/x.go", "hack/tools/t.go", "_output/o.go", "docs/contributing.md"} {
		path := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		content := "package x\n"
		if filepath.Ext(f) == ".md" {
			content = "# C\n\n## Layout\n\n| folder | what |\n|---|---|\n| `pkg/a`, `hack/tools` | a |\n\n## Next\n\n| `pkg/b` | not the layout |\n"
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := checkLayout(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"docs/contributing.md: the layout table has no row for pkg/b (nor for a folder above it)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestCheckLinks(t *testing.T) {
	root := t.TempDir()
	pages := map[string]string{
		"docs/concepts/a.md": "# A\n\n## The quota tree: max, min\n\n## Notes\n\n## Notes\n\n```sh\n# not a heading\n```\n",
		"docs/tasks/b.md": "# B\n\n## Steps\n\n" +
			"[tree](../concepts/a.md#the-quota-tree-max-min), [second notes](../concepts/a.md#notes-1), [steps](#steps), " +
			"[folder](../concepts/), [site](https://example.com/x.md#y), [chart](../../charts/values.yaml#anything)\n" +
			"[moved](../extensions.md#the-pod-gate), [gone](../concepts/a.md#the-pod-gate), [self](#step), " +
			"[comment](../concepts/a.md#not-a-heading)\n" +
			"```sh\n[in a block](missing.md)\n```\n",
		"charts/values.yaml": "x: 1\n",
	}
	for name, content := range pages {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := checkLinks(root, "docs/tasks/b.md", pages["docs/tasks/b.md"])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"docs/tasks/b.md: link ../extensions.md#the-pod-gate: no such file docs/extensions.md",
		"docs/tasks/b.md: link ../concepts/a.md#the-pod-gate: docs/concepts/a.md has no heading #the-pod-gate",
		"docs/tasks/b.md: link #step: docs/tasks/b.md has no heading #step",
		"docs/tasks/b.md: link ../concepts/a.md#not-a-heading: docs/concepts/a.md has no heading #not-a-heading",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
