package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the files of the cluster's certificate authority, its serving
// and client certificates, the service-account signing key, and the
// front-proxy authority and client certificate the API server's aggregation
// layer uses to tell an aggregated API server who is asking.
type pki struct {
	CACert, CAKey                     string
	ServingCert, ServingKey           string
	AdminCert, AdminKey               string
	SAKey, SAPub                      string
	FrontProxyCACert, FrontProxyCAKey string
	ProxyClientCert, ProxyClientKey   string
}

// frontProxyClientName is the common name of the aggregation layer's client
// certificate, the one name aggregated API servers accept request headers
// from (--requestheader-allowed-names).
const frontProxyClientName = "front-proxy-client"

type certAuthority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func writePKI(dir string) (*pki, error) {
	p := &pki{
		CACert: filepath.Join(dir, "ca.crt"), CAKey: filepath.Join(dir, "ca.key"),
		ServingCert: filepath.Join(dir, "apiserver.crt"), ServingKey: filepath.Join(dir, "apiserver.key"),
		AdminCert: filepath.Join(dir, "admin.crt"), AdminKey: filepath.Join(dir, "admin.key"),
		SAKey: filepath.Join(dir, "sa.key"), SAPub: filepath.Join(dir, "sa.pub"),
		FrontProxyCACert: filepath.Join(dir, "front-proxy-ca.crt"), FrontProxyCAKey: filepath.Join(dir, "front-proxy-ca.key"),
		ProxyClientCert: filepath.Join(dir, "front-proxy-client.crt"), ProxyClientKey: filepath.Join(dir, "front-proxy-client.key"),
	}
	ca, err := newCA("koord-queue-local-ca")
	if err != nil {
		return nil, err
	}
	if err := writeCert(p.CACert, p.CAKey, ca.cert, ca.key); err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if err := ca.issue(serving, p.ServingCert, p.ServingKey); err != nil {
		return nil, err
	}
	admin := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := ca.issue(admin, p.AdminCert, p.AdminKey); err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generating service-account key: %w", err)
	}
	if err := writeKey(p.SAKey, saKey); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("encoding service-account public key: %w", err)
	}
	if err := writePEM(p.SAPub, "PUBLIC KEY", pub); err != nil {
		return nil, err
	}
	// A CA of its own, as kubeadm does: a client certificate of the cluster
	// CA must not be able to pass request headers to aggregated API servers.
	frontProxyCA, err := newCA("koord-queue-local-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	if err := writeCert(p.FrontProxyCACert, p.FrontProxyCAKey, frontProxyCA.cert, frontProxyCA.key); err != nil {
		return nil, err
	}
	proxyClient := &x509.Certificate{
		Subject:     pkix.Name{CommonName: frontProxyClientName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := frontProxyCA.issue(proxyClient, p.ProxyClientCert, p.ProxyClientKey); err != nil {
		return nil, err
	}
	return p, nil
}

func newCA(commonName string) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("signing CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	return &certAuthority{cert: cert, key: key}, nil
}

func (ca *certAuthority) issue(tmpl *x509.Certificate, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating key for %s: %w", tmpl.Subject.CommonName, err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return fmt.Errorf("choosing a serial: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(10 * 365 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return fmt.Errorf("signing certificate for %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("parsing certificate for %s: %w", tmpl.Subject.CommonName, err)
	}
	return writeCert(certPath, keyPath, cert, key)
}

func writeCert(certPath, keyPath string, cert *x509.Certificate, key crypto.Signer) error {
	if err := writePEM(certPath, "CERTIFICATE", cert.Raw); err != nil {
		return err
	}
	return writeKey(keyPath, key)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return writePEM(path, "PRIVATE KEY", der)
}

func writePEM(path, blockType string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteServingCert writes tls.crt and tls.key into dir: a certificate for
// 127.0.0.1 and localhost signed by a CA of its own, whose PEM it returns.
// It is what a webhook served on loopback needs for the API server to call
// it by URL.
func WriteServingCert(dir string) (caPEM []byte, err error) {
	ca, err := newCA("koord-queue-local-webhook-ca")
	if err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if err := ca.issue(serving, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), nil
}
