package queue

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/pkg/patch"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// AnnotationQueueItemsRefreshInterval on a Queue (or its ElasticQuota) sets
// how often its status (queueItemDetails, counts, tree and usage) is
// rewritten at most (a duration, default 15s); four times that while
// admissions wait for their write. Queues take turns within 5 status writes
// a second (1 while admissions wait), so with hundreds of queues each is
// rewritten less often.
const AnnotationQueueItemsRefreshInterval = "koord-queue/queue-items-refresh-interval"

// Queue condition types and reasons.
const (
	QueueConditionReady = "Ready"
	ReasonQueueReady    = "Ready"
	// ReasonQuotaInvalid is the Ready condition's reason on a Queue whose
	// ElasticQuota is invalid, and the Warning event's on that quota.
	ReasonQuotaInvalid    = "QuotaInvalid"
	ReasonQuotaNotFound   = "QuotaNotFound"
	ReasonInvalidSettings = "InvalidSettings"
)

// StatusSource is what the status writer reads: the admission Cache
// (admission.Cache) gives it, on every replica.
type StatusSource interface {
	// HasSynced: the informers feeding the source have delivered their
	// initial objects.
	HasSynced() bool
	// QueueStates are every queue's object, counts and readiness.
	QueueStates() []admission.QueueState
	// QueueState is one queue's.
	QueueState(name string) (admission.QueueState, bool)
	// Queue is one queue as the visibility API shows it (its quota's
	// figures included).
	Queue(name string) (api.QueueView, bool)
	// PendingItems are the first n waiting units of a queue, in order.
	PendingItems(queue string, n int) []schedulingv1alpha1.QueueItemDetail
	// Quotas are the quotas as the visibility API shows them.
	Quotas() []api.QuotaView
	// QuotaObject is the ElasticQuota used under a name, or nil.
	QuotaObject(name string) *elasticquotav1alpha1.ElasticQuota
	// DuplicateQuotas are the ElasticQuotas not used because an older one
	// has their name.
	DuplicateQuotas() []*elasticquotav1alpha1.ElasticQuota
	// WritingAdmissions: admissions decided wait for their write.
	WritingAdmissions() bool
}

// busyIntervals stretches a queue's refresh interval when admissions waited
// for their write within it: each status write is one admission fewer that
// second, and in a backlog every queue's counts change at every interval
// (at 15 s, 35 queues took 0.05 writes per admission from Kueue's
// baseline). The visibility API and the metrics stay current meanwhile.
const busyIntervals = 4

var _ StatusSource = (*admission.Cache)(nil)

// StatusOptions tune the queue status writer.
type StatusOptions struct {
	// RefreshInterval is the default time between two status writes of one
	// queue (default 15s).
	RefreshInterval time.Duration
	// TopN is how many pending units status.queueItemDetails lists (default 20).
	TopN int
}

// StatusWriter keeps each Queue's status (pending units in order, counts,
// conditions) and the metrics of queues and quotas current, on the leader,
// at a bounded rate, and raises a Warning event on an ElasticQuota when it
// becomes invalid, and once on each ElasticQuota not used because an older
// one in another namespace has its name.
type StatusWriter struct {
	client    client.Client
	apiReader client.Reader
	recorder  record.EventRecorder
	cache     StatusSource
	clock     clock.WithTicker
	opts      StatusOptions

	lastWrite map[string]time.Time
	// lastReadiness is each queue's Ready condition as last written or
	// found current, by queue.
	lastReadiness map[string]readiness
	lastQuotaErrs map[string]string
	// lastBusy is the last tick at which admissions waited for their
	// write: in a backlog they do at some ticks, not at all.
	lastBusy time.Time
	// lastQuotaReport is the last tick reportQuotas ran at.
	lastQuotaReport time.Time
	// warnedDuplicates are the duplicate ElasticQuotas (by UID) already
	// given their Warning event.
	warnedDuplicates map[types.UID]bool
}

var _ manager.LeaderElectionRunnable = (*StatusWriter)(nil)

// NewStatusWriter returns a StatusWriter writing with c (reading back with
// apiReader when a write conflicts) what source gives, on clk's ticks; add
// it to the manager.
func NewStatusWriter(c client.Client, apiReader client.Reader, recorder record.EventRecorder, source StatusSource, clk clock.WithTicker, opts StatusOptions) *StatusWriter {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &StatusWriter{client: c, apiReader: apiReader, recorder: recorder, cache: source, clock: clk, opts: opts}
}

// NeedLeaderElection: only the leader writes queue status.
func (s *StatusWriter) NeedLeaderElection() bool { return true }

// Start refreshes queue statuses until ctx ends.
func (s *StatusWriter) Start(ctx context.Context) error {
	if s.opts.RefreshInterval <= 0 {
		s.opts.RefreshInterval = 15 * time.Second
	}
	if s.opts.TopN <= 0 {
		s.opts.TopN = 20
	}
	s.lastWrite, s.lastQuotaErrs, s.warnedDuplicates = map[string]time.Time{}, map[string]string{}, map[types.UID]bool{}
	log := logr.FromContextOrDiscard(ctx).WithName("queue-status")
	if !toolscache.WaitForCacheSync(ctx.Done(), s.cache.HasSynced) {
		return nil // ctx ended first
	}
	// Status is a report for people, not a decision input: a one-second
	// tick bounds its cost whatever the event rate.
	ticker := s.clock.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		s.refresh(ctx, log)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

func (s *StatusWriter) refresh(ctx context.Context, log logr.Logger) {
	now := s.clock.Now()
	if s.cache.WritingAdmissions() {
		s.lastBusy = now
	}
	if now.Sub(s.lastQuotaReport) >= quotaReportInterval {
		s.lastQuotaReport = now
		s.reportQuotas()
	}
	if s.lastReadiness == nil {
		s.lastReadiness = map[string]readiness{}
	}
	var due []dueQueue
	for _, st := range s.cache.QueueStates() {
		q := st.Queue
		interval := s.opts.RefreshInterval
		if v, ok := q.Annotations[AnnotationQueueItemsRefreshInterval]; ok {
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				interval = d
			}
		}
		if !s.lastBusy.IsZero() && now.Sub(s.lastBusy) < interval {
			interval *= busyIntervals // admissions waited within the interval
		}
		changed := s.readinessChanged(q, readyCondition(q.Name, st, metav1.NewTime(now)))
		last, written := s.lastWrite[q.Name]
		if written && now.Sub(last) < interval && !changed {
			continue
		}
		due = append(due, dueQueue{queue: q, last: last, readinessChanged: changed})
	}
	budget := statusWritesPerTick
	if !s.lastBusy.IsZero() && now.Sub(s.lastBusy) < s.opts.RefreshInterval {
		budget = busyStatusWritesPerTick
	}
	slices.SortFunc(due, compareDue)
	for _, d := range due {
		if budget <= 0 && !d.readinessChanged {
			break // the rest stay due, the longest unwritten first next tick
		}
		q := d.queue
		s.lastWrite[q.Name] = now
		// Locked: the status keeps conditions others may set, so a write
		// based on a stale copy must not drop theirs.
		var desired schedulingv1alpha1.QueueStatus
		wrote, err := patch.Patch(ctx, s.client, s.apiReader, q.DeepCopy(), patch.Status, admission.FieldOwner, func(cur *schedulingv1alpha1.Queue) bool {
			desired = s.desiredStatus(cur, metav1.NewTime(now))
			// Semantic: amounts equal in value, written another way, are equal.
			if equality.Semantic.DeepEqual(stripTimes(cur.Status), stripTimes(desired)) {
				return false
			}
			cur.Status = desired
			return true
		})
		if wrote {
			budget--
		}
		// Also when the write failed: a readiness change makes a queue due
		// at once only once; a failing write is retried at its interval,
		// not every tick.
		if len(desired.Conditions) > 0 {
			s.lastReadiness[q.Name] = readinessOf(desired.Conditions)
		}
		if client.IgnoreNotFound(err) != nil {
			log.Error(err, "Writing queue status", "queue", q.Name)
		}
	}
}

