package admission

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/forecast"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/quota"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// The forecast (pkg/forecast): when each waiting unit would be admitted.
// It is computed from a snapshot of the core taken under the admission lock
// (O(units)) and replayed after releasing it, at most once every
// ForecastInterval however often it is asked for, and nothing of it is
// written to the API server. Runtimes come from each unit's
// spec.maximumExecutionTimeSeconds, else from what finished units of its
// quota and size ran (forecast.Learner, fed as units finish and rebuilt
// from the finished units a restart finds). When some waiting unit asks for
// a topology level, the snapshot holds the nodes too, and what each unit's
// pods hold on them (topologies.forecastCluster), so that the replay
// admits such a unit when a domain has room for it.

// ForecastInterval is the longest a forecast is served before it is
// computed again; ForecastHorizon how far ahead it looks.
const (
	ForecastInterval = 5 * time.Second
	ForecastHorizon  = 7 * 24 * time.Hour
)

// forecaster holds the learner and the latest forecast, under its own lock
// so that neither waits for the admission lock longer than the snapshot.
type forecaster struct {
	mu        sync.Mutex
	learner   forecast.Learner
	at        time.Time
	estimates map[string]forecast.Estimate
	// computing serialises recomputations: one replays, the others are
	// served the previous forecast meanwhile.
	computing sync.Mutex
}

// forecasts keeps the forecast and answers from it.
type forecasts struct {
	mu    *sync.Mutex            // the Cache's
	units map[string]*unitRecord // the Cache's records
	core  *scheduler.Scheduler
	// nodes copy the nodes, and what holds them, for units that ask for
	// topology levels: the Cache's.
	nodes *topologies
	// queues are the Cache's; views give WhatIf the page of a queue's
	// waiting units.
	queues queueRecords
	views  *views
	// forecast is the latest forecast and what it learned; now is the clock
	// it is made at. Views carry estimates only when showEstimates (Setup
	// turns it on; views in tests stay as they are).
	forecast      forecaster
	now           func() time.Time
	showEstimates bool
}

// observeFinished teaches the learner how long u ran when u is a finished
// unit not seen finished before (was is the previous copy, nil if none),
// with c.mu held: from its admission (lastAllocateTime) to its last status
// write (lastUpdateTime, when it turned Succeed or Failed).
func (c *forecasts) observeFinished(was, u *schedulingv1alpha1.QueueUnit, quota string) {
	if !queueunit.Finished(u.EffectivePhase()) || (was != nil && queueunit.Finished(was.EffectivePhase())) {
		return
	}
	if quota == "" || u.Status.LastAllocateTime == nil || u.Status.LastUpdateTime == nil {
		return
	}
	ran := u.Status.LastUpdateTime.Sub(u.Status.LastAllocateTime.Time)
	c.forecast.mu.Lock()
	c.forecast.learner.Observe(quota, queueunit.Charged(u), ran)
	c.forecast.mu.Unlock()
}

// Estimates is the latest forecast of the waiting units, by key, at once:
// when it is older than ForecastInterval at now (or there is none yet), a
// new one is computed in the background, and served from the next call.
// nil until the first one is done.
func (c *forecasts) Estimates(now time.Time) map[string]forecast.Estimate {
	f := &c.forecast
	f.mu.Lock()
	estimates, stale := f.estimates, f.estimates == nil || now.Sub(f.at) >= ForecastInterval
	f.mu.Unlock()
	if stale && f.computing.TryLock() {
		go func() {
			defer f.computing.Unlock()
			c.computeEstimates(now)
		}()
	}
	return estimates
}

// RefreshEstimates computes the forecast at now unless one no older than
// ForecastInterval exists, waiting for it, and returns it.
func (c *forecasts) RefreshEstimates(now time.Time) map[string]forecast.Estimate {
	f := &c.forecast
	f.computing.Lock()
	defer f.computing.Unlock()
	f.mu.Lock()
	if f.estimates != nil && now.Sub(f.at) < ForecastInterval {
		defer f.mu.Unlock()
		return f.estimates
	}
	f.mu.Unlock()
	return c.computeEstimates(now)
}

// computeEstimates replays the core at now and keeps the result, with
// f.computing held.
func (c *forecasts) computeEstimates(now time.Time) map[string]forecast.Estimate {
	var estimates map[string]forecast.Estimate
	collectAround(func() { estimates = forecast.Run(c.forecastInput(now)) })
	f := &c.forecast
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at, f.estimates = now, estimates
	return estimates
}

// forecastInput copies the core's state under c.mu, each unit straight
// into the forecast's form, and gives each unit its runtime after releasing
// it.
func (c *forecasts) forecastInput(now time.Time) forecast.Input {
	in := forecast.Input{Now: now, Horizon: ForecastHorizon}
	c.mu.Lock()
	in.Capacity, in.Quotas, in.Queues = c.core.Inputs()
	in.Units = make([]forecast.Unit, 0, len(c.units))
	for u := range c.core.Units() {
		fu := forecast.Unit{Unit: u, Basis: forecast.Unknown}
		if r := c.units[u.Key]; r != nil && r.unit.Spec.MaximumExecutionTimeSeconds != nil {
			fu.Runtime, fu.Basis = time.Duration(*r.unit.Spec.MaximumExecutionTimeSeconds)*time.Second, forecast.Declared
		}
		in.Units = append(in.Units, fu)
	}
	in.Nodes = c.nodes.forecastCluster()
	c.mu.Unlock()
	quotaOf := make(map[string]string, len(in.Queues))
	for _, q := range in.Queues {
		quotaOf[q.Name] = q.Quota
	}
	c.forecast.mu.Lock()
	defer c.forecast.mu.Unlock()
	for i := range in.Units {
		fu := &in.Units[i]
		if fu.Basis != forecast.Declared {
			if d, ok := c.forecast.learner.Runtime(quotaOf[fu.Queue], fu.Request); ok {
				fu.Runtime, fu.Basis = d, forecast.Learned
			}
		}
	}
	return in
}

