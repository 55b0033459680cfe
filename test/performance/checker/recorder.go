// Package checker watches every QueueUnit of a performance run and records,
// per unit, when it was created, admitted and finished; it keeps its own
// ledger of what each quota's units hold, from the admissions it sees on the
// API server and the quotas' max as the scenario defines them (not from
// koord-queue's memory), so it sees any moment a quota is over its max.
// Summaries and bounds are computed from that record.
//
// The Recorder is plain code over observations (a unit's state at a time),
// so it is tested without an API server; Watch feeds it from a reflector.
package checker

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

// LabelClass on a generated unit names its class.
const LabelClass = "perf.koord-queue.io/class"

// RootQuota is the ledger's name for the cluster's capacity.
const RootQuota = elasticquotav1alpha1.RootQuotaName

// overAdmissionExamplesKept bounds the examples a result lists.
const overAdmissionExamplesKept = 20

// sampleEvery is the plot's resolution.
const sampleEvery = 100 * time.Millisecond

// Recorder is the checker's record of a run, safe for concurrent use.
type Recorder struct {
	mu       sync.Mutex
	start    time.Time
	expected int
	units    map[string]*unitState
	quotas   map[string]*quotaState

	created, holding, finished, firstAdmitted int
	admissions, evictions                     int
	firstCreated, lastFinished                time.Duration
	firstAdmission, lastAdmission             time.Duration
	// pendingSince and backlogTime: while any unit waits.
	pending      int
	pendingSince time.Duration
	backlogTime  time.Duration
	// admissionsInBacklog counts admissions made while units waited.
	admissionsInBacklog int

	overAdmissions int
	examples       []OverAdmission
	samples        []Sample
	lastSample     time.Duration

	done    chan struct{}
	waiters []admissionWaiter
	// admittedAt are every admission's times, in the order seen.
	admittedAt []time.Duration
	// evictionLog is every eviction, in the order seen.
	evictionLog []Eviction
}

// Eviction is one eviction as its unit's status said it: the reason and
// message of its Evicted condition (empty when it had none), to tell a
// preemption from a deadline or a deactivation after a run.
type Eviction struct {
	At              time.Duration
	Unit            string
	Reason, Message string
}

type unitState struct {
	class, quota           string
	created, firstAdmitted time.Duration
	finishedAt             time.Duration
	admitted, finished     bool
	holding                bool
	held                   int64 // milli-cpu
	admissions, evictions  int
	// attempts is the unit's status.attempts when last admitted: it grows
	// with every admission written, even over one still held.
	attempts int64
}

type quotaState struct {
	name, parent string
	max, nominal int64 // milli-cpu
	leaf         bool
	used, peak   int64
	// pending units of a leaf quota: created, not holding, not finished.
	pending int
	last    time.Duration
	// usedIntegral and backlogIntegral in milli-cpu seconds; backlogTime
	// in seconds while the quota had pending units.
	usedIntegral, backlogIntegral, backlogTime float64
}

type admissionWaiter struct {
	n  int
	ch chan struct{}
}

// OverAdmission is a moment a quota's units held more than its max.
type OverAdmission struct {
	AtSeconds float64 `json:"atSeconds"`
	Quota     string  `json:"quota"`
	// UsedMilli and MaxMilli are milli-cpu.
	UsedMilli int64  `json:"usedMilliCPU"`
	MaxMilli  int64  `json:"maxMilliCPU"`
	Unit      string `json:"unit"`
}

// Sample is, at a time, how many units waited, had been admitted (at
// least once), held quota, and had finished.
type Sample struct {
	AtSeconds float64 `json:"t"`
	Pending   int     `json:"pending"`
	Admitted  int     `json:"admitted"`
	Holding   int     `json:"holding"`
	Finished  int     `json:"finished"`
}

// NewRecorder records a run of s whose clock starts at start (koord-queue's
// start); Done is closed when expected units have finished.
func NewRecorder(s *scenario.Scenario, start time.Time, expected int) *Recorder {
	r := &Recorder{
		start:    start,
		expected: expected,
		units:    map[string]*unitState{},
		quotas:   map[string]*quotaState{},
		done:     make(chan struct{}),
	}
	r.quotas[RootQuota] = &quotaState{name: RootQuota, max: s.ClusterCPU * 1000, nominal: s.ClusterCPU * 1000}
	for _, q := range s.Quotas {
		parent := q.Parent
		if parent == "" {
			parent = RootQuota
		}
		r.quotas[q.Name] = &quotaState{name: q.Name, parent: parent, max: q.Max * 1000, nominal: q.Nominal() * 1000, leaf: !s.IsParent(q.Name)}
	}
	return r
}

// Done is closed when every expected unit has finished.
func (r *Recorder) Done() <-chan struct{} { return r.done }

