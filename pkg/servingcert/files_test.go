package servingcert

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteCertFiles(t *testing.T) {
	read := func(dir string) map[string]string {
		got := map[string]string{}
		for _, name := range certFiles {
			if data, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				got[name] = string(data)
			}
		}
		return got
	}
	cases := map[string]struct {
		before map[string][]byte
		data   map[string][]byte
		want   map[string]string
	}{
		"a new certificate is written": {
			data: map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key"), "ca.crt": []byte("ca")},
			want: map[string]string{"tls.crt": "cert", "tls.key": "key"},
		},
		"a Secret the rotator has not filled writes nothing": {
			data: map[string][]byte{"tls.crt": []byte("cert")},
			want: map[string]string{},
		},
		"a renewed certificate replaces the old one": {
			before: map[string][]byte{"tls.crt": []byte("old cert"), "tls.key": []byte("old key")},
			data:   map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key")},
			want:   map[string]string{"tls.crt": "cert", "tls.key": "key"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if len(tc.before) > 0 {
				if err := writeCertFiles(dir, tc.before); err != nil {
					t.Fatal(err)
				}
			}
			if err := writeCertFiles(dir, tc.data); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, read(dir)); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != len(tc.want) {
				t.Errorf("%d files in the directory, want %d: no temporary file left behind", len(entries), len(tc.want))
			}
		})
	}
}