// addEstimates gives each waiting view its forecast, from the latest one
// (Estimates: never waiting for a new one); none before the first.
func (c *forecasts) addEstimates(views []api.UnitView) {
	if !c.showEstimates {
		return
	}
	setEstimates(views, c.Estimates(c.now()))
}

// setEstimates gives each waiting view its estimate in estimates.
func setEstimates(views []api.UnitView, estimates map[string]forecast.Estimate) {
	for i := range views {
		v := &views[i]
		e, ok := estimates[v.Namespace+"/"+v.Name]
		if !ok || v.Phase != schedulingv1alpha1.Enqueued {
			continue
		}
		v.EstimateBasis, v.EstimateReason = e.Basis.String(), e.Reason
		if !e.At.IsZero() {
			v.EstimatedAdmissionTime = &metav1.Time{Time: e.At}
		}
	}
}

// WhatIf is the forecast of queue's first api.MaxLimit waiting units, in
// admission order, had the queue's quota the min and max change gives:
// replayed at once, like Estimates from a snapshot taken under the
// admission lock and run after releasing it, and neither kept nor served to
// anyone else. false when the queue does not exist or its quota is not in
// the core.
//
// visible says whose units the caller may see, by namespace: the replay
// leaves out every other unit, waiting or holding quota, in any queue, so
// that nothing of the answer depends on them (OnlyVisible says when some
// were). The caller chooses the quota, so an answer that depended on a
// unit it may not see would tell that unit's size: whether it fits under
// the amount asked, and 16 halvings of the amount find its request. An
// error of visible is returned.
func (c *forecasts) WhatIf(queue string, change api.QuotaChange, visible func(namespace string) (bool, error)) (api.WhatIf, bool, error) {
	now := c.now()
	c.mu.Lock()
	_, ok := c.queues[queue]
	var page unitPage
	var total int
	if ok {
		page, total = c.views.queueUnitsPage(queue, schedulingv1alpha1.Enqueued, 0, api.MaxLimit)
	}
	c.mu.Unlock()
	if !ok {
		return api.WhatIf{}, false, nil
	}
	var out api.WhatIf
	var err error
	collectAround(func() {
		in := c.forecastInput(now)
		var left int
		if left, err = keepVisible(&in, visible); err != nil {
			return
		}
		name := queue
		for _, q := range in.Queues {
			if q.Name == queue && q.Quota != "" {
				name = q.Quota
			}
		}
		i := slices.IndexFunc(in.Quotas, func(q quota.Spec) bool { return q.Name == name })
		if i < 0 {
			ok = false
			return
		}
		q := &in.Quotas[i]
		q.Min, q.Max = withAmounts(q.Min, change.Min), withAmounts(q.Max, change.Max)
		out = api.WhatIf{Queue: queue, Quota: name, Min: q.Min, Max: q.Max, Total: total, Items: page.views(), OnlyVisible: left > 0}
		setEstimates(out.Items, forecast.Run(in))
	})
	if err != nil {
		return api.WhatIf{}, false, err
	}
	return out, ok, nil
}

// keepVisible leaves in in.Units those of the namespaces visible shows,
// asking it once a namespace, and says how many it left out.
func keepVisible(in *forecast.Input, visible func(namespace string) (bool, error)) (int, error) {
	shown := map[string]bool{}
	kept := in.Units[:0]
	for _, u := range in.Units {
		ns, _, _ := strings.Cut(u.Key, "/")
		ok, asked := shown[ns]
		if !asked {
			var err error
			if ok, err = visible(ns); err != nil {
				return 0, err
			}
			shown[ns] = ok
		}
		if ok {
			kept = append(kept, u)
		}
	}
	left := len(in.Units) - len(kept)
	clear(in.Units[len(kept):]) // no reference to what is left out outlives it
	in.Units = kept
	return left, nil
}

// collectAround runs replay, which builds and replays a copy of the
// decision core's state (BenchmarkReplayMemory: 1 KB a unit at most, 50 MB
// at 50,000), between two collections. A collection that ends while the
// copy lives counts it as live, and the heap may then grow to twice the
// core and the copy before the next one, long after the copy is garbage:
// with /metrics scraped every 30 s, which computes a forecast each time,
// peak RSS at 50,000 units was 421 MiB against 306 without. The first
// collection gives the copy the room a collection leaves, so none needs to
// run during the replay; the second sizes the heap by what lives once the
// copy is gone. Each costs a mark of the live heap: twice per forecast (at
// most one every ForecastInterval) and per what-if (one in flight per
// caller, each a replay as well).
func collectAround(replay func()) {
	runtime.GC()
	replay()
	runtime.GC()
}

// withAmounts is list with each resource of amounts set to its amount: a
// copy, list unchanged.
func withAmounts(list, amounts corev1.ResourceList) corev1.ResourceList {
	if len(amounts) == 0 {
		return list
	}
	out := list.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, amount := range amounts {
		out[name] = amount.DeepCopy()
	}
	return out
}
