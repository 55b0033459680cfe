package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/koord-queue/koord-queue/hack/images/ocilayout"
)

// An image is one binary, run as its entrypoint.
type image struct {
	Name    string // the image's name, the binary's name and path (/Name)
	Package string // what `go build` builds
}

// images are the two images, in the order they are built and listed.
var images = []image{
	{Name: "koord-queue", Package: "./cmd/queue"},
	{Name: "koord-queue-controllers", Package: "./cmd/extensions"},
}

// platforms are the platforms each image is built for.
var platforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64"},
}

// The user the binaries run as: distroless's nonroot, so that clusters
// whose policies allow that user keep working.
const (
	nonrootUID = 65532
	passwd     = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"nonroot:x:65532:\n"
)

// Annotations and labels of the OCI image spec.
const (
	annotationSource   = "org.opencontainers.image.source"
	annotationRevision = "org.opencontainers.image.revision"
)

// metadata is what the images say about the build.
type metadata struct {
	Version  string
	Revision string
	Source   string
	// Created is the images' creation time and every file's mtime: the
	// commit's time, so that a build depends on the commit only.
	Created time.Time
}

func (m metadata) labels() map[string]string {
	return map[string]string{annotationSource: m.Source, ocilayout.AnnotationVersion: m.Version, annotationRevision: m.Revision}
}

// binaryPath is where the binary of img for p is under binDir.
func binaryPath(binDir string, img image, p v1.Platform) string {
	return filepath.Join(binDir, p.OS+"_"+p.Architecture, img.Name)
}

// writeLayout writes, as a fresh OCI image layout at dir, one image index
// per image (one image per platform, from the binaries under binDir), each
// named in the layout's index.json by its ref.name annotation.
func writeLayout(dir, binDir string, meta metadata) error {
	var top v1.ImageIndex = empty.Index
	for _, img := range images {
		idx, err := imageIndex(img, binDir, meta)
		if err != nil {
			return err
		}
		top = mutate.AppendManifests(top, mutate.IndexAddendum{
			Add:        idx,
			Descriptor: v1.Descriptor{Annotations: map[string]string{ocilayout.AnnotationRefName: img.Name}},
		})
	}
	// A fresh directory: layout.Write adds blobs and never removes any.
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the old layout: %w", err)
	}
	if _, err := layout.Write(dir, top); err != nil {
		return fmt.Errorf("writing the layout %s: %w", dir, err)
	}
	return nil
}

// imageIndex is img for every platform.
func imageIndex(img image, binDir string, meta metadata) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		binary, err := os.ReadFile(binaryPath(binDir, img, p))
		if err != nil {
			return nil, fmt.Errorf("reading the binary: %w", err)
		}
		one, err := platformImage(img, p, binary, meta)
		if err != nil {
			return nil, fmt.Errorf("image %s for %s: %w", img.Name, p, err)
		}
		platform := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: one, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	return mutate.Annotations(idx, meta.labels()).(v1.ImageIndex), nil
}

// platformImage is a single-layer image from scratch: the binary, and the
// /etc/passwd and /etc/group that name its user.
func platformImage(img image, p v1.Platform, binary []byte, meta metadata) (v1.Image, error) {
	layerBytes, err := rootfs(img.Name, binary, meta.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	withLayer, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: meta.Created}, CreatedBy: "hack/images: /" + img.Name + ", /etc/passwd, /etc/group"},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cf, err := withLayer.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: meta.Created}
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", nonrootUID, nonrootUID),
		Entrypoint: []string{"/" + img.Name},
		WorkingDir: "/",
		Labels:     meta.labels(),
	}
	return mutate.ConfigFile(withLayer, cf)
}

// rootfs is the layer's gzipped tar: entries in a fixed order, with fixed
// times and owners, and gzip with no name or time in its header, so the
// same binary gives the same bytes.
func rootfs(name string, binary []byte, mtime time.Time) ([]byte, error) {
	type entry struct {
		name     string
		mode     int64
		uid      int
		data     []byte
		typeflag byte
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, typeflag: tar.TypeDir},
		{name: "etc/group", mode: 0o644, data: []byte(group), typeflag: tar.TypeReg},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd), typeflag: tar.TypeReg},
		{name: "home/", mode: 0o755, typeflag: tar.TypeDir},
		{name: "home/nonroot/", mode: 0o700, uid: nonrootUID, typeflag: tar.TypeDir},
		// Some libraries write temporary files; the chart mounts what the
		// binaries write to on a read-only root.
		{name: "tmp/", mode: 0o1777, typeflag: tar.TypeDir},
		{name: name, mode: 0o755, data: binary, typeflag: tar.TypeReg},
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{
			Typeflag: e.typeflag, Name: e.name, Mode: e.mode, Size: int64(len(e.data)),
			Uid: e.uid, Gid: e.uid, ModTime: mtime, Format: tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("writing %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
