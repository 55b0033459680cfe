package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	helmregistry "helm.sh/helm/v3/pkg/registry"
)

// runChart packages the chart and pushes it as an OCI artifact.
func runChart(args []string) error {
	fs := flag.NewFlagSet("chart", flag.ContinueOnError)
	var (
		dir      = fs.String("chart", "charts/koord-queue", "the chart's directory")
		registry = fs.String("registry", "", "where to push: host[:port][/prefix]; the chart goes to oci://<registry>/<name>:<version>")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *registry == "" {
		return fmt.Errorf("chart needs -registry host/prefix")
	}
	ref, digest, err := pushChart(*dir, *registry)
	if err != nil {
		return err
	}
	fmt.Printf("pushed oci://%s@%s\n", ref, digest)
	return nil
}

// pushChart packages the chart at dir as `helm package` does and pushes it
// to <registry>/<name>:<version> as `helm push` does, with Helm's registry
// credentials and, failing those, Docker's (~/.docker/config.json). It
// speaks plain HTTP to the hosts go-containerregistry does (localhost,
// 127.0.0.1, *.local). It returns the reference and the manifest's digest.
func pushChart(dir, registry string) (ref, digest string, err error) {
	c, err := loader.LoadDir(dir)
	if err != nil {
		return "", "", err
	}
	tmp, err := os.MkdirTemp("", "koord-queue-chart-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	archive, err := chartutil.Save(c, tmp)
	if err != nil {
		return "", "", fmt.Errorf("packaging %s: %w", dir, err)
	}
	data, err := os.ReadFile(archive)
	if err != nil {
		return "", "", err
	}
	registry = strings.TrimSuffix(registry, "/")
	host, _, _ := strings.Cut(registry, "/")
	reg, err := name.NewRegistry(host)
	if err != nil {
		return "", "", fmt.Errorf("registry %q: %w", registry, err)
	}
	opts := []helmregistry.ClientOption{helmregistry.ClientOptWriter(io.Discard)}
	if reg.Scheme() == "http" {
		opts = append(opts, helmregistry.ClientOptPlainHTTP())
	}
	client, err := helmregistry.NewClient(opts...)
	if err != nil {
		return "", "", err
	}
	ref = fmt.Sprintf("%s/%s:%s", registry, c.Name(), c.Metadata.Version)
	res, err := client.Push(data, ref)
	if err != nil {
		return "", "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	return ref, res.Manifest.Digest, nil
}
