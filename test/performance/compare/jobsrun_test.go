package compare

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// files lists every file and directory under root, relative to it.
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(root, path); rel != "." {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteFixedCertsRemovesOnlyWhatItWrote(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"etc", "empty", "paired"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	kept := filepath.Join(root, "paired", "tls.key")
	if err := os.WriteFile(kept, []byte("the operator's"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := files(t, root)
	dirs := []string{
		filepath.Join(root, "etc", "kueue", "metrics", "certs"), // made from etc/kueue down
		filepath.Join(root, "empty"),                            // there, without a pair
		filepath.Join(root, "paired"),                           // there, with a pair: left alone
	}
	cleanup, err := writeFixedCerts(dirs)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs[:2] {
		if _, err := os.Stat(filepath.Join(dir, "tls.key")); err != nil {
			t.Errorf("no pair written in %s: %v", dir, err)
		}
	}
	cleanup()
	if diff := cmp.Diff(before, files(t, root)); diff != "" {
		t.Errorf("left behind after cleanup (-want +got):\n%s", diff)
	}
	if data, _ := os.ReadFile(kept); string(data) != "the operator's" {
		t.Errorf("a pair that was there was changed: %q", data)
	}
}

func TestCheckFixedCertsRefusesWhenOnlyRootCouldWrite(t *testing.T) {
	root := t.TempDir()
	paired := filepath.Join(root, "paired")
	if err := os.MkdirAll(paired, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(paired, "tls.key"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(root, "visibility")
	for _, tc := range []struct {
		name    string
		dirs    []string
		euid    int
		wantErr string
	}{
		{"root writes what is missing", []string{paired, missing}, 0, ""},
		{"every pair there: no root needed", []string{paired}, 1000, ""},
		{"a pair missing and not root", []string{paired, missing}, 1000, "no certificate in " + missing + ", where Kueue's manager reads them (paths fixed in its code): the harness writes them for each run and removes them after, which takes root; run as root, or with -only koord-queue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkFixedCerts(tc.dirs, tc.euid)
			if tc.wantErr == "" && err != nil {
				t.Errorf("checkFixedCerts = %v, want nil", err)
			}
			if tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
				t.Errorf("checkFixedCerts = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestFirstMissing(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct{ dir, want string }{
		{root, ""},
		{filepath.Join(root, "a"), filepath.Join(root, "a")},
		{filepath.Join(root, "a", "b", "c"), filepath.Join(root, "a")},
	} {
		if got := firstMissing(tc.dir); got != tc.want {
			t.Errorf("firstMissing(%s) = %q, want %q", tc.dir, got, tc.want)
		}
	}
}
