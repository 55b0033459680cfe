package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const crd = `spec:
  versions:
  - schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              resource:
                additionalProperties:
                  anyOf:
                  - type: integer
                  - type: string
                  pattern: ` + quantityPattern + `
                  x-kubernetes-int-or-string: true
                type: object
            type: object
          status:
            properties:
              used:
                additionalProperties:
                  anyOf:
                  - type: integer
                  - type: string
                  pattern: ` + quantityPattern + `
                  x-kubernetes-int-or-string: true
                type: object
            type: object
        type: object
`

const want = `spec:
  versions:
  - schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              resource:
                additionalProperties:
                  anyOf:
                  - type: integer
                  - type: string
                  minimum: 0
                  pattern: ` + nonNegativePattern + `
                  x-kubernetes-int-or-string: true
                type: object
            type: object
          status:
            properties:
              used:
                additionalProperties:
                  anyOf:
                  - type: integer
                  - type: string
                  pattern: ` + quantityPattern + `
                  x-kubernetes-int-or-string: true
                type: object
            type: object
        type: object
`

// TestRewrite: quantities under spec refuse negative amounts, those under
// status are left alone, and a second run changes nothing.
func TestRewrite(t *testing.T) {
	got, n, err := rewrite(crd)
	if err != nil || n != 1 {
		t.Fatalf("rewrite: %d changed, err %v; want 1 and no error", n, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rewrite (-want +got):\n%s", diff)
	}
	again, n, err := rewrite(got)
	if err != nil || n != 1 || again != got {
		t.Errorf("a second rewrite: %d found, err %v, changed %v; want 1 found, nothing changed", n, err, again != got)
	}
}
