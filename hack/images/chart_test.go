package main

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	helmregistry "helm.sh/helm/v3/pkg/registry"
)

func TestPushChart(t *testing.T) {
	// No credentials of the machine's user: an anonymous push.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("HELM_CONFIG_HOME", t.TempDir())
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	dir := filepath.Join("..", "..", "charts", "koord-queue")
	want, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, digest, err := pushChart(dir, host+"/team/charts/")
	if err != nil {
		t.Fatal(err)
	}
	if wantRef := host + "/team/charts/koord-queue:" + want.Metadata.Version; ref != wantRef {
		t.Errorf("pushed to %s, want %s", ref, wantRef)
	}

	// Pulled back as `helm pull oci://...` does, it is the same chart.
	client, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP())
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := client.Pull(ref)
	if err != nil {
		t.Fatal(err)
	}
	if pulled.Manifest.Digest != digest {
		t.Errorf("pulled manifest %s, pushed %s", pulled.Manifest.Digest, digest)
	}
	got, err := loader.LoadArchive(bytes.NewReader(pulled.Chart.Data))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Metadata, got.Metadata); diff != "" {
		t.Errorf("Chart.yaml (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(files(want.Templates), files(got.Templates)); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(files(want.Files), files(got.Files)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Values, got.Values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if !bytes.Equal(want.Schema, got.Schema) {
		t.Error("values.schema.json differs from the chart's")
	}
}

// files maps each file's name to its content.
func files(fs []*chart.File) map[string]string {
	m := map[string]string{}
	for _, f := range fs {
		m[f.Name] = string(f.Data)
	}
	return m
}
