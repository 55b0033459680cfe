// Command doccheck fails when the user docs (README.md, docs/**/*.md) name
// something the code does not have, so that they cannot drift from it
// (make verify runs it):
//
//   - a flag (`--name` or `--name=value` in inline code) that neither binary
//     has, by docs/reference/flags.md, and that is not another program's
//     (otherFlags);
//   - a chart value (inline code `a.b.c`, a.b.c=v or a.b.c: v, whose first
//     part is a top-level value, and every `--set a.b=v` of a code block)
//     that charts/koord-queue/values.schema.json does not accept;
//   - a metric koord_queue_* that docs/reference/metrics.md does not list
//     (with a histogram's _bucket, _sum and _count) and that no Go string of
//     pkg/ or cmd/ spells out (a workqueue's name, say);
//   - a label, annotation or scheduling gate key of koord-queue's, Koord-Queue's,
//     Koordinator's quota or Kueue's (koord-queue/..., *.koord-queue.x-k8s.io/...,
//     quota.scheduling.koordinator.sh/..., kueue.x-k8s.io/...,
//     scheduling.x-k8s.io/...), anywhere in a page, that
//     docs/reference/labels-and-annotations.md does not list, that no Go
//     string of apis/, pkg/ or cmd/ spells out (test builders aside) and
//     that is not another program's (otherKeys);
//
// and when a relative link of a page names a file that does not exist, or
// a #fragment that is no heading of the page it names; and when the layout
// table of docs/contributing.md leaves out a folder holding Go code: every
// such folder is a row or under one.
//
// The reference pages are generated from the code (make generate) and
// checked fresh by make verify, so they stand for it here.
//
// Usage: go run ./hack/doccheck (from the repository's root)
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// otherFlags are flags the docs name of programs other than koord-queue's,
// with the program.
var otherFlags = map[string]string{
	"--api-audiences":                  "kube-apiserver",
	"--enable-aggregator-routing":      "kube-apiserver",
	"--max-requests-inflight":          "kube-apiserver",
	"--max-mutating-requests-inflight": "kube-apiserver",
	"--kube-api-qps":                   "kube-controller-manager",
	"--cascade":                        "kubectl delete",
	"--grace-period":                   "kubectl delete",
	"--gang-scheduler-name":            "the training-operator",
}

// otherKeys are label and annotation keys the docs name that koord-queue
// neither reads nor writes, with the program whose they are.
var otherKeys = map[string]string{
	"kueue.x-k8s.io/queue-name":                        "Kueue",
	"kueue.x-k8s.io/job-min-parallelism":               "Kueue",
	"kueue.x-k8s.io/job-completions-equal-parallelism": "Kueue",
	"quota.scheduling.koordinator.sh/preemptible":      "koord-scheduler",
	"koord-queue/job-has-enqueued":                     "Koord-Queue v1.8",
}

func main() {
	problems, err := check(".")
	if err != nil {
		fmt.Fprintf(os.Stderr, "doccheck: %v\n", err)
		os.Exit(1)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("doccheck: %d mentions in the docs of what the code does not have: fix the doc, or the code\n", len(problems))
		os.Exit(1)
	}
}

// check returns every problem of the docs under root.
func check(root string) ([]string, error) {
	flags, err := referenceNames(filepath.Join(root, "docs/reference/flags.md"))
	if err != nil {
		return nil, err
	}
	metrics, err := referenceNames(filepath.Join(root, "docs/reference/metrics.md"))
	if err != nil {
		return nil, err
	}
	if err := addGoStrings(root, []string{"pkg", "cmd"}, metricLiteral, metrics); err != nil {
		return nil, err
	}
	keys, err := referenceNames(filepath.Join(root, "docs/reference/labels-and-annotations.md"))
	if err != nil {
		return nil, err
	}
	if err := addGoStrings(root, []string{"apis", "pkg", "cmd"}, keyLiteral, keys); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(root, "charts/koord-queue/values.schema.json"))
	if err != nil {
		return nil, err
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, fmt.Errorf("values.schema.json: %w", err)
	}
	docs, err := docFiles(root)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, path := range docs {
		text, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			return nil, err
		}
		for _, p := range checkDoc(string(text), known{flags: flags, metrics: metrics, keys: keys}, schema) {
			problems = append(problems, path+": "+p)
		}
		links, err := checkLinks(root, path, string(text))
		if err != nil {
			return nil, err
		}
		problems = append(problems, links...)
	}
	layout, err := checkLayout(root)
	if err != nil {
		return nil, err
	}
	return append(problems, layout...), nil
}

// docFiles are README.md and every page under docs/, relative to root.
func docFiles(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		rel, err := filepath.Rel(root, path)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	return files, err
}

