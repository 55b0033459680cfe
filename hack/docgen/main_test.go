package main

import (
	"go/ast"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

func TestParseHelp(t *testing.T) {
	help := `Usage of koord-queue:
  -burst int
    	burst of queries to the API server (default 100)
  -kubeconfig string
    	Paths to a kubeconfig. Only required if out-of-cluster.
  -leader-elect
    	elect a leader; only the leader admits (default true)
  -zap-devel
    	Development Mode defaults
    	spanning two lines
`
	got, err := parseHelp(help)
	if err != nil {
		t.Fatal(err)
	}
	want := []helpFlag{
		{name: "burst", typ: "int", def: "`100`", usage: "burst of queries to the API server"},
		{name: "kubeconfig", typ: "string", usage: "Paths to a kubeconfig. Only required if out-of-cluster."},
		{name: "leader-elect", typ: "bool", def: "`true`", usage: "elect a leader; only the leader admits"},
		{name: "zap-devel", typ: "bool", def: "`false`", usage: "Development Mode defaults spanning two lines"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(helpFlag{})); diff != "" {
		t.Errorf("parseHelp (-want +got):\n%s", diff)
	}
	if _, err := parseHelp("flag provided but not defined: -h"); err == nil {
		t.Error("parseHelp of an output with no flag: want an error")
	}
}

func TestStripName(t *testing.T) {
	cases := map[string]struct{ doc, name, want string }{
		"is":             {"queuePolicy is Priority (the default).", "queuePolicy", "Priority (the default)."},
		"colon":          {"LabelX: marks a quota.", "LabelX", "Marks a quota."},
		"kept otherwise": {"name of the admission check.", "name", "name of the admission check."},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := stripName(tc.doc, tc.name); got != tc.want {
				t.Errorf("stripName(%q, %q) = %q, want %q", tc.doc, tc.name, got, tc.want)
			}
		})
	}
}

func TestWalkSchema(t *testing.T) {
	schema := `{"properties": {
  "global": {"additionalProperties": true, "properties": {"imagePrefix": {"type": "string"}}},
  "extension": {"properties": {"batchjob": {"properties": {"enable": {"type": "boolean"}}}}},
  "controller": {"properties": {
    "resources": {"type": "object", "description": "a container's resources"},
    "enableBlockingMode": {"description": "Koord-Queue v1.8", "x-honoured": "no: fails the render"}}}}}`
	values := `global:
  imagePrefix: ghcr.io/koord-queue
extension:
  batchjob:
    enable: true    # batch/v1 Job
controller:
  # resources of the container
  resources:
    requests: {cpu: 100m}
    limits:
      memory: 512Mi
`
	var s, v yaml.Node
	if err := yaml.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(values), &v); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := walkSchema(&b, s.Content[0], v.Content[0], "", ""); err != nil {
		t.Fatal(err)
	}
	want := "| `global.imagePrefix` | `ghcr.io/koord-queue` | yes |  |\n" +
		"| `global.*` | | no | any other key is accepted and ignored (Helm's global values, which parent charts share) |\n" +
		"| `extension.batchjob.enable` | `true` | yes | batch/v1 Job |\n" +
		"| `controller.resources` | `{requests: {cpu: 100m}, limits: {memory: 512Mi}}` | yes | resources of the container |\n" +
		"| `controller.enableBlockingMode` |  | no: fails the render | Koord-Queue v1.8 |\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}

	if err := yaml.Unmarshal([]byte("controller:\n  replicas: 1\n"), &v); err != nil {
		t.Fatal(err)
	}
	if err := walkSchema(&strings.Builder{}, s.Content[0], v.Content[0], "", ""); err == nil || !strings.Contains(err.Error(), "controller.replicas") {
		t.Errorf("a value the schema does not list: %v, want an error naming it", err)
	}
}

func TestKeyKind(t *testing.T) {
	cases := map[string]string{
		"LabelQuotaName":          "Label",
		"labelRole":               "Label",
		"AnnotationReleasedBy":    "Annotation",
		"annotationOutgrown":      "Annotation",
		"SchedulingGateAdmission": "SchedulingGate",
		"labelled":                "",
		"DefaultQueue":            "",
	}
	for name, want := range cases {
		if got := keyKind(name); got != want {
			t.Errorf("keyKind(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestStringConstantsTakesUnexportedOnesAndGroupDocs(t *testing.T) {
	dir := t.TempDir()
	src := `package p

// annotationMark marks a unit.
const annotationMark = "koord-queue/mark"

// Labels another program puts on its pods.
const (
	labelA = "example.com/a"
	labelB = "example.com/b"
)

const notAKey = 3
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := stringConstants([]string{dir}, func(name string) bool { return keyKind(name) != "" })
	if err != nil {
		t.Fatal(err)
	}
	want := []constant{
		{pkg: dir, name: "annotationMark", value: "koord-queue/mark", doc: "annotationMark marks a unit.\n"},
		{pkg: dir, name: "labelA", value: "example.com/a", doc: "Labels another program puts on its pods.\n"},
		{pkg: dir, name: "labelB", value: "example.com/b", doc: "Labels another program puts on its pods.\n"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(constant{})); diff != "" {
		t.Errorf("stringConstants (-want +got):\n%s", diff)
	}
}

func TestStructFieldsExpandOnlyTypesWithoutSections(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// List is a page.
type List struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	// ListMeta's continue is set when a page leaves units out.
	metav1.ListMeta ` + "`json:\"metadata\"`" + `
	// Total counts the units of every page.
	Total int ` + "`json:\"total\"`" + `
	// Items is the page.
	Items []Item ` + "`json:\"items\"`" + `
}

// Item has a section of its own.
type Item struct {
	// Meta names the item.
	Meta Meta ` + "`json:\"metadata\"`" + `
	Hidden string ` + "`json:\"-\"`" + `
}

// Meta is expanded where a field has it.
type Meta struct {
	Name string ` + "`json:\"name,omitempty\"`" + `
}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	types, docs, err := goStructs(dir, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("List is a page.", docs["List"]); diff != "" {
		t.Errorf("List's doc (-want +got):\n%s", diff)
	}
	inline := map[string]*ast.StructType{"Meta": types["Meta"]}
	var got strings.Builder
	for _, name := range []string{"List", "Item"} {
		writeStructFields(&got, inline, "", types[name], map[string]bool{})
	}
	want := "| `metadata` | `metav1.ListMeta` | ListMeta's continue is set when a page leaves units out. |\n" +
		"| `total` | `int` | Total counts the units of every page. |\n" +
		"| `items` | `[]Item` | The page. |\n" +
		"| `metadata` | `Meta` | Meta names the item. |\n" +
		"| `metadata.name` | `string` |  |\n"
	if diff := cmp.Diff(want, got.String()); diff != "" {
		t.Errorf("writeStructFields (-want +got):\n%s", diff)
	}
}
