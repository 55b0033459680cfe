// Package app assembles the koord-queue binary's controllers on a
// controller-runtime manager: Queues from ElasticQuotas and their status, the admission loop,
// the visibility REST API and the aggregated visibility API. cmd/queue parses flags and calls Setup; integration
// tests call the same Setup on their own API server.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/queue"
	"github.com/koord-queue/koord-queue/pkg/servingcert"
	"github.com/koord-queue/koord-queue/pkg/visibility"
	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

// Options configure the koord-queue controllers.
type Options struct {
	Admission admission.Options
	// QueueStatus tunes the Queue status writer (it reads the admission
	// Cache, on Admission.Clock).
	QueueStatus queue.StatusOptions
	// VisibilityAddress serves the visibility API; empty turns it off.
	VisibilityAddress string
	// VisibilityInsecureAllowUnauthenticated serves the visibility API to
	// anyone, without a token; by default a caller needs a bearer token and
	// sees only the namespaces where it may list QueueUnits.
	VisibilityInsecureAllowUnauthenticated bool
	// VisibilityCertDir holds the visibility API's tls.crt and tls.key,
	// read again when they change; empty serves a self-signed certificate.
	VisibilityCertDir string
	// VisibilityInsecureServing serves the visibility API over plain HTTP:
	// bearer tokens and units cross the network in clear.
	VisibilityInsecureServing bool
	// VisibilityTokenAudiences are the audiences a bearer token sent to
	// either visibility API must be meant for (TokenReview
	// spec.audiences); empty is the API server's own, which ordinary
	// ServiceAccount tokens carry.
	VisibilityTokenAudiences []string
	// AggregatedAPI serves visibility.koord-queue.x-k8s.io/v1alpha1 for
	// the API server's aggregation layer; always authenticated.
	AggregatedAPI AggregatedAPIOptions
	// QueueNamespace holds the Queues (empty:
	// schedulingv1alpha1.QueueNamespace); the manager's cache must watch
	// it (CacheOptions).
	QueueNamespace string
}

// Setup adds every koord-queue controller to mgr and returns the admission
// cache (what the visibility API serves).
func Setup(ctx context.Context, mgr manager.Manager, opts Options) (*admission.Cache, error) {
	if err := queue.SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	if err := queue.NewReconciler(mgr.GetClient(), mgr.GetEventRecorderFor("koord-queue"), opts.QueueNamespace).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the Queue controller: %w", err)
	}
	opts.Admission.QueueNamespace = opts.QueueNamespace
	cache, err := admission.Setup(ctx, mgr, opts.Admission)
	if err != nil {
		return nil, err
	}
	status := queue.NewStatusWriter(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorderFor("koord-queue"), cache, opts.Admission.Clock, opts.QueueStatus)
	if err := mgr.Add(status); err != nil {
		return nil, fmt.Errorf("adding the queue status writer: %w", err)
	}
	// Both visibility APIs share one cache of TokenReview and
	// SubjectAccessReview answers.
	auth := visibility.NewAuth(authz.KubeReviewer{Client: mgr.GetClient(), Audiences: opts.VisibilityTokenAudiences})
	if opts.VisibilityAddress != "" {
		restAuth := auth
		if opts.VisibilityInsecureAllowUnauthenticated {
			restAuth = nil
		}
		srv := &visibilityServer{
			addr:     opts.VisibilityAddress,
			certDir:  opts.VisibilityCertDir,
			insecure: opts.VisibilityInsecureServing,
			handler:  visibility.NewHandler(cache, restAuth),
			log:      mgr.GetLogger().WithName("visibility"),
			serving:  make(chan struct{}),
		}
		if err := mgr.Add(srv); err != nil {
			return nil, fmt.Errorf("adding the visibility server: %w", err)
		}
		// Ready means the visibility API answers: a client (the dashboard,
		// a Service's endpoints) sent here once /readyz passes must not be
		// refused.
		if err := mgr.AddReadyzCheck("visibility-api", srv.ready); err != nil {
			return nil, fmt.Errorf("adding the visibility API's readiness check: %w", err)
		}
	}
	if opts.AggregatedAPI.Address != "" {
		if err := setupAggregatedAPI(mgr, cache, auth, opts.AggregatedAPI); err != nil {
			return nil, err
		}
	}
	return cache, nil
}

// visibilityServer serves the REST API and dashboard on every replica,
// leader or not: over TLS with certDir's certificate (self-signed when
// empty), or plain HTTP when insecure.
type visibilityServer struct {
	addr, certDir string
	insecure      bool
	handler       http.Handler
	log           logr.Logger
	// serving is closed once the server listens.
	serving chan struct{}
}

var _ manager.LeaderElectionRunnable = (*visibilityServer)(nil)

// ready is the readiness check: the server listens.
func (s *visibilityServer) ready(*http.Request) error {
	select {
	case <-s.serving:
		return nil
	default:
		return errors.New("the visibility API does not listen yet")
	}
}

func (s *visibilityServer) NeedLeaderElection() bool { return false }

func (s *visibilityServer) Start(ctx context.Context) error {
	var cfg *tls.Config
	if s.insecure {
		s.log.Info("WARNING: serving the visibility API over plain HTTP (--visibility-insecure-serving): bearer tokens and units cross the network in clear", "address", s.addr)
	} else {
		var err error
		if cfg, err = servingcert.TLSConfig(ctx, s.certDir); err != nil {
			return fmt.Errorf("visibility server: %w", err)
		}
		if s.certDir == "" {
			s.log.Info("Serving the visibility API over HTTPS with a self-signed certificate (--visibility-cert-dir names one of yours)", "address", s.addr)
		}
	}
	if err := serve(ctx, s.addr, s.handler, cfg, func() { close(s.serving) }); err != nil {
		return fmt.Errorf("visibility server: %w", err)
	}
	return nil
}

// serve serves handler on addr until ctx ends: over TLS with cfg, or
// plain HTTP when cfg is nil. listening, if set, is called once it listens.
func serve(ctx context.Context, addr string, handler http.Handler, cfg *tls.Config, listening func()) error {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, TLSConfig: cfg}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if listening != nil {
		listening()
	}
	if cfg != nil {
		err = srv.ServeTLS(listener, "", "")
	} else {
		err = srv.Serve(listener)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