var (
	codeBlock  = regexp.MustCompile("(?s)```.*?```")
	inlineCode = regexp.MustCompile("`([^`\n]+)`")
	flagToken  = regexp.MustCompile(`^(--[a-z0-9][a-z0-9-]*)(=.*)?$`)
	setArg     = regexp.MustCompile(`--set(?:-string)? +'?([^=' ]+)=`)
	metricName = regexp.MustCompile(`koord_queue_[a-z0-9_]*[a-z0-9]`)
	valueToken = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*(\.([a-zA-Z0-9-]+|<[^>]+>|\{[^}]+\}|\*))+`)
	// keyPrefix is the prefix of every key labelKey finds.
	keyPrefix = `(?:koord-queue|[a-z0-9-]+(?:\.[a-z0-9-]+)*\.koord-queue\.x-k8s\.io|koord-queue\.x-k8s\.io|` +
		`quota\.scheduling\.koordinator\.sh|kueue\.x-k8s\.io|scheduling\.x-k8s\.io)/`
	// labelKey is a key not inside a path or URL (not after a letter, digit,
	// '.', '/', '_', '~' or '-'); its name may hold a <placeholder> or *.
	labelKey      = regexp.MustCompile(`(?:^|[^A-Za-z0-9./_~-])(` + keyPrefix + `[A-Za-z0-9._*<>-]+)`)
	keyLiteral    = regexp.MustCompile(`"(` + keyPrefix + `[A-Za-z0-9._-]+)"`)
	metricLiteral = regexp.MustCompile(`"(koord_queue_[a-z0-9_]+)"`)
	// apiVersion is the name part of an API group's version
	// (scheduling.x-k8s.io/v1alpha1), which is no key.
	apiVersion = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)
)

// known is what the code has, by the reference pages and its Go strings.
type known struct{ flags, metrics, keys map[string]bool }

// checkDoc returns the problems of one page.
func checkDoc(text string, code known, schema map[string]any) []string {
	flags, metrics := code.flags, code.metrics
	var problems []string
	for _, m := range metricName.FindAllString(text, -1) {
		base := m
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(m, suffix); ok && metrics[b] {
				base = b
			}
		}
		if !metrics[base] {
			problems = append(problems, fmt.Sprintf("metric %s: no such metric (docs/reference/metrics.md)", m))
		}
	}
	for _, m := range labelKey.FindAllStringSubmatch(text, -1) {
		key := strings.TrimRight(m[1], ".")
		_, name, _ := strings.Cut(key, "/")
		if code.keys[key] || otherKeys[key] != "" || apiVersion.MatchString(name) || strings.ContainsAny(name, "*<>") {
			continue
		}
		problems = append(problems, fmt.Sprintf("label or annotation %s: the code has no such key (docs/reference/labels-and-annotations.md)", key))
	}
	for _, block := range codeBlock.FindAllString(text, -1) {
		for _, m := range setArg.FindAllStringSubmatch(block, -1) {
			if !acceptsValue(schema, m[1]) {
				problems = append(problems, fmt.Sprintf("--set %s: the chart has no such value (values.schema.json)", m[1]))
			}
		}
	}
	prose := codeBlock.ReplaceAllString(text, "")
	for _, m := range inlineCode.FindAllStringSubmatch(prose, -1) {
		code := m[1]
		if f := flagToken.FindStringSubmatch(code); f != nil {
			if !flags[f[1]] && otherFlags[f[1]] == "" {
				problems = append(problems, fmt.Sprintf("flag %s: neither binary has it (docs/reference/flags.md)", f[1]))
			}
			continue
		}
		v := valueToken.FindString(code)
		if v == "" || strings.ContainsAny(code[len(v):min(len(code), len(v)+1)], "/(") {
			continue
		}
		top, _, _ := strings.Cut(v, ".")
		props, _ := schema["properties"].(map[string]any)
		if _, ok := props[top]; !ok || notAValue(v) {
			continue
		}
		if !acceptsValue(schema, v) {
			problems = append(problems, fmt.Sprintf("chart value %s: values.schema.json does not accept it", v))
		}
	}
	return problems
}

// notAValue: a file name, an API group or a Go identifier that begins
// with a top-level value's name.
func notAValue(v string) bool {
	for _, suffix := range []string{".md", ".go", ".yaml", ".json", ".io", ".sh"} {
		if strings.HasSuffix(v, suffix) {
			return true
		}
	}
	for _, part := range strings.Split(v, ".")[1:] {
		if part != "" && part[0] >= 'A' && part[0] <= 'Z' {
			return true
		}
		if strings.Contains(part, "k8s") {
			return true
		}
	}
	return false
}

// acceptsValue reports whether the schema accepts the value at path
// (parts separated by dots; {a,b} names several, <name> and * any).
func acceptsValue(schema map[string]any, path string) bool {
	if i := strings.Index(path, "{"); i >= 0 {
		j := strings.Index(path[i:], "}")
		if j < 0 {
			return false
		}
		for _, alt := range strings.Split(path[i+1:i+j], ",") {
			if !acceptsValue(schema, path[:i]+alt+path[i+j+1:]) {
				return false
			}
		}
		return true
	}
	return accepts(schema, strings.Split(path, "."))
}

func accepts(node map[string]any, parts []string) bool {
	if len(parts) == 0 {
		return true
	}
	props, _ := node["properties"].(map[string]any)
	if p := parts[0]; p == "*" || strings.HasPrefix(p, "<") {
		for _, sub := range props {
			if s, ok := sub.(map[string]any); ok && accepts(s, parts[1:]) {
				return true
			}
		}
		return len(props) == 0 && freeForm(node)
	}
	if sub, ok := props[parts[0]].(map[string]any); ok {
		return accepts(sub, parts[1:])
	}
	return freeForm(node)
}

// freeForm: an object whose keys the schema leaves open (resources,
// nodeSelector, global's other keys).
func freeForm(node map[string]any) bool {
	if ap, ok := node["additionalProperties"].(bool); ok {
		return ap
	}
	_, hasProps := node["properties"]
	return !hasProps && (node["type"] == "object" || node["type"] == nil)
}

// referenceNames are the names in the first column of a generated
// reference table: | `name` | ...
func referenceNames(path string) (map[string]bool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			if name, _, ok := strings.Cut(rest, "`"); ok {
				names[name] = true
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s lists no names", path)
	}
	return names, nil
}

