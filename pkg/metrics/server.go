package metrics

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
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
		FilterProvider: authenticatedFilter,
	}
}

// authenticatedFilter serves /metrics to the callers the visibility API's
// authz would: a bearer token the API server accepts, its answers cached
// and its TokenReviews bounded (authz.Authenticator), and a user allowed
// the request's verb on its path (authz.Authorizer). It stands in for
// controller-runtime's filters.WithAuthenticationAndAuthorization, whose
// delegating authenticator and authorizer bring k8s.io/apiserver's webhook
// machinery (cel-go, grpc, OpenTelemetry) into each binary, and which
// reviews every unknown token it is sent.
func authenticatedFilter(c *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	scheme := runtime.NewScheme()
	if err := authenticationv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := authorizationv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	// Both reviews are cluster-scoped kinds of fixed versions: a static
	// mapper spares a discovery of the API server.
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(authenticationv1.SchemeGroupVersion.WithKind("TokenReview"), meta.RESTScopeRoot)
	mapper.Add(authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"), meta.RESTScopeRoot)
	cl, err := client.New(c, client.Options{HTTPClient: httpClient, Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("a client for /metrics' token and access reviews: %w", err)
	}
	reviewer := authz.KubeReviewer{Client: cl}
	return filter(authz.NewAuthenticator(reviewer), authz.NewAuthorizer(reviewer)), nil
}

// filter serves next to the callers authn names and authorizer allows.
func filter(authn *authz.Authenticator, authorizer *authz.Authorizer) metricsserver.Filter {
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			user, refused := authn.AuthenticateRequest(r)
			if refused == nil {
				refused = authorizer.AuthorizePath(r.Context(), user, strings.ToLower(r.Method), r.URL.Path)
			}
			if refused != nil {
				if refused.Err != nil {
					log.Error(refused.Err, "Refused a /metrics request", "status", refused.Status)
				}
				refused.WriteHeaders(w)
				http.Error(w, refused.Message, refused.Status)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}
}