// WhenAdmitted is closed once n units have been admitted at least once.
func (r *Recorder) WhenAdmitted(n int) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan struct{})
	if r.firstAdmitted >= n {
		close(ch)
		return ch
	}
	r.waiters = append(r.waiters, admissionWaiter{n: n, ch: ch})
	return ch
}

// Observe records a unit's state as the watch delivered it at now.
func (r *Recorder) Observe(now time.Time, u *schedulingv1alpha1.QueueUnit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := now.Sub(r.start)
	key := u.Namespace + "/" + u.Name
	s := r.units[key]
	if s == nil {
		s = &unitState{class: u.Labels[LabelClass], quota: quotaOf(u), created: t}
		r.units[key] = s
		r.created++
		if r.created == 1 {
			r.firstCreated = t
		}
		r.setPending(t, s, +1)
	}
	if s.finished {
		return // a finished unit stays finished
	}
	holding, held := holdsQuota(u)
	switch {
	case queueunit.Finished(u.EffectivePhase()):
		if s.holding {
			r.release(t, s, key)
		} else {
			r.setPending(t, s, -1)
		}
		s.finished, s.finishedAt = true, t
		r.finished++
		r.lastFinished = t
		if r.finished == r.expected {
			close(r.done)
		}
	case holding && !s.holding:
		r.setPending(t, s, -1)
		r.charge(t, s, held, key)
		s.holding, s.held, s.attempts = true, held, u.Status.Attempts
		r.admitted(t, s)
		r.holding++
		if r.pending > 0 {
			r.admissionsInBacklog++
		}
		if r.admissions == 1 {
			r.firstAdmission = t
		}
		r.lastAdmission = t
		if !s.admitted {
			s.admitted, s.firstAdmitted = true, t
			r.firstAdmitted++
			r.wakeWaiters()
		}
	case holding && u.Status.Attempts > s.attempts:
		// Admitted again over its admission (a leader that did not
		// count it), to the same or other resources.
		r.charge(t, s, held-s.held, key)
		s.held, s.attempts = held, u.Status.Attempts
		r.admitted(t, s)
	case holding && held != s.held:
		r.charge(t, s, held-s.held, key)
		s.held = held
	case !holding && s.holding:
		// Evicted: back in its queue.
		r.release(t, s, key)
		s.evictions++
		r.evictions++
		e := Eviction{At: t, Unit: key}
		if c := meta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitEvicted); c != nil {
			e.Reason, e.Message = c.Reason, c.Message
		}
		r.evictionLog = append(r.evictionLog, e)
		r.setPending(t, s, +1)
	}
	r.sample(t)
}

// admitted counts an admission of the unit at t.
func (r *Recorder) admitted(t time.Duration, s *unitState) {
	s.admissions++
	r.admissions++
	r.admittedAt = append(r.admittedAt, t)
}

// FirstAdmissionAfter is the first admission seen after t; false if none.
func (r *Recorder) FirstAdmissionAfter(t time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	after := t.Sub(r.start)
	var first time.Duration
	found := false
	for _, at := range r.admittedAt {
		if at > after && (!found || at < first) {
			first, found = at, true
		}
	}
	return r.start.Add(first), found
}

// Counts are how many units were seen created, admitted at least once,
// and finished, and how many admissions were seen.
func (r *Recorder) Counts() (created, firstAdmitted, finished, admissions int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.created, r.firstAdmitted, r.finished, r.admissions
}

// Delete records that a unit is gone: what it held is released.
func (r *Recorder) Delete(now time.Time, namespace, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := now.Sub(r.start)
	s := r.units[namespace+"/"+name]
	if s == nil || s.finished {
		return
	}
	if s.holding {
		r.release(t, s, namespace+"/"+name)
	} else {
		r.setPending(t, s, -1)
	}
	s.finished = true // gone: no longer waited for
	r.sample(t)
}

// release gives back what a holding unit held.
func (r *Recorder) release(t time.Duration, s *unitState, key string) {
	r.charge(t, s, -s.held, key)
	s.holding, s.held = false, 0
	r.holding--
}

// setPending moves the pending counts of the unit's quota and the run,
// accumulating the time units waited.
func (r *Recorder) setPending(t time.Duration, s *unitState, delta int) {
	if q := r.quotas[s.quota]; q != nil {
		q.advance(t)
		q.pending += delta
	}
	if r.pending > 0 {
		r.backlogTime += t - r.pendingSince
	}
	r.pendingSince = t
	r.pending += delta
}