// statusWritesPerTick bounds the Queue status writes of a tick (a second),
// busyStatusWritesPerTick while admissions waited for their write within
// the default refresh interval: the status is a report, and with a
// thousand queues each rewritten every interval it cost more writes than
// the admissions themselves (1.6 a Job at 1,000 queues and 15,000 Jobs).
// Due queues take turns, the longest unwritten first; one whose Ready
// condition's status or reason changed is due at once, and goes first,
// over the bound.
const (
	statusWritesPerTick     = 5
	busyStatusWritesPerTick = 1
)

// quotaReportInterval is how often the quota metrics are brought up to
// date and an invalid ElasticQuota looked for: each report builds a view of
// every quota, which at a thousand quotas every second was a third of the
// writer's time, for gauges scraped every 15 s or more.
const quotaReportInterval = 5 * time.Second

// dueQueue is a queue whose refresh interval has passed, or whose
// readiness changed.
type dueQueue struct {
	queue *schedulingv1alpha1.Queue
	// last is its last write (zero: never written).
	last time.Time
	// readinessChanged: its Ready condition's status or reason is not what
	// the status would say.
	readinessChanged bool
}

// compareDue orders due queues: a changed readiness first, then the
// longest unwritten, then by name.
func compareDue(a, b dueQueue) int {
	if a.readinessChanged != b.readinessChanged {
		if a.readinessChanged {
			return -1
		}
		return 1
	}
	if c := a.last.Compare(b.last); c != 0 {
		return c
	}
	return strings.Compare(a.queue.Name, b.queue.Name)
}

// readiness is a Ready condition's status and reason.
type readiness struct {
	status metav1.ConditionStatus
	reason string
}

// readinessOf is the Ready condition's readiness in conds; zero without one.
func readinessOf(conds []metav1.Condition) readiness {
	if c := meta.FindStatusCondition(conds, QueueConditionReady); c != nil {
		return readiness{c.Status, c.Reason}
	}
	return readiness{}
}

// readinessChanged says whether want's status or reason differs from the
// queue's: the last the writer wrote or found there, which the cached
// queue may not show yet; before either, the cached queue's.
func (s *StatusWriter) readinessChanged(q *schedulingv1alpha1.Queue, want metav1.Condition) bool {
	cur, ok := s.lastReadiness[q.Name]
	if !ok {
		cur = readinessOf(q.Status.Conditions)
	}
	return cur != readiness{want.Status, want.Reason}
}

func (s *StatusWriter) desiredStatus(q *schedulingv1alpha1.Queue, now metav1.Time) schedulingv1alpha1.QueueStatus {
	state, _ := s.cache.QueueState(q.Name)
	view, _ := s.cache.Queue(q.Name)
	st := schedulingv1alpha1.QueueStatus{
		Pending:    int32(state.Pending),
		Admitted:   int32(state.Admitted),
		Conditions: append([]metav1.Condition(nil), q.Status.Conditions...),
	}
	for _, p := range s.cache.PendingItems(q.Name, s.opts.TopN) {
		if st.QueueItemDetails == nil {
			st.QueueItemDetails = map[string][]schedulingv1alpha1.QueueItemDetail{}
		}
		st.QueueItemDetails[schedulingv1alpha1.QueueItemDetailsActive] = append(st.QueueItemDetails[schedulingv1alpha1.QueueItemDetailsActive], p)
	}
	if view.Quota != nil {
		st.Used = view.Quota.Used
	}
	if t := view.QuotaTree; t != nil {
		st.Tree, st.TreeRoot = t.Pool, t.Root
		// The tree's figures change with every admission in it: on every
		// queue of the tree they would cost each queue a write per refresh
		// interval (a thousand queues, 67 writes a second at 15 s) whenever
		// anything in the tree moved. Only the root's queue carries them.
		if q.Name == t.Root {
			st.TreeCapacity, st.TreeUsed, st.TreeUnqueued = t.Capacity, t.Used, t.Unqueued
			st.TreeUsage = usage(t.Used, t.Capacity)
		}
	}
	meta.SetStatusCondition(&st.Conditions, readyCondition(q.Name, state, now))
	return st
}

