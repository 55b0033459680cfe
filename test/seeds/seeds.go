// Package seeds holds the manifests of the user's Koord-Queue documentation,
// embedded so every test can apply them exactly as written.
package seeds

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

//go:embed *.yaml
var files embed.FS

// Files lists the manifest files.
func Files() ([]string, error) {
	return fs.Glob(files, "*.yaml")
}

// Objects decodes every document of a manifest file.
func Objects(name string) ([]*unstructured.Unstructured, error) {
	data, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading seed %s: %w", name, err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decoding seed %s: %w", name, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		// The unstructured JSON decoder keeps integers as int64, as the API server returns them.
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("decoding seed %s: %w", name, err)
		}
		objs = append(objs, obj)
	}
}
