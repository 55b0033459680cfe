// Command nonnegative makes every resource quantity under the spec of the
// CRDs it is given refuse a negative amount, as the API server refuses one
// in a pod. make generate runs it on the QueueUnit CRD after controller-gen.
//
// A QueueUnit written by hand may carry a quantity in spec.resource,
// spec.request and anywhere in its pod sets' templates (containers, init
// containers, overhead, pod-level resources). A CEL rule cannot reach the
// templates: corev1's lists and maps declare no maxItems or maxProperties,
// so the API server's cost estimate of any rule walking them exceeds its
// budget more than a hundredfold and the CRD is refused. The schema can:
// controller-gen writes every Quantity as the same int-or-string with
// Kubernetes' quantity pattern, and this command gives each under spec a
// pattern without the leading minus and `minimum: 0` (for a quantity
// written as a JSON number). A negative amount is then refused, naming its
// field, at no cost.
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

// rewrite makes every quantity under the spec property of each
// openAPIV3Schema in crd non-negative; n counts those it changed or found
// changed already.
func rewrite(crd string) (out string, n int, err error) {
	lines := strings.Split(crd, "\n")
	var res []string
	inSchema, schemaIndent, specIndent := false, -1, -1
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		ind := indent(line)
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
		case trimmed == "openAPIV3Schema:":
			inSchema, schemaIndent, specIndent = true, ind, -1
		case inSchema && ind <= schemaIndent:
			inSchema, specIndent = false, -1
		case inSchema && specIndent < 0 && ind == schemaIndent+4 && trimmed == "spec:":
			specIndent = ind
		case specIndent >= 0 && ind <= specIndent:
			specIndent = -1
		}
		if specIndent >= 0 && ind > specIndent && i+1 < len(lines) &&
			strings.TrimSpace(lines[i+1]) == "x-kubernetes-int-or-string: true" && indent(lines[i+1]) == ind {
			pad := line[:ind]
			switch trimmed {
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

func indent(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }
