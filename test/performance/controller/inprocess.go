package controller

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/koord-queue/koord-queue/cmd/queue/app"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// InProcess is koord-queue's manager running in the harness's process,
// built as cmd/queue builds it (same scheme, cache, QPS and burst; the
// admission defaults), without leader election, metrics or probes. Its CPU
// and memory cannot be told apart from the harness's; it is for profiles.
type InProcess struct {
	cancel context.CancelFunc
	done   chan error
}

// StartInProcess starts the manager and waits for its informers to sync.
func StartInProcess(ctx context.Context, cfg *rest.Config, qps float64, burst int) (*InProcess, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(qps), burst, "koord-queue"
	scheme, err := testenv.NewScheme()
	if err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	cacheOpts, err := app.CacheOptions("", cfg)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The restart scenario builds the same controllers again.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cacheOpts,
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	if _, err := app.Setup(ctx, mgr, app.Options{}); err != nil {
		cancel()
		return nil, err
	}
	p := &InProcess{cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("koord-queue's cache did not sync: %w", <-p.done)
	}
	return p, nil
}

// Stop stops the manager and waits for it.
func (p *InProcess) Stop() error {
	p.cancel()
	return <-p.done
}
