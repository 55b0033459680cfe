package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWritesBy(t *testing.T) {
	log := `{"stage":"ResponseComplete","verb":"create","userAgent":"koord-queue-controllers/v0.1.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"queueunits"},"responseStatus":{"code":201}}
{"stage":"ResponseComplete","verb":"patch","userAgent":"koord-queue-controllers/v0.1.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"queueunits","subresource":"status"},"responseStatus":{"code":200}}
{"stage":"ResponseComplete","verb":"patch","userAgent":"koord-queue-controllers","objectRef":{"resource":"queueunits","subresource":"status"},"responseStatus":{"code":409}}
{"stage":"ResponseComplete","verb":"patch","userAgent":"koord-queue-controllers/v0.1.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"queueunits","subresource":"status"},"responseStatus":{"code":200}}
{"stage":"ResponseComplete","verb":"patch","userAgent":"koord-queue/v0.1.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"queueunits","subresource":"status"},"responseStatus":{"code":200}}
{"stage":"Panic","verb":"create","userAgent":"koord-queue-controllers/v0.1.0","objectRef":{"resource":"events"},"responseStatus":{"code":500}}
{"stage":"ResponseComplete","verb":"create","userAgent":"koord-queue-controllers-test/v0.1.0","objectRef":{"resource":"events"},"responseStatus":{"code":201}}
`
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := WritesBy(path, "koord-queue-controllers")
	if err != nil {
		t.Fatal(err)
	}
	want := map[Write]int{
		{Verb: "create", Resource: "queueunits", Code: 201}:       1,
		{Verb: "patch", Resource: "queueunits/status", Code: 200}: 2,
		{Verb: "patch", Resource: "queueunits/status", Code: 409}: 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WritesBy (-want +got):\n%s", diff)
	}
}