// readyCondition is the Ready condition of the queue named name, as st
// (the zero state when the cache has none) shows it.
func readyCondition(name string, st admission.QueueState, now metav1.Time) metav1.Condition {
	cond := metav1.Condition{Type: QueueConditionReady, Status: metav1.ConditionTrue, Reason: ReasonQueueReady,
		Message: fmt.Sprintf("%s policy; %d pending, %d admitted", st.Policy, st.Pending, st.Admitted), LastTransitionTime: now}
	switch {
	case !st.HasQuota:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonQuotaNotFound
		cond.Message = fmt.Sprintf("no ElasticQuota named %s: its units wait until one exists", name)
	case st.QuotaError != "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonQuotaInvalid, st.QuotaError
	case st.ConfigError != "":
		cond.Reason, cond.Message = ReasonInvalidSettings, st.ConfigError
	}
	return cond
}

// usage sums up used against capacity, each resource of capacity by name:
// "cpu 12/40, nvidia.com/gpu 3/8".
func usage(used, capacity corev1.ResourceList) string {
	parts := make([]string, 0, len(capacity))
	for _, name := range slices.Sorted(maps.Keys(capacity)) {
		u, c := used[name], capacity[name]
		parts = append(parts, fmt.Sprintf("%s %s/%s", name, u.String(), c.String()))
	}
	return strings.Join(parts, ", ")
}

// stripTimes hides condition times, so a status that only aged is not rewritten.
func stripTimes(st schedulingv1alpha1.QueueStatus) schedulingv1alpha1.QueueStatus {
	st = *st.DeepCopy()
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = metav1.Time{}
		st.Conditions[i].ObservedGeneration = 0
	}
	return st
}

// reportQuotas updates the quota metrics and raises a Warning event on an
// ElasticQuota whose error changed, and once on each ElasticQuota not used
// because an older one in another namespace has its name.
func (s *StatusWriter) reportQuotas() {
	for _, dup := range s.cache.DuplicateQuotas() {
		if s.warnedDuplicates[dup.UID] {
			continue
		}
		s.warnedDuplicates[dup.UID] = true
		used := s.cache.QuotaObject(dup.Name)
		usedAt := "another namespace"
		if used != nil {
			usedAt = used.Namespace + "/" + used.Name
		}
		s.recorder.Eventf(dup, corev1.EventTypeWarning, ReasonDuplicateQuotaName,
			"Not used: ElasticQuota names are global in Koordinator and %s, older, has this name; rename or delete this one", usedAt)
	}
	for _, q := range s.cache.Quotas() {
		for kind, list := range map[string]corev1.ResourceList{metrics.KindMin: q.Min, metrics.KindMax: q.Max, metrics.KindUsed: q.Used, metrics.KindRuntime: q.Runtime} {
			for name, amount := range list {
				metrics.QuotaResource.WithLabelValues(q.Name, string(name), kind).Set(amount.AsApproximateFloat64())
			}
		}
		if q.Error != s.lastQuotaErrs[q.Name] {
			s.lastQuotaErrs[q.Name] = q.Error
			if q.Error != "" {
				eq := &elasticquotav1alpha1.ElasticQuota{}
				eq.Name, eq.Namespace = q.Name, q.Namespace
				eq.SetGroupVersionKind(elasticquotav1alpha1.GroupVersion.WithKind("ElasticQuota"))
				if obj := s.cache.QuotaObject(q.Name); obj != nil {
					eq = obj
				}
				s.recorder.Event(eq, corev1.EventTypeWarning, ReasonQuotaInvalid, q.Error+"; its units wait")
			}
		}
	}
}
