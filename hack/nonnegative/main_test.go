package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// quantity is controller-gen's schema of a Quantity at indent pad, with
// pattern p and, when minimum, minimum 0.
func quantity(pad, p string, minimum bool) string {
	s := pad + "anyOf:\n" + pad + "- type: integer\n" + pad + "- type: string\n"
	if minimum {
		s += pad + "minimum: 0\n"
	}
	return s + pad + "pattern: " + p + "\n" + pad + "x-kubernetes-int-or-string: true\n"
}

// crd is a QueueUnit CRD cut down to a few quantities; fixed says which
// are made non-negative.
func crd(fixed func(field string) bool) string {
	q := func(field, pad string) string {
		if fixed(field) {
			return quantity(pad, nonNegativePattern, true)
		}
		return quantity(pad, quantityPattern, false)
	}
	return `spec:
  versions:
  - name: v1alpha1
    schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              podSet:
                items:
                  properties:
                    template:
                      properties:
                        spec:
                          properties:
                            containers:
                              items:
                                properties:
                                  resources:
                                    properties:
                                      requests:
                                        additionalProperties:
` + q("requests", strings.Repeat(" ", 42)) + `                                        type: object
                                    type: object
                                type: object
                              type: array
                            volumes:
                              items:
                                properties:
                                  emptyDir:
                                    properties:
                                      sizeLimit:
` + q("sizeLimit", strings.Repeat(" ", 40)) + `                                    type: object
                                type: object
                              type: array
                          type: object
                      type: object
                  type: object
                type: array
              resource:
                additionalProperties:
` + q("resource", strings.Repeat(" ", 18)) + `                type: object
            type: object
          status:
            properties:
              used:
                additionalProperties:
` + q("used", strings.Repeat(" ", 18)) + `                type: object
            type: object
        type: object
`
}

// TestRewrite: the amounts a unit asks for refuse negatives (spec.resource,
// a pod set's container requests); other quantities of the template (a
// volume's sizeLimit) and the status's are left alone; a second run changes
// nothing.
func TestRewrite(t *testing.T) {
	in := crd(func(string) bool { return false })
	want := crd(func(f string) bool { return f == "requests" || f == "resource" })
	got, n, err := rewrite(in)
	if err != nil || n != 2 {
		t.Errorf("rewrite: %d changed, err %v; want 2 and no error", n, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rewrite (-want +got):\n%s", diff)
	}
	again, n, err := rewrite(got)
	if err != nil || n != 2 || again != got {
		t.Errorf("a second rewrite: %d found, err %v, changed %v; want 2 found, nothing changed", n, err, again != got)
	}
}