// charge adds delta milli-cpu to the unit's quota and every ancestor, and
// records an over-admission wherever that passes a max.
func (r *Recorder) charge(t time.Duration, s *unitState, delta int64, key string) {
	for name := s.quota; name != ""; {
		q := r.quotas[name]
		if q == nil {
			return // a quota the scenario does not define: not ours
		}
		q.advance(t)
		q.used += delta
		q.peak = max(q.peak, q.used)
		if delta > 0 && q.used > q.max {
			r.overAdmissions++
			if len(r.examples) < overAdmissionExamplesKept {
				r.examples = append(r.examples, OverAdmission{AtSeconds: t.Seconds(), Quota: name, UsedMilli: q.used, MaxMilli: q.max, Unit: key})
			}
		}
		name = q.parent
	}
}

// advance accumulates the quota's usage up to t.
func (q *quotaState) advance(t time.Duration) {
	dt := (t - q.last).Seconds()
	if dt > 0 {
		q.usedIntegral += float64(q.used) * dt
		if q.pending > 0 {
			q.backlogIntegral += float64(q.used) * dt
			q.backlogTime += dt
		}
	}
	q.last = max(q.last, t)
}

func (r *Recorder) wakeWaiters() {
	kept := r.waiters[:0]
	for _, w := range r.waiters {
		if r.firstAdmitted >= w.n {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	r.waiters = kept
}

func (r *Recorder) sample(t time.Duration) {
	if len(r.samples) > 0 && t-r.lastSample < sampleEvery {
		return
	}
	r.lastSample = t
	r.samples = append(r.samples, r.sampleAt(t))
}

func (r *Recorder) sampleAt(t time.Duration) Sample {
	return Sample{AtSeconds: t.Seconds(), Pending: r.pending, Admitted: r.firstAdmitted, Holding: r.holding, Finished: r.finished}
}

// quotaOf is the quota the unit names: the generator labels every unit.
func quotaOf(u *schedulingv1alpha1.QueueUnit) string {
	return u.Labels[elasticquotav1alpha1.LabelQuotaName]
}

// holdsQuota reads a unit as both binaries do (queueunit.HoldsQuota), and
// what it holds: what its admissions say (its request when none is listed).
func holdsQuota(u *schedulingv1alpha1.QueueUnit) (bool, int64) {
	if !queueunit.HoldsQuota(u) {
		return false, 0
	}
	if len(u.Status.Admissions) == 0 {
		request := queueunit.Request(u)
		return true, request.Cpu().MilliValue()
	}
	var held int64
	for _, a := range u.Status.Admissions {
		if q, ok := a.Resources[corev1.ResourceCPU]; ok {
			held += q.MilliValue()
		}
	}
	return true, held
}

// String is a one-line progress report.
func (r *Recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("%d/%d created, %d waiting, %d holding quota, %d finished, %d over-admissions", r.created, r.expected, r.pending, r.holding, r.finished, r.overAdmissions)
}

// Evictions is every eviction seen, in the order seen.
func (r *Recorder) Evictions() []Eviction {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evictionLog)
}

// WriteEvictionsCSV writes one line per eviction, in the order seen: when
// (seconds from the start), the unit, and its Evicted condition's reason
// and message.
func (r *Recorder) WriteEvictionsCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"at", "unit", "reason", "message"})
	for _, e := range r.Evictions() {
		_ = cw.Write([]string{strconv.FormatFloat(e.At.Seconds(), 'f', 3, 64), e.Unit, e.Reason, e.Message})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing evictions: %w", err)
	}
	return nil
}

// WriteUnitsCSV writes one line per unit: its class and quota, when it was
// created, first admitted and finished (seconds since the start, empty if
// never), and how many times it was admitted and evicted.
func (r *Recorder) WriteUnitsCSV(w io.Writer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.units))
	for k := range r.units {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"unit", "class", "quota", "created", "admitted", "finished", "admissions", "evictions"})
	at := func(ok bool, d time.Duration) string {
		if !ok {
			return ""
		}
		return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	}
	for _, k := range keys {
		u := r.units[k]
		_ = cw.Write([]string{k, u.class, u.quota, at(true, u.created), at(u.admitted, u.firstAdmitted), at(u.finished, u.finishedAt),
			strconv.Itoa(u.admissions), strconv.Itoa(u.evictions)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing units: %w", err)
	}
	return nil
}

// UnitTimes is when the checker saw a unit created and first admitted.
type UnitTimes struct {
	Created time.Time
	// Admitted is zero for a unit never admitted.
	Admitted time.Time
}

// Times are every unit's creation and first admission as seen, by
// namespace/name.
func (r *Recorder) Times() map[string]UnitTimes {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]UnitTimes, len(r.units))
	for key, u := range r.units {
		t := UnitTimes{Created: r.start.Add(u.created)}
		if u.admitted {
			t.Admitted = r.start.Add(u.firstAdmitted)
		}
		out[key] = t
	}
	return out
}

// Start is when the run's clock started (koord-queue's start).
func (r *Recorder) Start() time.Time { return r.start }