// addGoStrings adds every string literal that literal matches (its first
// group) of the non-test Go files under dirs to names; test builders
// (folders named testing) aside.
func addGoStrings(root string, dirs []string, literal *regexp.Regexp, names map[string]bool) error {
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testing" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			raw, err := os.ReadFile(path)
			for _, m := range literal.FindAllStringSubmatch(string(raw), -1) {
				names[m[1]] = true
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkLayout returns a problem for each folder holding Go code that the
// layout table of docs/contributing.md does not cover.
func checkLayout(root string) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join(root, "docs/contributing.md"))
	if err != nil {
		return nil, err
	}
	_, table, ok := strings.Cut(string(raw), "\n## Layout\n")
	if !ok {
		return nil, fmt.Errorf("docs/contributing.md has no section ## Layout")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var rows []string
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, m := range inlineCode.FindAllStringSubmatch(first, -1) {
			rows = append(rows, strings.TrimSuffix(m[1], "/"))
		}
	}
	var dirs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); !slices.Contains(dirs, rel) {
			dirs = append(dirs, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, dir := range dirs {
		covered := slices.ContainsFunc(rows, func(row string) bool { return dir == row || strings.HasPrefix(dir, row+"/") })
		if !covered {
			problems = append(problems, fmt.Sprintf("docs/contributing.md: the layout table has no row for %s (nor for a folder above it)", dir))
		}
	}
	return problems, nil
}

var (
	mdLink    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	headingRe = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	notInSlug = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// checkLinks returns a problem for each relative link of the page at path
// (relative to root) whose file does not exist, or whose #fragment is no
// heading of the Markdown page it names.
func checkLinks(root, path, text string) ([]string, error) {
	var problems []string
	anchors := map[string]map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(codeBlock.ReplaceAllString(text, ""), -1) {
		target := m[1]
		if urlScheme.MatchString(target) {
			continue
		}
		file, fragment, _ := strings.Cut(target, "#")
		name := path
		if file != "" {
			name = filepath.ToSlash(filepath.Join(filepath.Dir(path), file))
		}
		raw, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				problems = append(problems, fmt.Sprintf("%s: link %s: no such file %s", path, target, name))
				continue
			}
			if errors.Is(err, syscall.EISDIR) {
				continue
			}
			return nil, err
		}
		if fragment == "" || !strings.HasSuffix(name, ".md") {
			continue
		}
		if anchors[name] == nil {
			anchors[name] = headingAnchors(string(raw))
		}
		if !anchors[name][fragment] {
			problems = append(problems, fmt.Sprintf("%s: link %s: %s has no heading #%s", path, target, name, fragment))
		}
	}
	return problems, nil
}

// headingAnchors are the fragments GitHub gives a page's headings: lower
// case, punctuation dropped, spaces made dashes, and -1, -2, ... after a
// repeated one.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRe.FindAllStringSubmatch(codeBlock.ReplaceAllString(text, ""), -1) {
		slug := strings.ReplaceAll(notInSlug.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}
