package checker

import (
	"fmt"
	"time"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/koord-queue/koord-queue/test/performance/kube"
)

// Feed sends every change the informer delivers to the Recorder, stamped
// with the time it arrived. Register it before the informer runs.
func (r *Recorder) Feed(inf toolscache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if u, ok := kube.UnitOf(obj); ok {
				r.Observe(time.Now(), u)
			}
		},
		UpdateFunc: func(_, obj any) {
			if u, ok := kube.UnitOf(obj); ok {
				r.Observe(time.Now(), u)
			}
		},
		DeleteFunc: func(obj any) {
			if u, ok := kube.UnitOf(obj); ok {
				r.Delete(time.Now(), u.Namespace, u.Name)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching QueueUnits: %w", err)
	}
	return nil
}
