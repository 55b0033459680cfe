package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/servingcert"
	"github.com/koord-queue/koord-queue/pkg/visibility"
	"github.com/koord-queue/koord-queue/pkg/visibility/api/v1alpha1"
)

// AggregatedAPIOptions configure the aggregated visibility API
// (visibility.koord-queue.x-k8s.io/v1alpha1), served over HTTPS on every
// replica for the API server's APIService.
type AggregatedAPIOptions struct {
	// Address serves the API; empty turns it off.
	Address string
	// CertDir holds tls.crt and tls.key. With Rotate koord-queue writes
	// them there from Secret itself: an emptyDir will do.
	CertDir string
	// Rotate makes and rotates the certificate in Secret and writes its CA
	// into the APIService v1alpha1.visibility.koord-queue.x-k8s.io.
	// Without it, the certificate in CertDir is someone else's to provide.
	Rotate bool
	// Secret holds the certificate; it must exist, even empty.
	Secret types.NamespacedName
	// DNSName is the name the API server calls the API by: the Service's,
	// such as koord-queue-visibility-api.koord-queue.svc.
	DNSName string
	// RotatorName names the rotator's controller; empty is cert-rotator
	// (two in one process, as in a test, need two names).
	RotatorName string
}

// setupAggregatedAPI adds the aggregated API's server to mgr, and a
// readiness check that passes once it serves.
func setupAggregatedAPI(mgr manager.Manager, cache *admission.Cache, auth *visibility.Auth, opts AggregatedAPIOptions) error {
	ready, err := servingcert.Setup(mgr, servingcert.Options{
		CertDir:     opts.CertDir,
		Rotate:      opts.Rotate,
		Secret:      opts.Secret,
		DNSName:     opts.DNSName,
		Targets:     []rotator.WebhookInfo{{Name: v1alpha1.APIServiceName, Type: rotator.APIService}},
		RotatorName: opts.RotatorName,
	})
	if err != nil {
		return fmt.Errorf("the aggregated API's certificate: %w", err)
	}
	clientset, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("the aggregated API's client: %w", err)
	}
	authn, err := visibility.NewDelegatedAuthentication(clientset, auth.Authenticator)
	if err != nil {
		return fmt.Errorf("the aggregated API's authentication: %w", err)
	}
	s := &aggregatedServer{
		addr:    opts.Address,
		certDir: opts.CertDir,
		ready:   ready,
		authn:   authn,
		handler: visibility.NewAggregatedHandler(cache, authn, auth.Authorizer, auth.Limiter),
		serving: make(chan struct{}),
	}
	if err := mgr.Add(s); err != nil {
		return fmt.Errorf("adding the aggregated API server: %w", err)
	}
	return mgr.AddReadyzCheck("aggregated-api", func(*http.Request) error {
		select {
		case <-s.serving:
			return nil
		default:
			return errors.New("the aggregated API does not serve yet (waiting for its certificate)")
		}
	})
}

// aggregatedServer serves the aggregated API over HTTPS on every replica,
// once its certificate files are there, reloading them when they change.
type aggregatedServer struct {
	addr, certDir string
	ready         <-chan struct{}
	authn         *visibility.DelegatedAuthentication
	handler       http.Handler
	serving       chan struct{}
}

var _ manager.LeaderElectionRunnable = (*aggregatedServer)(nil)

func (s *aggregatedServer) NeedLeaderElection() bool { return false }

func (s *aggregatedServer) Start(ctx context.Context) error {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil
	}
	if err := s.authn.Run(ctx); err != nil {
		return fmt.Errorf("aggregated API: %w", err)
	}
	cfg, err := servingcert.TLSConfig(ctx, s.certDir)
	if err != nil {
		return fmt.Errorf("aggregated API: %w", err)
	}
	// A client certificate is asked for, not required: the authenticators
	// check it (the front proxy's against its CA, a user's against the
	// client CA); a bearer token needs none.
	cfg.ClientAuth = tls.RequestClientCert
	if err := serve(ctx, s.addr, s.handler, cfg, func() { close(s.serving) }); err != nil {
		return fmt.Errorf("aggregated API: %w", err)
	}
	return nil
}
