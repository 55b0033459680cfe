// Command images builds koord-queue's two container images without Docker,
// and pushes them.
//
//	images build -out _output/images -version V -revision R -source-date-epoch S -ldflags L
//	images push -layout _output/images -registry host/prefix [-tag T]
//	images chart -chart charts/koord-queue -registry host/prefix
//
// build compiles each binary as a static executable (CGO_ENABLED=0,
// -trimpath) for linux/amd64 and linux/arm64, and writes one OCI image
// layout holding an image index per image, named in index.json by the
// org.opencontainers.image.ref.name annotation (koord-queue,
// koord-queue-controllers). Each image is built from scratch: the binary at
// /<name>, /etc/passwd and /etc/group naming the nonroot user 65532, run as
// 65532:65532. Every time in the images is the commit's (-source-date-epoch),
// so the same commit gives the same digests.
//
// push writes each image index of the layout to
// <registry>/<ref.name>:<version> (or :<tag>), with the credentials of
// ~/.docker/config.json and the usual credential helpers.
//
// chart packages the Helm chart as `helm package` does and pushes it as an
// OCI artifact to <registry>/<name>:<version> as `helm push` does, with
// Helm's registry credentials or, failing those, Docker's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/koord-queue/koord-queue/hack/images/ocilayout"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: images build|push|chart [flags]")
	}
	switch cmd, args := args[0], args[1:]; cmd {
	case "build":
		return runBuild(ctx, args)
	case "push":
		return runPush(ctx, args)
	case "chart":
		return runChart(args)
	default:
		return fmt.Errorf("unknown command %q: want build, push or chart", cmd)
	}
}

func runBuild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	var (
		out     = fs.String("out", "_output/images", "directory of the OCI image layout (replaced)")
		binDir  = fs.String("bin", "_output/images-bin", "directory of the compiled binaries, <os>_<arch>/<name>")
		version = fs.String("version", "", "the images' version (git describe --tags --always --dirty); also their tag")
		rev     = fs.String("revision", "", "the commit (git rev-parse HEAD)")
		epoch   = fs.Int64("source-date-epoch", 0, "the commit's time in seconds since 1970 (git log -1 --format=%ct): every time in the images")
		source  = fs.String("source", "https://github.com/koord-queue/koord-queue", "the source repository, label org.opencontainers.image.source")
		ldflags = fs.String("ldflags", "", "extra -ldflags of go build (the Makefile's VERSION_LDFLAGS)")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *rev == "" {
		return errors.New("build needs -version and -revision")
	}
	start := time.Now()
	for _, p := range platforms {
		for _, img := range images {
			if err := compile(ctx, img, p, *ldflags, binaryPath(*binDir, img, p)); err != nil {
				return err
			}
		}
	}
	compiled := time.Since(start)
	meta := metadata{Version: *version, Revision: *rev, Source: *source, Created: time.Unix(*epoch, 0).UTC()}
	if err := writeLayout(*out, *binDir, meta); err != nil {
		return err
	}
	fmt.Printf("compiled in %s, images written in %s\n", compiled.Round(time.Millisecond), (time.Since(start) - compiled).Round(time.Millisecond))
	return printLayout(*out)
}

// compile builds img for p as a static binary at out.
func compile(ctx context.Context, img image, p v1.Platform, ldflags, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w "+ldflags, "-o", out, img.Package)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for %s: %w", img.Name, p, err)
	}
	return nil
}

func runPush(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	var (
		dir      = fs.String("layout", "_output/images", "the OCI image layout of images build")
		registry = fs.String("registry", "", "where to push: host[:port][/prefix]; each image goes to <registry>/<name>:<version>")
		tag      = fs.String("tag", "", "the tag to push the images under; empty: their version")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *registry == "" {
		return errors.New("push needs -registry host/prefix")
	}
	pushed, err := ocilayout.Push(ctx, *dir, *registry, *tag)
	for _, p := range pushed {
		fmt.Printf("pushed %s@%s\n", p.Ref, p.Digest)
	}
	return err
}

// printLayout lists the layout's images with their digests and sizes.
func printLayout(dir string) error {
	entries, err := ocilayout.Read(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		fmt.Printf("%s %s %s\n", dir, e.Name, e.Digest)
		for _, m := range e.Images {
			fmt.Printf("  %-12s %s  %s compressed\n", m.Platform, m.Digest, strconv.FormatFloat(float64(m.Size)/(1<<20), 'f', 1, 64)+" MiB")
		}
	}
	return nil
}
