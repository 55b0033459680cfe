package main

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

// A layoutEntry is one image index of the layout, by its ref.name.
type layoutEntry struct {
	Name    string
	Version string // its org.opencontainers.image.version annotation
	Digest  v1.Hash
	Index   v1.ImageIndex
	Images  []platformImageInfo
}

type platformImageInfo struct {
	Platform string
	Digest   v1.Hash
	Size     int64 // the image's manifest, config and layers, compressed
}

// readLayout lists the image indexes of the layout at dir, in index.json's order.
func readLayout(dir string) ([]layoutEntry, error) {
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
	var out []layoutEntry
	for _, d := range manifest.Manifests {
		idx, err := top.ImageIndex(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("reading the index %s: %w", d.Digest, err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("reading the index %s: %w", d.Digest, err)
		}
		e := layoutEntry{Name: d.Annotations[annotationRefName], Version: im.Annotations[annotationVersion], Digest: d.Digest, Index: idx}
		if e.Name == "" {
			return nil, fmt.Errorf("%s: index %s has no %s annotation", dir, d.Digest, annotationRefName)
		}
		for _, m := range im.Manifests {
			size, err := imageSize(idx, m)
			if err != nil {
				return nil, err
			}
			e.Images = append(e.Images, platformImageInfo{Platform: m.Platform.String(), Digest: m.Digest, Size: size})
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

// A pushedImage is an image index as the registry now has it.
type pushedImage struct {
	Ref    name.Tag
	Digest v1.Hash
}

// push writes every image index of the layout at dir to
// <registry>/<name>:<version>, authenticating with the default keychain
// (~/.docker/config.json, credential helpers), and returns what it pushed.
func push(ctx context.Context, dir, registry string) ([]pushedImage, error) {
	entries, err := readLayout(dir)
	if err != nil {
		return nil, err
	}
	var pushed []pushedImage
	for _, e := range entries {
		if e.Version == "" {
			return pushed, fmt.Errorf("%s: %s has no %s annotation to tag it with", dir, e.Name, annotationVersion)
		}
		ref, err := name.NewTag(strings.TrimSuffix(registry, "/") + "/" + e.Name + ":" + e.Version)
		if err != nil {
			return pushed, fmt.Errorf("naming %s in %s: %w", e.Name, registry, err)
		}
		if err := remote.WriteIndex(ref, e.Index, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return pushed, fmt.Errorf("pushing %s: %w", ref, err)
		}
		pushed = append(pushed, pushedImage{Ref: ref, Digest: e.Digest})
	}
	if len(pushed) == 0 {
		return nil, errors.New(dir + " holds no images")
	}
	return pushed, nil
}
