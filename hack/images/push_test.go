package main

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/koord-queue/koord-queue/hack/images/ocilayout"
)

func TestPushToRegistry(t *testing.T) {
	// No credentials of the machine's user: an anonymous push.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	dir := filepath.Join(t.TempDir(), "images")
	if err := writeLayout(dir, fakeBinaries(t), testMeta); err != nil {
		t.Fatal(err)
	}
	pushed, err := ocilayout.Push(context.Background(), dir, host+"/team/", "")
	if err != nil {
		t.Fatal(err)
	}
	var gotRefs []string
	for _, p := range pushed {
		gotRefs = append(gotRefs, p.Ref.String())
	}
	wantRefs := []string{host + "/team/koord-queue:v1.9.0-2-gabcdef0", host + "/team/koord-queue-controllers:v1.9.0-2-gabcdef0"}
	if diff := cmp.Diff(wantRefs, gotRefs); diff != "" {
		t.Fatalf("pushed (-want +got):\n%s", diff)
	}

	// Pulled back, every index and image has the layout's digest.
	want := digests(t, dir)
	got := map[string]string{}
	for _, p := range pushed {
		repo := strings.TrimPrefix(p.Ref.Context().RepositoryStr(), "team/")
		idx, err := remote.Index(p.Ref)
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		got[repo] = d.String()
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range im.Manifests {
			// Fetched by digest, not only listed.
			img, err := remote.Image(p.Ref.Context().Digest(m.Digest.String()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := img.ConfigFile(); err != nil {
				t.Fatal(err)
			}
			got[repo+" "+m.Platform.String()] = m.Digest.String()
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("digests pulled from the registry (-want +got):\n%s", diff)
	}
}

func TestPushNeedsAVersion(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "images")
	noVersion := testMeta
	noVersion.Version = ""
	if err := writeLayout(dir, fakeBinaries(t), noVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := ocilayout.Push(context.Background(), dir, "127.0.0.1:1/team", ""); err == nil || !strings.Contains(err.Error(), "no org.opencontainers.image.version") {
		t.Errorf("push of a layout without a version: %v, want an error naming the missing annotation", err)
	}
}
