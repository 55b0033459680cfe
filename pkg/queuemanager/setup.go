// Package queuemanager assembles the koord-queue binary's controllers on a
// controller-runtime manager: Queues from ElasticQuotas, the admission loop,
// the visibility REST API and the aggregated visibility API. cmd/queue parses flags and calls Setup; integration
// tests call the same Setup on their own API server.
package queuemanager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/queue"
	"github.com/koord-queue/koord-queue/pkg/visibility"
)

// Options configure the koord-queue controllers.
type Options struct {
	Admission admission.Options
	// VisibilityAddress serves the visibility API; empty turns it off.
	VisibilityAddress string
	// VisibilityInsecureAllowUnauthenticated serves the visibility API to
	// anyone, without a token; by default a caller needs a bearer token and
	// sees only the namespaces where it may list QueueUnits.
	VisibilityInsecureAllowUnauthenticated bool
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
	// Both visibility APIs share one cache of TokenReview and
	// SubjectAccessReview answers.
	auth := visibility.NewAuth(visibility.KubeReviewer{Client: mgr.GetClient()})
	if opts.VisibilityAddress != "" {
		restAuth := auth
		if opts.VisibilityInsecureAllowUnauthenticated {
			restAuth = nil
		}
		if err := mgr.Add(&httpServer{addr: opts.VisibilityAddress, handler: visibility.NewHandler(cache, restAuth)}); err != nil {
			return nil, fmt.Errorf("adding the visibility server: %w", err)
		}
	}
	if opts.AggregatedAPI.Address != "" {
		if err := setupAggregatedAPI(mgr, cache, auth, opts.AggregatedAPI); err != nil {
			return nil, err
		}
	}
	return cache, nil
}

// httpServer runs on every replica, leader or not.
type httpServer struct {
	addr    string
	handler http.Handler
}

var _ manager.LeaderElectionRunnable = (*httpServer)(nil)

func (s *httpServer) NeedLeaderElection() bool { return false }

func (s *httpServer) Start(ctx context.Context) error {
	listener, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("visibility server: %w", err)
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("visibility server: %w", err)
	}
	return nil
}
