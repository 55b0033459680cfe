package admission

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/koord-queue/koord-queue/pkg/metrics"
)

// Loop runs scheduling cycles on the leader. A cycle runs when an event
// could change an answer (the Cache wakes it) or when a time-based rule says
// so (NextWakeup); there is no polling.
type Loop struct {
	cache  *Cache
	writer *Writer
	clock  clock.WithTicker
	synced []toolscache.InformerSynced
}

var _ manager.LeaderElectionRunnable = (*Loop)(nil)

// NeedLeaderElection: only the leader admits.
func (l *Loop) NeedLeaderElection() bool { return true }

// Start waits until every informer has delivered its initial objects to the
// Cache, so every admitted unit is counted, then runs cycles until ctx ends.
func (l *Loop) Start(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx).WithName("admission")
	ctx = logr.NewContext(ctx, log)
	if err := waitSynced(ctx, l.synced); err != nil {
		return fmt.Errorf("waiting for the cache to be rebuilt: %w", err)
	}
	log.Info("Cache rebuilt from the API server; admitting")
	go l.writer.Run(ctx)

	timer := l.clock.NewTimer(time.Hour)
	timer.Stop()
	for {
		next, more := l.runOnce()
		if more {
			l.cache.notify()
		}
		if !next.IsZero() {
			timer.Reset(max(next.Sub(l.clock.Now()), time.Millisecond))
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-l.cache.Wake():
		case <-timer.C():
		}
	}
}

// runOnce is one pass: follow up on units that changed, run a cycle, hand
// its decisions to the writer.
func (l *Loop) runOnce() (next time.Time, more bool) {
	f := l.cache.takeDirty()
	for _, key := range f.checksPassed {
		l.writer.checksPassed(key)
	}
	for _, key := range f.checksFailed {
		l.writer.checksFailed(key)
	}
	for _, key := range f.deactivate {
		l.writer.evict(key)
	}
	for _, key := range f.pin {
		l.writer.pinQueue(key)
	}
	for _, key := range l.cache.expireExecutions(l.clock.Now()) {
		l.writer.evict(key)
	}

	// Decide no further ahead than the writer writes: an admission holds
	// quota from the moment it is decided, so deciding late lets units of
	// higher priority that arrive meanwhile go first.
	budget := max(l.writer.admissionBudget(), 0)
	start := l.clock.Now()
	res := l.cache.cycle(start, budget)
	metrics.ObserveCycle(l.clock.Since(start))

	for _, a := range res.Admissions {
		l.writer.admit(a.Unit)
	}
	for _, p := range res.Preemptions {
		for _, victim := range p.Victims {
			l.writer.evict(victim)
		}
	}
	for _, w := range res.Waits {
		l.writer.explain(w.Unit)
	}
	for _, key := range f.explain {
		l.writer.explain(key)
	}
	// When the budget ran out, the next admission written wakes the loop.
	return res.NextWakeup, res.More && len(res.Admissions) < budget
}

func waitSynced(ctx context.Context, synced []toolscache.InformerSynced) error {
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, s := range synced {
			if !s() {
				return false, nil
			}
		}
		return true, nil
	})
}
