package version

import (
	"bytes"
	"flag"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// setVersion stands in for the linker's -X for one test.
func setVersion(t *testing.T, version, revision string) {
	t.Helper()
	oldVersion, oldRevision := Version, Revision
	Version, Revision = version, revision
	t.Cleanup(func() { Version, Revision = oldVersion, oldRevision })
}

func TestVersionFlag(t *testing.T) {
	setVersion(t, "v1.9.0-3-gabcdef0-dirty", "abcdef0123")
	for _, tc := range []struct {
		name    string
		args    []string
		wantOut string
		wantHit bool
	}{
		{name: "--version prints the version and stops", args: []string{"--version"}, wantHit: true,
			wantOut: "koord-queue v1.9.0-3-gabcdef0-dirty (revision abcdef0123, " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"},
		{name: "without --version nothing is printed", args: []string{"--qps=5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("koord-queue", flag.ContinueOnError)
			fs.Float64("qps", 50, "")
			requested := Flag(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if got := PrintIfRequested(&out, requested, "koord-queue"); got != tc.wantHit {
				t.Errorf("PrintIfRequested = %v, want %v", got, tc.wantHit)
			}
			if diff := cmp.Diff(tc.wantOut, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildInfo(t *testing.T) {
	setVersion(t, "v1.9.0", "abcdef0123")
	want := `# HELP koord_queue_build_info Always 1; the labels say which build of koord-queue is running.
# TYPE koord_queue_build_info gauge
koord_queue_build_info{goversion="` + runtime.Version() + `",revision="abcdef0123",version="v1.9.0"} 1
`
	if err := testutil.CollectAndCompare(BuildInfo(), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
