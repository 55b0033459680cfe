// Package simulate replays a performance scenario through koord-queue's
// decision core (pkg/scheduler) with perfect plumbing: the core hears of
// every arrival and finish the instant it happens; each admission or
// eviction it decides is written the moment koord-queue's client rate
// limiter (the scenario's QPS and burst) allows, and nothing else spends
// that budget; every unit finishes exactly its runtime after its admission
// is written. Decisions are made just in time, never ahead of the budget.
// Where the real koord-queue differs: it decides up to twice its write
// workers ahead of the rate limiter, and it also writes spec.queue and wait
// messages when admissions leave it room; koord-queue restarts are not
// modelled. Wall is, as the harness's "units created to last finished",
// from the first unit created, not from koord-queue's start.
//
// It shows what the scenario's quotas, priorities and write budget cost by
// themselves, and, with Options.Latency, what a delay in the plumbing costs.
// It is not a lower bound in general: which units preempt which depends on
// timing, and a run whose arrivals are less synchronized may evict less. The
// one bound is WriteBound: every admission is a write. Time is virtual: the
// 15,000-unit baseline replays in about a second.
package simulate

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/quota"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	"github.com/koord-queue/koord-queue/test/performance/generator"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

// Result is what a replay measured.
type Result struct {
	Scenario string
	// Latency is Options.Latency of the replay.
	Latency time.Duration
	// Wall is from the first unit created to the last finished (the
	// harness's WorkloadSeconds, not its wall from koord-queue's start).
	Wall time.Duration
	// Admissions and Evictions written; Writes is their sum, each one
	// request of koord-queue's budget.
	Admissions, Evictions, Writes int
	// EvictionsByKind counts victims by preemption kind (Reclaim, InQueue).
	EvictionsByKind map[scheduler.PreemptionKind]int
	// AvgTimeToAdmission per class: first admission minus creation, as the
	// checker measures it.
	AvgTimeToAdmission map[string]time.Duration
	// Classes in the scenario's order.
	Classes []string
	// WriteBound is what no run can beat: every unit needs one admission
	// written, and the client allows burst writes at once, then QPS a
	// second: (units - burst) / QPS.
	WriteBound time.Duration
}

// Text is a short summary.
func (r *Result) Text() string {
	var b strings.Builder
	plumbing := "perfect plumbing"
	if r.Latency > 0 {
		plumbing = fmt.Sprintf("%s between a write and whoever it concerns", r.Latency)
	}
	fmt.Fprintf(&b, "%s — koord-queue's decision core replayed with %s\n", r.Scenario, plumbing)
	fmt.Fprintf(&b, "  units created to last finished %.1fs\n", r.Wall.Seconds())
	for _, c := range r.Classes {
		fmt.Fprintf(&b, "  %-8s average time to admission %.1fs\n", c, r.AvgTimeToAdmission[c].Seconds())
	}
	fmt.Fprintf(&b, "  %d admissions, %d evictions (%s): %d writes\n", r.Admissions, r.Evictions, byKind(r.EvictionsByKind), r.Writes)
	fmt.Fprintf(&b, "  no run of this scenario can take less than %.1fs: one write per unit, (units - burst) / QPS\n", r.WriteBound.Seconds())
	return b.String()
}

