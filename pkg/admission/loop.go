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
	// synced says when the informers' initial lists reached their stores
	// and the Cache (Setup starts the watch with the manager, on every
	// replica); nil: at once.
	synced *syncTimes
	// log is the Loop's logger (controller-runtime starts a runnable
	// with none in its context); a logger in Start's context wins.
	log logr.Logger
	// processStart is when the process started (Options.ProcessStart);
	// zero if unknown.
	processStart time.Time
}

var _ manager.LeaderElectionRunnable = (*Loop)(nil)

// NeedLeaderElection: only the leader admits.
func (l *Loop) NeedLeaderElection() bool { return true }

// Start waits until every informer has delivered its initial objects to the
// Cache, so every admitted unit is counted, then runs cycles until ctx ends.
func (l *Loop) Start(ctx context.Context) error {
	log := l.log
	if fromCtx, err := logr.FromContext(ctx); err == nil {
		log = fromCtx.WithName("admission")
	}
	ctx = logr.NewContext(ctx, log)
	phases := startPhases{process: l.processStart, leading: l.clock.Now()}
	phases.listed, phases.rebuilt = phases.leading, phases.leading
	if l.synced != nil {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the cache to be rebuilt: %w", ctx.Err())
		case <-l.synced.done:
		}
		if err := l.synced.err; err != nil {
			return fmt.Errorf("waiting for the cache to be rebuilt: %w", err)
		}
		phases.listed, phases.rebuilt = l.synced.listed, l.synced.rebuilt
	}
	l.cache.clusterCapacity.nodesListed()
	log.Info("Cache rebuilt from the API server; admitting")
	go l.writer.Run(ctx)

	timer := l.clock.NewTimer(time.Hour)
	timer.Stop()
	for first := true; ; first = false {
		next, more, admitted := l.runOnce()
		if first {
			phases.firstCycleDone, phases.firstCycleAdmissions = l.clock.Now(), admitted
			log.Info("Started leading: where the time went", phases.keysAndValues()...)
		}
		if more {
			l.cache.wake.notify()
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
// admitted is how many admissions the cycle decided.
func (l *Loop) runOnce() (next time.Time, more bool, admitted int) {
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
	l.writer.pinQueue(f.pin...)
	for _, key := range l.cache.executionDeadlines.expireExecutions(l.clock.Now()) {
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
	waiting := f.explain
	for _, w := range res.Waits {
		waiting = append(waiting, w.Unit)
	}
	l.writer.explain(waiting...)
	// When the budget ran out, the next admission written wakes the loop.
	return res.NextWakeup, res.More && len(res.Admissions) < budget, len(res.Admissions)
}

// waitSynced polls until every informer's initial list is in its store
// (listed) and every handler has received it (rebuilt: the Cache has every
// object), and says when each was first seen, to the poll's 50ms.
func waitSynced(ctx context.Context, clk clock.PassiveClock, listed, synced []toolscache.InformerSynced) (listedAt, rebuiltAt time.Time, err error) {
	all := func(fs []toolscache.InformerSynced) bool {
		for _, f := range fs {
			if !f() {
				return false
			}
		}
		return true
	}
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		if listedAt.IsZero() && all(listed) {
			listedAt = clk.Now()
		}
		if !all(synced) {
			return false, nil
		}
		rebuiltAt = clk.Now()
		if listedAt.IsZero() {
			listedAt = rebuiltAt
		}
		return true, nil
	})
	return listedAt, rebuiltAt, err
}

// syncTimes are when the informers' initial lists reached their stores
// and the Cache, once done is closed; err if the wait ended first.
type syncTimes struct {
	done            chan struct{}
	listed, rebuilt time.Time
	err             error
}

// watchSync records, until ctx ends, when listed and synced report true.
func watchSync(ctx context.Context, clk clock.PassiveClock, listed, synced []toolscache.InformerSynced) *syncTimes {
	st := &syncTimes{done: make(chan struct{})}
	go func() {
		defer close(st.done)
		st.listed, st.rebuilt, st.err = waitSynced(ctx, clk, listed, synced)
	}()
	return st
}

// startPhases are the moments a leader's start went through, to log where
// its time went.
type startPhases struct {
	// process is when the process started; zero if unknown.
	process time.Time
	// listed: every informer's initial list was in its store.
	listed time.Time
	// rebuilt: the Cache had received every object listed.
	rebuilt time.Time
	// leading is when this replica started leading (at once without
	// leader election, once the manager's caches synced). A standby
	// listed and rebuilt long before.
	leading time.Time
	// firstCycleDone: the first scheduling cycle had decided, and handed
	// its firstCycleAdmissions to the writer.
	firstCycleDone       time.Time
	firstCycleAdmissions int
}

// keysAndValues are the phases' durations, in seconds, for a log line:
// the informers' lists (from the process's start), the Cache's rebuild,
// the time from the process's start to leading, and from leading to the
// end of the first cycle, and the first cycle itself (from the later of
// leading and the rebuild).
func (p startPhases) keysAndValues() []any {
	since := func(from, to time.Time) float64 {
		return max(to.Sub(from), 0).Seconds()
	}
	kv := []any{}
	if !p.process.IsZero() {
		kv = append(kv, "sinceProcessStartSeconds", since(p.process, p.firstCycleDone),
			"listSeconds", since(p.process, p.listed), "beforeLeadingSeconds", since(p.process, p.leading))
	}
	return append(kv,
		"rebuildSeconds", since(p.listed, p.rebuilt),
		"sinceLeadingSeconds", since(p.leading, p.firstCycleDone),
		"firstCycleSeconds", since(maxTime(p.leading, p.rebuilt), p.firstCycleDone),
		"firstCycleAdmissions", p.firstCycleAdmissions)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
