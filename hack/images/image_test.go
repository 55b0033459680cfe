package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/koord-queue/koord-queue/hack/images/ocilayout"
)

var testMeta = metadata{
	Version:  "v1.9.0-2-gabcdef0",
	Revision: "abcdef0123456789",
	Source:   "https://github.com/koord-queue/koord-queue",
	Created:  time.Unix(1700000000, 0).UTC(),
}

// fakeBinaries writes, for every image and platform, a stand-in binary
// whose content names both, and returns their directory.
func fakeBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, img := range images {
		for _, p := range platforms {
			path := binaryPath(dir, img, p)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			// Written 0600 with a fresh mtime: the images must not depend on either.
			if err := os.WriteFile(path, fakeBinary(img, p), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func fakeBinary(img image, p v1.Platform) []byte {
	return []byte("\x7fELF " + img.Name + " " + p.String())
}

// digests is every digest of a layout: each index and each platform's image.
func digests(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := ocilayout.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		out[e.Name] = e.Digest.String()
		for _, m := range e.Images {
			out[e.Name+" "+m.Platform] = m.Digest.String()
		}
	}
	return out
}

func TestBuildIsReproducible(t *testing.T) {
	// The same binaries, copied apart and written at another time.
	bins := fakeBinaries(t)
	first, second := filepath.Join(t.TempDir(), "images"), filepath.Join(t.TempDir(), "images")
	if err := writeLayout(first, bins, testMeta); err != nil {
		t.Fatal(err)
	}
	if err := writeLayout(second, fakeBinaries(t), testMeta); err != nil {
		t.Fatal(err)
	}
	want, got := digests(t, first), digests(t, second)
	if len(want) != len(images)*(1+len(platforms)) {
		t.Fatalf("the layout lists %d digests, want an index and %d images for each of %d images: %v", len(want), len(platforms), len(images), want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("digests of the second build (-want +got):\n%s", diff)
	}
	for _, file := range []string{"index.json", "oci-layout"} {
		a, errA := os.ReadFile(filepath.Join(first, file))
		b, errB := os.ReadFile(filepath.Join(second, file))
		if err := errors.Join(errA, errB); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(a), string(b)); diff != "" {
			t.Errorf("%s differs (-want +got):\n%s", file, diff)
		}
	}
}

func TestRebuildReplacesTheLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "images")
	bins := fakeBinaries(t)
	older := testMeta
	older.Created = testMeta.Created.Add(-time.Hour)
	if err := writeLayout(dir, bins, older); err != nil {
		t.Fatal(err)
	}
	if err := writeLayout(dir, bins, testMeta); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "images")
	if err := writeLayout(fresh, bins, testMeta); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(blobs(t, fresh), blobs(t, dir)); diff != "" {
		t.Errorf("blobs after a rebuild, compared with a fresh build (-want +got):\n%s", diff)
	}
}

func blobs(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "blobs", "sha256", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	return names
}

// A file is what the tests check of a layer's entry.
type file struct {
	Name     string
	Typeflag byte
	Mode     int64
	UID, GID int
	ModTime  time.Time
	Content  string
}

func TestImageConfigAndFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "images")
	if err := writeLayout(dir, fakeBinaries(t), testMeta); err != nil {
		t.Fatal(err)
	}
	entries, err := ocilayout.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if diff := cmp.Diff([]string{"koord-queue", "koord-queue-controllers"}, names); diff != "" {
		t.Fatalf("images of the layout (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/koord-queue/koord-queue",
		"org.opencontainers.image.version":  "v1.9.0-2-gabcdef0",
		"org.opencontainers.image.revision": "abcdef0123456789",
	}
	for i, e := range entries {
		img := images[i]
		t.Run(e.Name, func(t *testing.T) {
			im, err := e.Index.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantLabels, im.Annotations); diff != "" {
				t.Errorf("index annotations (-want +got):\n%s", diff)
			}
			var gotPlatforms []v1.Platform
			for _, m := range im.Manifests {
				gotPlatforms = append(gotPlatforms, *m.Platform)
			}
			if diff := cmp.Diff(platforms, gotPlatforms); diff != "" {
				t.Fatalf("platforms (-want +got):\n%s", diff)
			}
			for _, m := range im.Manifests {
				p := *m.Platform
				pi, err := e.Index.Image(m.Digest)
				if err != nil {
					t.Fatal(err)
				}
				cf, err := pi.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				wantConfig := v1.Config{User: "65532:65532", Entrypoint: []string{"/" + img.Name}, WorkingDir: "/", Labels: wantLabels}
				if diff := cmp.Diff(wantConfig, cf.Config); diff != "" {
					t.Errorf("%s: config (-want +got):\n%s", p, diff)
				}
				if cf.OS != p.OS || cf.Architecture != p.Architecture {
					t.Errorf("%s: config says %s/%s", p, cf.OS, cf.Architecture)
				}
				if !cf.Created.Time.Equal(testMeta.Created) {
					t.Errorf("%s: created %s, want %s", p, cf.Created.Time, testMeta.Created)
				}
				mt, err := pi.MediaType()
				if err != nil {
					t.Fatal(err)
				}
				if mt != "application/vnd.oci.image.manifest.v1+json" {
					t.Errorf("%s: media type %s, want an OCI manifest", p, mt)
				}
				layers, err := pi.Layers()
				if err != nil {
					t.Fatal(err)
				}
				if len(layers) != 1 {
					t.Fatalf("%s: %d layers, want 1", p, len(layers))
				}
				wantFiles := []file{
					{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755},
					{Name: "etc/group", Typeflag: tar.TypeReg, Mode: 0o644, Content: "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"},
					{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644, Content: "root:x:0:0:root:/root:/sbin/nologin\n" +
						"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
						"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
					{Name: "home/", Typeflag: tar.TypeDir, Mode: 0o755},
					{Name: "home/nonroot/", Typeflag: tar.TypeDir, Mode: 0o700, UID: 65532, GID: 65532},
					{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
					{Name: img.Name, Typeflag: tar.TypeReg, Mode: 0o755, Content: string(fakeBinary(img, p))},
				}
				for i := range wantFiles {
					wantFiles[i].ModTime = testMeta.Created
				}
				if diff := cmp.Diff(wantFiles, layerFiles(t, layers[0])); diff != "" {
					t.Errorf("%s: files (-want +got):\n%s", p, diff)
				}
			}
		})
	}
}

func layerFiles(t *testing.T, l v1.Layer) []file {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out []file
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var content bytes.Buffer
		if _, err := io.Copy(&content, tr); err != nil {
			t.Fatal(err)
		}
		out = append(out, file{Name: hdr.Name, Typeflag: hdr.Typeflag, Mode: hdr.Mode, UID: hdr.Uid, GID: hdr.Gid, ModTime: hdr.ModTime.UTC(), Content: content.String()})
	}
}
