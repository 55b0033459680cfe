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

// TestWritesByReadsRotatedLogs: kube-apiserver rotates its audit log every
// 100 MB into backups beside it; the writes they hold count too (a
// large-scale run's count missed them), and nothing else beside the log
// does.
func TestWritesByReadsRotatedLogs(t *testing.T) {
	write := func(verb string) string {
		return `{"stage":"ResponseComplete","verb":"` + verb + `","userAgent":"minimalkueue/v0.17.0","objectRef":{"resource":"workloads","subresource":"status"},"responseStatus":{"code":200}}` + "\n"
	}
	dir := t.TempDir()
	files := map[string]string{
		"audit-2026-12-02T15-21-40.276.log": write("patch") + write("patch"),
		"audit-2026-12-02T15-40-02.001.log": write("patch") + write("update"),
		"audit.log":                         write("patch"),
		"audit-policy.yaml":                 "not a log",
		"audit-old.log":                     write("patch"), // not lumberjack's name
		"other-2026-12-02T15-21-40.276.log": write("patch"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(dir, "audit.log")
	gotFiles, err := AuditLogFiles(log)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{
		filepath.Join(dir, "audit-2026-12-02T15-21-40.276.log"),
		filepath.Join(dir, "audit-2026-12-02T15-40-02.001.log"),
		log,
	}
	if diff := cmp.Diff(wantFiles, gotFiles); diff != "" {
		t.Errorf("AuditLogFiles (-want +got):\n%s", diff)
	}
	got, err := WritesBy(log, "minimalkueue")
	if err != nil {
		t.Fatal(err)
	}
	want := map[Write]int{
		{Verb: "patch", Resource: "workloads/status", Code: 200}:  4,
		{Verb: "update", Resource: "workloads/status", Code: 200}: 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WritesBy (-want +got):\n%s", diff)
	}

	if _, err := WritesBy(filepath.Join(t.TempDir(), "audit.log"), "minimalkueue"); err == nil {
		t.Error("WritesBy with no audit log: no error, want one")
	}
}
