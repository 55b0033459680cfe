// Package version is the version of koord-queue a binary was built from.
// Version and Revision are set at link time, by `make build` and
// `make images` (the Makefile's VERSION_LDFLAGS, the one place that sets
// them):
//
//	-X github.com/koord-queue/koord-queue/pkg/version.Version=$(git describe --tags --always --dirty)
//	-X github.com/koord-queue/koord-queue/pkg/version.Revision=$(git rev-parse HEAD)
//
// A plain `go build` leaves them "unknown".
package version

import (
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	// Version is `git describe --tags --always --dirty` of the build.
	Version = "unknown"
	// Revision is the commit the build was made from.
	Revision = "unknown"
)

// String is what --version prints: the binary's name, the version, the
// commit, and the Go toolchain and platform it was built with.
func String(binary string) string {
	return fmt.Sprintf("%s %s (revision %s, %s, %s/%s)", binary, Version, Revision, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Flag defines --version on fs. After parsing, PrintIfRequested prints the
// version when it was given, and tells the caller to stop.
func Flag(fs *flag.FlagSet) *bool {
	return fs.Bool("version", false, "print the version and exit")
}

// PrintIfRequested writes String(binary) to w if requested is set, and says
// whether it did.
func PrintIfRequested(w io.Writer, requested *bool, binary string) bool {
	if !*requested {
		return false
	}
	fmt.Fprintln(w, String(binary))
	return true
}

// BuildInfo is the gauge koord_queue_build_info{version,revision,goversion},
// always 1, so that dashboards can tell which build is running. Both
// binaries register it with controller-runtime's registry.
func BuildInfo() prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "koord_queue_build_info", Help: "Always 1; the labels say which build of koord-queue is running.",
	}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(Version, Revision, runtime.Version()).Set(1)
	return g
}
