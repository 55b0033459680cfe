// Package ocilayout reads the OCI image layout `make images` writes and
// pushes its images to a registry: what `make push` does, and what the
// chart test pushes to its in-process registry.
package ocilayout

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Annotations of the OCI image spec the layout is read by.
const (
	// AnnotationRefName names an image index in the layout's index.json.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationVersion is the version an image index was built from, and
	// the tag it is pushed with.
	AnnotationVersion = "org.opencontainers.image.version"
)

// An Entry is one image index of the layout, by its ref.name.
type Entry struct {
	Name    string
	Version string // its org.opencontainers.image.version annotation
	Digest  v1.Hash
	Index   v1.ImageIndex
	Images  []PlatformImage
}

// A PlatformImage is one platform's image of an index.
type PlatformImage struct {
	Platform string
	Digest   v1.Hash
	Size     int64 // the image's manifest, config and layers, compressed
}

// Read lists the image indexes of the layout at dir, in index.json's order.
func Read(dir string) ([]Entry, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the layout %s (make images writes it): %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	manifest, err := top.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading %s's index.json: %w", dir, err)
	}
	var out []Entry
	for _, d := range manifest.Manifests {
		idx, err := top.ImageIndex(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("reading the index %s: %w", d.Digest, err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("reading the index %s: %w", d.Digest, err)
		}
		e := Entry{Name: d.Annotations[AnnotationRefName], Version: im.Annotations[AnnotationVersion], Digest: d.Digest, Index: idx}
		if e.Name == "" {
			return nil, fmt.Errorf("%s: index %s has no %s annotation", dir, d.Digest, AnnotationRefName)
		}
		for _, m := range im.Manifests {
			size, err := imageSize(idx, m)
			if err != nil {
				return nil, err
			}
			e.Images = append(e.Images, PlatformImage{Platform: m.Platform.String(), Digest: m.Digest, Size: size})
		}
		out = append(out, e)
	}
	return out, nil
}

func imageSize(idx v1.ImageIndex, d v1.Descriptor) (int64, error) {
	img, err := idx.Image(d.Digest)
	if err != nil {
		return 0, fmt.Errorf("reading the image %s: %w", d.Digest, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return 0, fmt.Errorf("reading the image %s: %w", d.Digest, err)
	}
	size := d.Size + m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size, nil
}

// A Pushed is an image index as the registry now has it.
type Pushed struct {
	Ref    name.Tag
	Digest v1.Hash
}

// Push writes every image index of the layout at dir to
// <registry>/<name>:<tag>, authenticating with the default keychain
// (~/.docker/config.json, credential helpers), and returns what it pushed.
// An empty tag is each index's version.
func Push(ctx context.Context, dir, registry, tag string) ([]Pushed, error) {
	entries, err := Read(dir)
	if err != nil {
		return nil, err
	}
	var pushed []Pushed
	for _, e := range entries {
		t := tag
		if t == "" {
			t = e.Version
		}
		if t == "" {
			return pushed, fmt.Errorf("%s: %s has no %s annotation to tag it with", dir, e.Name, AnnotationVersion)
		}
		ref, err := name.NewTag(strings.TrimSuffix(registry, "/") + "/" + e.Name + ":" + t)
		if err != nil {
			return pushed, fmt.Errorf("naming %s in %s: %w", e.Name, registry, err)
		}
		if err := remote.WriteIndex(ref, e.Index, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return pushed, fmt.Errorf("pushing %s: %w", ref, err)
		}
		pushed = append(pushed, Pushed{Ref: ref, Digest: e.Digest})
	}
	if len(pushed) == 0 {
		return nil, errors.New(dir + " holds no images")
	}
	return pushed, nil
}
