// Command nonnegative makes the QueueUnit CRD refuse a negative amount
// wherever a unit asks for something: spec.resource, spec.request, and the
// requests, limits and overhead of its pod sets' templates (containers, init
// containers, pod-level resources), as the API server refuses one in a pod.
// make generate runs it after controller-gen.
//
// A CEL rule cannot reach the templates: corev1's lists and maps declare no
// maxItems or maxProperties, so the API server's cost estimate of any rule
// walking them exceeds its budget more than a hundredfold and the CRD is
// refused. The schema can: controller-gen writes every Quantity as the same
// int-or-string with Kubernetes' quantity pattern, and this command gives
// those of the fields above a pattern without the leading minus and
// `minimum: 0` (for a quantity written as a JSON number). A negative amount
// is then refused, naming its field, at no cost. Other quantities of a
// template (a volume's sizeLimit, a divisor) are left as Kubernetes has
// them: the extensions would have to refuse them too, or fail to create a
// job's unit.
//
// Usage: go run ./hack/nonnegative FILE...
package main

import (
	"fmt"
	"os"
	"strings"
)

// quantityPattern is the pattern controller-gen writes for a
// resource.Quantity; nonNegativePattern is the same without a sign but an
// optional plus (the exponent keeps its sign: 1e-3 is positive).
const (
	quantityPattern    = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
	nonNegativePattern = `^\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: nonnegative FILE...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := rewriteFile(path); err != nil {
			fmt.Fprintf(os.Stderr, "nonnegative: %v\n", err)
			os.Exit(1)
		}
	}
}

func rewriteFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, n, err := rewrite(string(data))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: no quantity under the spec's schema (has controller-gen's Quantity pattern changed?)", path)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// amounts are the fields, under an openAPIV3Schema, whose quantities
// rewrite makes non-negative: their keys, leaving out "properties" and
// "items".
var amounts = map[string]bool{}

func init() {
	for _, p := range []string{"spec.resource", "spec.request", "spec.podSet.template.spec.overhead"} {
		amounts[p] = true
	}
	for _, r := range []string{"spec.podSet.template.spec.containers.resources", "spec.podSet.template.spec.initContainers.resources", "spec.podSet.template.spec.resources"} {
		amounts[r+".requests"], amounts[r+".limits"] = true, true
	}
}

// key is a YAML mapping key opening a block, at its indent.
type key struct {
	indent int
	name   string
}

// rewrite makes the quantities of amounts non-negative in crd; n counts
// those it changed or found changed already.
func rewrite(crd string) (out string, n int, err error) {
	lines := strings.Split(crd, "\n")
	res := make([]string, 0, len(lines)+32)
	var stack []key
	for i, line := range lines {
		content := strings.TrimSpace(line)
		if content == "" {
			res = append(res, line)
			continue
		}
		ind := indent(line)
		if strings.HasPrefix(content, "- ") {
			ind, content = ind+2, content[2:]
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= ind {
			stack = stack[:len(stack)-1]
		}
		if name, ok := strings.CutSuffix(content, ":"); ok {
			stack = append(stack, key{ind, name})
		}
		if strings.HasPrefix(content, "pattern: ") && i+1 < len(lines) && indent(lines[i+1]) == indent(line) &&
			strings.TrimSpace(lines[i+1]) == "x-kubernetes-int-or-string: true" && amounts[fieldOf(stack)] {
			pad := line[:indent(line)]
			switch content {
			case "pattern: " + quantityPattern:
				res = append(res, pad+"minimum: 0", pad+"pattern: "+nonNegativePattern)
				n++
				continue
			case "pattern: " + nonNegativePattern:
				n++
			}
		}
		res = append(res, line)
	}
	return strings.Join(res, "\n"), n, nil
}

// fieldOf is the field a quantity's keys name inside an openAPIV3Schema, such
// as spec.podSet.template.spec.overhead; "" outside one.
func fieldOf(stack []key) string {
	var parts []string
	in := false
	for _, k := range stack {
		switch {
		case k.name == "openAPIV3Schema":
			in, parts = true, nil
		case !in || k.name == "properties" || k.name == "items":
		default:
			parts = append(parts, k.name)
		}
	}
	if !in || len(parts) == 0 || parts[len(parts)-1] != "additionalProperties" {
		return ""
	}
	return strings.Join(parts[:len(parts)-1], ".")
}

func indent(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }
