package metrics

import (
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ServerOptions are the options of a binary's /metrics server at addr. By
// default (secure) it serves HTTPS, with a self-signed certificate unless
// certDir holds tls.crt and tls.key, and answers only callers whose bearer
// token the API server accepts (TokenReview) and who may get the
// non-resource URL /metrics (SubjectAccessReview), as Kueue's does;
// insecure serves plain HTTP to anyone.
func ServerOptions(addr string, secure bool, certDir string) metricsserver.Options {
	if !secure {
		return metricsserver.Options{BindAddress: addr}
	}
	return metricsserver.Options{
		BindAddress:    addr,
		SecureServing:  true,
		CertDir:        certDir,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
	}
}
