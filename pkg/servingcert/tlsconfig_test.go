package servingcert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	certutil "k8s.io/client-go/util/cert"
)

func TestTLSConfig(t *testing.T) {
	// A certificate of another name than the self-signed one's.
	cert, key, err := certutil.GenerateSelfSignedCertKey("queue.example", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		files   map[string][]byte // in the directory; nil: no directory
		wantDNS []string
		wantErr string
	}{
		"no directory: a self-signed certificate for localhost, as /metrics": {
			wantDNS: []string{"localhost"},
		},
		"a directory's tls.crt and tls.key": {
			files:   map[string][]byte{"tls.crt": cert, "tls.key": key},
			wantDNS: []string{"queue.example"},
		},
		"a directory without the files is an error, not a silent self-signed certificate": {
			files:   map[string][]byte{},
			wantErr: "tls.crt",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dir := ""
			if tc.files != nil {
				dir = t.TempDir()
				for name, data := range tc.files {
					if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			cfg, err := TLSConfig(ctx, dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MinVersion != tls.VersionTLS12 {
				t.Errorf("MinVersion %x, want TLS 1.2", cfg.MinVersion)
			}
			served, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
			if err != nil {
				t.Fatal(err)
			}
			leaf, err := x509.ParseCertificate(served.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantDNS, leaf.DNSNames); diff != "" {
				t.Errorf("served certificate's DNS names (-want +got):\n%s", diff)
			}
		})
	}
}
