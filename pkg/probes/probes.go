// Package probes adds the /healthz and /readyz checks both binaries serve:
// alive once the manager runs, ready once its informer caches are synced.
package probes

import (
	"errors"
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Add registers the checks on mgr.
func Add(mgr manager.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("informer caches not synced")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	return nil
}
