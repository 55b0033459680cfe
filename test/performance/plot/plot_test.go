package plot

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/koord-queue/koord-queue/test/performance/checker"
)

func TestUnitsWritesAPNG(t *testing.T) {
	res := &checker.Result{Scenario: "test", Units: 3, QPS: 50, WallSeconds: 2, Samples: []checker.Sample{
		{AtSeconds: 0, Pending: 3},
		{AtSeconds: 1, Pending: 1, Admitted: 2, Holding: 2},
		{AtSeconds: 2, Admitted: 3, Finished: 3},
	}}
	path := filepath.Join(t.TempDir(), "units.png")
	if err := Units(res, path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s is not a PNG (%d bytes)", path, len(data))
	}
}
