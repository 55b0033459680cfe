package servingcert

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	certutil "k8s.io/client-go/util/cert"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// TLSConfig is the TLS configuration of a server whose certificate is
// certDir's tls.crt and tls.key, read again whenever they change until ctx
// ends (a mounted Secret that cert-manager renews, the files Setup copies).
// An empty certDir gives a self-signed certificate for localhost, made at
// start, as controller-runtime's /metrics server does: the traffic is
// encrypted, but a client can verify whom it talks to only with a
// certificate of its own in certDir. A certDir without the two files is an
// error.
func TLSConfig(ctx context.Context, certDir string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if certDir == "" {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{{127, 0, 0, 1}}, nil)
		if err != nil {
			return nil, fmt.Errorf("making a self-signed certificate: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("reading the self-signed certificate: %w", err)
		}
		cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }
		return cfg, nil
	}
	watcher, err := certwatcher.New(filepath.Join(certDir, corev1.TLSCertKey), filepath.Join(certDir, corev1.TLSPrivateKeyKey))
	if err != nil {
		return nil, fmt.Errorf("reading the certificate in %s: %w", certDir, err)
	}
	go func() {
		if err := watcher.Start(ctx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Watching a serving certificate", "dir", certDir)
		}
	}()
	cfg.GetCertificate = watcher.GetCertificate
	return cfg, nil
}