func byKind(m map[scheduler.PreemptionKind]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

type unit struct {
	key      string
	set      scenario.Set
	core     scheduler.Unit
	created  time.Duration
	admitted time.Duration // first admission written; -1 before
	// run counts admissions written, so a finish scheduled for an admission
	// that was evicted since is ignored.
	run int
}

type write struct {
	key   string
	evict bool
}

// Options make the plumbing less than perfect, to see what a real run's
// delays cost.
type Options struct {
	// Latency is the one-way delay between a write landing and the other
	// side hearing of it: the runner of an admission (its run starts that
	// much later) and koord-queue of a finish or an eviction (the quota is
	// free that much later). A unit holds quota for its runtime plus twice
	// this.
	Latency time.Duration
	// DecideAhead decides every admission that fits at once, however far
	// ahead of the write budget (Scheduler.Cycle), as koord-queue did before
	// it paced its decisions (Scheduler.CycleLimited).
	DecideAhead bool
	// PreemptionDelay, if set, is every queue's koord-queue/preemption-delay
	// (0: preempt at once, as before the delay existed); nil: the queues'
	// own, as the scenario's ElasticQuotas set them.
	PreemptionDelay *time.Duration
}

// Run replays s.
func Run(s *scenario.Scenario, opts Options) (*Result, error) {
	if s.QPS <= 0 || s.Burst <= 0 {
		return nil, fmt.Errorf("scenario %s: QPS and burst must be positive", s.Name)
	}
	r, err := newReplay(s, opts)
	if err != nil {
		return nil, err
	}
	if err := r.run(); err != nil {
		return nil, err
	}
	return r.result(), nil
}

type replay struct {
	s        *scenario.Scenario
	opts     Options
	core     *scheduler.Scheduler
	units    map[string]*unit
	arrivals []*unit // by creation time
	finishes finishHeap
	writes   []write
	tokens   float64
	now      time.Duration
	refilled time.Duration
	start    time.Time
	// wakeup is when a time-based rule of the core next changes an answer.
	wakeup                time.Duration
	kinds                 map[scheduler.PreemptionKind]int
	admissions, evictions int
	lastFinish            time.Duration
}

func newReplay(s *scenario.Scenario, opts Options) (*replay, error) {
	r := &replay{
		s:      s,
		opts:   opts,
		core:   scheduler.New(),
		units:  map[string]*unit{},
		kinds:  map[scheduler.PreemptionKind]int{},
		tokens: float64(s.Burst), // client-go's token bucket starts full
		start:  time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	r.core.SetClusterCapacity(generator.Node(s).Status.Allocatable)
	for _, q := range s.Quotas {
		eq := generator.ElasticQuota(s, q)
		spec, err := quota.SpecFromElasticQuota(eq)
		if err != nil {
			return nil, fmt.Errorf("quota %s: %w", q.Name, err)
		}
		r.core.UpsertQuota(spec)
		// Koord-Queue's Queue for the quota: Priority policy (the harness
		// sets no policy label) and the quota's koord-queue/* annotations.
		cfg, err := policy.ConfigFromQueue(schedulingv1alpha1.QueuePolicyPriority, eq.Annotations)
		if err != nil {
			return nil, fmt.Errorf("queue %s: %w", q.Name, err)
		}
		if opts.PreemptionDelay != nil {
			cfg.PreemptionDelay = *opts.PreemptionDelay
		}
		r.core.UpsertQueue(scheduler.QueueSpec{Name: q.Name, Quota: q.Name, Priority: schedulingv1alpha1.DefaultQueuePriority, Config: cfg})
	}
	for _, leaf := range s.Leaves() {
		for _, set := range s.Sets {
			for i := range set.Count {
				obj := generator.Unit(leaf.Name, set.Class, i)
				at := generator.Arrival(set, i)
				u := &unit{
					key: obj.Namespace + "/" + obj.Name, set: set, created: at, admitted: -1,
					core: scheduler.Unit{
						Key: obj.Namespace + "/" + obj.Name, Queue: leaf.Name, Priority: set.Class.Priority,
						Request: obj.Spec.Resource,
						// creationTimestamp has whole seconds; ties go by name.
						EnqueueTime: r.start.Add(at).Truncate(time.Second),
					},
				}
				r.units[u.key] = u
				r.arrivals = append(r.arrivals, u)
			}
		}
	}
	slices.SortStableFunc(r.arrivals, func(a, b *unit) int { return cmp.Compare(a.created, b.created) })
	return r, nil
}

func (r *replay) run() error {
	next := 0
	for {
		for next < len(r.arrivals) && r.arrivals[next].created <= r.now {
			if err := r.core.UpsertUnit(r.arrivals[next].core); err != nil {
				return err
			}
			next++
		}
		for len(r.finishes) > 0 && r.finishes[0].at <= r.now {
			f := heap.Pop(&r.finishes).(finish)
			u := r.units[f.key]
			switch {
			case f.evicted:
				// The eviction is seen: the unit is back in its queue and
				// its quota is free (a unit without a job releases at once).
				back := u.core
				back.Admitted = false
				if err := r.core.UpsertUnit(back); err != nil {
					return err
				}
			case u.run == f.run && r.core.IsAdmitted(f.key):
				r.core.DeleteUnit(f.key)
				r.lastFinish = r.now
			}
		}
		more := r.decideAndWrite()

		// The next moment anything can change.
		at := time.Duration(math.MaxInt64)
		if next < len(r.arrivals) {
			at = r.arrivals[next].created
		}
		if len(r.finishes) > 0 {
			at = min(at, r.finishes[0].at)
		}
		if more || len(r.writes) > 0 {
			at = min(at, r.now+r.untilToken())
		}
		if r.wakeup > r.now {
			at = min(at, r.wakeup)
		}
		if at == time.Duration(math.MaxInt64) {
			break
		}
		r.now = at
	}
	if len(r.writes) > 0 {
		return fmt.Errorf("replay ended with %d writes left", len(r.writes))
	}
	for _, u := range r.units {
		if u.admitted < 0 || r.core.IsAdmitted(u.key) {
			return fmt.Errorf("unit %s never finished: %s", u.key, r.core.WaitReason(u.key))
		}
	}
	return nil
}

// decideAndWrite runs cycles while the budget allows and writes what they
// decide. more is true when the core has work left that waits for budget.
func (r *replay) decideAndWrite() (more bool) {
	again := 0
	for {
		r.refill()
		r.flush()
		var res scheduler.Result
		if r.opts.DecideAhead {
			res = r.core.Cycle(r.start.Add(r.now))
		} else {
			budget := int(r.tokens) - len(r.writes)
			if budget <= 0 {
				return true
			}
			res = r.core.CycleLimited(r.start.Add(r.now), budget)
		}
		for _, a := range res.Admissions {
			r.writes = append(r.writes, write{key: a.Unit})
		}
		for _, p := range res.Preemptions {
			r.kinds[p.Kind] += len(p.Victims)
			for _, v := range p.Victims {
				r.writes = append(r.writes, write{key: v, evict: true})
			}
		}
		if !res.NextWakeup.IsZero() {
			r.wakeup = res.NextWakeup.Sub(r.start)
		}
		if len(res.Admissions) == 0 && len(res.Preemptions) == 0 {
			if res.More && again < 2 {
				again++ // the core asked for another cycle
				continue
			}
			return false
		}
	}
}

// flush writes what the tokens allow, oldest first.
func (r *replay) flush() {
	for len(r.writes) > 0 && r.tokens >= 1 {
		w := r.writes[0]
		r.writes = r.writes[1:]
		r.tokens--
		u := r.units[w.key]
		u.run++
		if w.evict {
			r.evictions++
			heap.Push(&r.finishes, finish{at: r.now + r.opts.Latency, key: w.key, evicted: true})
			continue
		}
		r.admissions++
		if u.admitted < 0 {
			u.admitted = r.now
		}
		heap.Push(&r.finishes, finish{at: r.now + u.set.Class.Runtime + 2*r.opts.Latency, key: w.key, run: u.run})
	}
}

func (r *replay) refill() {
	r.tokens = min(float64(r.s.Burst), r.tokens+(r.now-r.refilled).Seconds()*r.s.QPS)
	r.refilled = r.now
}

// untilToken is how long until the bucket holds one more whole token than
// the writes waiting need.
func (r *replay) untilToken() time.Duration {
	need := float64(len(r.writes)+1) - r.tokens
	if need <= 0 {
		return 0
	}
	return max(time.Duration(math.Ceil(need/r.s.QPS*float64(time.Second))), time.Nanosecond)
}

func (r *replay) result() *Result {
	res := &Result{
		Scenario: r.s.Name, Latency: r.opts.Latency, EvictionsByKind: r.kinds,
		Admissions: r.admissions, Evictions: r.evictions, Writes: r.admissions + r.evictions,
		AvgTimeToAdmission: map[string]time.Duration{}, Classes: r.s.Classes(),
	}
	first := time.Duration(math.MaxInt64)
	sum, n := map[string]time.Duration{}, map[string]int{}
	for _, u := range r.units {
		first = min(first, u.created)
		sum[u.set.Class.Name] += u.admitted - u.created
		n[u.set.Class.Name]++
	}
	for c, total := range sum {
		res.AvgTimeToAdmission[c] = total / time.Duration(n[c])
	}
	res.Wall = r.lastFinish - first
	res.WriteBound = r.s.WriteBound()
	return res
}

// finish is when koord-queue hears that a unit's run ended, or, if
// evicted, that its eviction was written.
type finish struct {
	at      time.Duration
	key     string
	run     int
	evicted bool
}

type finishHeap []finish

func (h finishHeap) Len() int { return len(h) }
func (h finishHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].key < h[j].key
}
func (h finishHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *finishHeap) Push(x any)   { *h = append(*h, x.(finish)) }
func (h *finishHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
