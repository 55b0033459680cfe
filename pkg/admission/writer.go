package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/pkg/patch"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// FieldOwner names koord-queue's writes.
const FieldOwner = client.FieldOwner("koord-queue")

type opKind int

const (
	opAdmit opKind = iota
	opEvict
	opChecksPassed
	opChecksFailed
	// Deferred writes, made only when no urgent write waits (owed.go);
	// the loop's tests list them as ops.
	opMessage
	opQueueName
)

// op is a write to make for one unit; what to write is read from the
// unit's record in the Cache when the write is made (decisions.decision).
type op struct {
	kind opKind
	key  string
}

// WriterOptions tune the Writer.
type WriterOptions struct {
	// Workers write admissions and evictions in parallel (default 8); the
	// client's QPS limit is what really bounds them.
	Workers int
	// MessageQPS bounds the writes that only inform (why a unit waits, the
	// admitting queue in spec.queue); they are made only once no admission
	// or eviction has been written for a second (quietAfterUrgent), so a
	// backlog never takes the budget admissions need (default 5).
	MessageQPS float64
	// RequeueBaseDelay and RequeueMaxDelay bound the backoff after an
	// admission check says Retry or Rejected (default 10s and 10m).
	RequeueBaseDelay, RequeueMaxDelay time.Duration
}

// Writer writes the core's decisions through the API: admissions and
// evictions first, explanations of waiting after, at a bounded rate.
type Writer struct {
	client    client.Client
	apiReader client.Reader
	recorder  record.EventRecorder
	// decisions are what the Writer writes, recorded in the Cache
	// (record.go); owed, the writes that only inform, owed there (owed.go);
	// deadlines, its units' execution deadlines (deadlines.go); views, why
	// a unit waits (reasons.go).
	decisions *decisions
	owed      *owedWrites
	deadlines *executionDeadlines
	views     *views
	clock     clock.Clock
	opts      WriterOptions
	log       logr.Logger

	urgent workqueue.TypedRateLimitingInterface[op]
	// Writes that only inform (why a unit waits, spec.queue) are owed in
	// the Cache (owed.go) and made when no admission or eviction waits,
	// so a backlog never spends the API budget that admissions need.
	limiter *rate.Limiter
	// lastUrgent is when the last admission or eviction was written (Unix
	// nanoseconds on clock): deferred writes wait for a quiet moment after.
	lastUrgent atomic.Int64
}

// NewWriter returns a Writer; Run starts it.
func NewWriter(c client.Client, apiReader client.Reader, recorder record.EventRecorder, cache *Cache, clk clock.Clock, opts WriterOptions) *Writer {
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.MessageQPS <= 0 {
		opts.MessageQPS = 5
	}
	if opts.RequeueBaseDelay <= 0 {
		opts.RequeueBaseDelay = 10 * time.Second
	}
	if opts.RequeueMaxDelay <= 0 {
		opts.RequeueMaxDelay = 10 * time.Minute
	}
	return &Writer{
		client: c, apiReader: apiReader, recorder: recorder, clock: clk, opts: opts,
		decisions: &cache.decisions, owed: &cache.owedWrites, deadlines: &cache.executionDeadlines, views: &cache.views,
		urgent: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[op](10*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[op]{Name: "koord_queue_urgent_writes"}),
		limiter: rate.NewLimiter(rate.Limit(opts.MessageQPS), 1),
	}
}

// admissionBudget is how many more admissions the loop may decide now.
// Twice the workers keeps every worker busy while the loop decides the next
// ones; deciding further ahead would only hold quota for admissions that
// wait for the client's rate limit (see Scheduler.CycleLimited). When
// nothing is left, the next admission written wakes the loop.
func (w *Writer) admissionBudget() int {
	return 2*w.opts.Workers - w.decisions.unwrittenAdmissions()
}

// Run writes until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	w.log = logr.FromContextOrDiscard(ctx).WithName("writer")
	var wg sync.WaitGroup
	for range w.opts.Workers {
		wg.Go(func() {
			for w.processUrgent(ctx) {
			}
		})
	}
	wg.Go(func() {
		for w.processDeferred(ctx) {
		}
	})
	<-ctx.Done()
	w.urgent.ShutDown()
	wg.Wait()
}

func (w *Writer) admit(key string)        { w.urgent.Add(op{kind: opAdmit, key: key}) }
func (w *Writer) evict(key string)        { w.urgent.Add(op{kind: opEvict, key: key}) }
func (w *Writer) checksPassed(key string) { w.urgent.Add(op{kind: opChecksPassed, key: key}) }
func (w *Writer) checksFailed(key string) { w.urgent.Add(op{kind: opChecksFailed, key: key}) }

// explain writes, once admissions pause, why the units of keys wait.
func (w *Writer) explain(keys ...string) { w.owed.owe(owesMessage, w.clock.Now(), keys...) }

// pinQueue records in spec.queue the queue each unit of keys holding quota
// is charged in, when the write after its admission did not
// (writeQueueName).
func (w *Writer) pinQueue(keys ...string) { w.owed.owe(owesQueueName, w.clock.Now(), keys...) }

func (w *Writer) processUrgent(ctx context.Context) bool {
	o, shutdown := w.urgent.Get()
	if shutdown {
		return false
	}
	defer w.urgent.Done(o)
	var err error
	switch o.kind {
	case opAdmit:
		err = w.writeAdmission(ctx, o.key)
	case opEvict:
		err = w.writeEviction(ctx, o.key)
	case opChecksPassed, opChecksFailed:
		err = w.writeChecksVerdict(ctx, o.key)
	}
	if err != nil {
		if errors.Is(err, errAdmissionNotWritten) {
			w.log.V(2).Info("An eviction waits for the unit's admission to be written", "queueUnit", o.key)
		} else {
			w.log.Error(err, "Writing QueueUnit status", "queueUnit", o.key)
		}
		w.urgent.AddRateLimited(o)
		return true
	}
	w.urgent.Forget(o)
	w.lastUrgent.Store(w.clock.Now().UnixNano())
	return true
}

// writeAdmission writes the unit's admission as the core decided it. The
// write is based on the unit as decided, so the optimistic lock refuses it
// if the unit changed since; on the fresh copy it is written only if the
// unit may still be admitted as decided (queueunit.Admissible): not
// deactivated, deleted, finished, resized or moved meanwhile.
func (w *Writer) writeAdmission(ctx context.Context, key string) error {
	d, ok := w.decisions.sendAdmission(key)
	if !ok || d.admission == nil {
		return nil // deleted meanwhile, or the admission was already written
	}
	a := d.admission
	if d.checksErr != nil {
		w.recorder.Event(d.unit, corev1.EventTypeWarning, queueunit.EventAdmissionCheck, d.checksErr.Error())
	}
	now := metav1.NewTime(w.clock.Now())
	u := a.unit.DeepCopy()
	changed, err := patch.Patch(ctx, w.client, w.apiReader, u, patch.Status, FieldOwner, func(cur *schedulingv1alpha1.QueueUnit) bool {
		if !queueunit.Admissible(cur, a.queue, a.request, a.partial) {
			return false
		}
		if a.partial != nil && !equality.Semantic.DeepEqual(queueunit.HeldWith(cur, a.partial), a.charged) {
			return false // its pod sets changed: the counts decided charge something else now
		}
		queueunit.Admit(cur, a.queue, a.request, a.partial, d.checks.Names, now)
		cur.Status.QuotaTree = a.tree
		cur.Status.TopologyAssignments = a.topology
		return true
	})
	if err != nil {
		return w.settleFailedAdmission(key, a, err)
	}
	if !changed {
		if queueunit.HoldsQuota(u) {
			w.decisions.admissionWritten(key, a) // an earlier attempt landed
		} else {
			w.decisions.forget(key, a) // finished, deleted, deactivated or resized meanwhile
		}
		return nil
	}
	w.decisions.admissionWritten(key, a)
	metrics.AdmissionAttempts.WithLabelValues(metrics.ResultAdmitted).Inc()
	metrics.AdmissionWaitTime.WithLabelValues(a.queue).Observe(now.Sub(u.CreationTimestamp.Time).Seconds())
	if a.partial != nil {
		// A Normal event is a write: only a partial admission gets one, as
		// its job's Started event; the unit's status says any admission
		// (phase, the Admitted condition and message, lastAllocateTime).
		w.recorder.Event(u, corev1.EventTypeNormal, queueunit.EventScheduled, capitalise(queueunit.AdmittedMessage(u, a.queue, a.partial)))
	}
	if u.Spec.Queue != a.queue {
		if d.named {
			w.pinQueue(key)
		} else {
			// Charged by a fallback (its namespace's quota, say): spec.queue
			// pins it, so that a quota change cannot move what it holds.
			w.patchQueueName(ctx, key, u, a.queue)
		}
	}
	return nil
}

// capitalise starts msg with a capital letter, as events do.
func capitalise(msg string) string {
	if msg == "" {
		return msg
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}

// writeQueueName records the admitting queue in spec.queue, as Koord-Queue
// does, for a unit whose label already names its quota, or one charged by a
// fallback whose pin after its admission did not land (pinQueue). It is a
// second write of the unit's main resource, so it waits for the admissions
// of a backlog: the status already says where the unit is.
func (w *Writer) writeQueueName(ctx context.Context, key string) {
	d, ok := w.decisions.decision(key)
	if !ok || d.queue == "" || d.unit.Spec.Queue == d.queue || !(queueunit.HoldsQuota(d.unit) || d.assumed) {
		return
	}
	if err := w.limiter.Wait(ctx); err != nil {
		return
	}
	w.patchQueueName(ctx, key, d.unit.DeepCopy(), d.queue)
}

func (w *Writer) patchQueueName(ctx context.Context, key string, u *schedulingv1alpha1.QueueUnit, queue string) {
	_, err := patch.Patch(ctx, w.client, w.apiReader, u, patch.Main, FieldOwner, func(cur *schedulingv1alpha1.QueueUnit) bool {
		if cur.Spec.Queue == queue || queueunit.Finished(cur.EffectivePhase()) {
			return false // a finished unit holds nothing a quota change could move
		}
		cur.Spec.Queue = queue
		return true
	})
	if client.IgnoreNotFound(err) != nil {
		w.log.Error(err, "Recording the admitting queue in spec.queue", "queueUnit", key)
	}
}

// settleFailedAdmission: the write failed. A write that may have landed
// (patch.ErrOutcomeUnknown) keeps its reservation and is tried again,
// so the same quota is never handed out twice; any other failure was a
// refusal, so the admission is forgotten and the unit decided again.
func (w *Writer) settleFailedAdmission(key string, a *admission, err error) error {
	metrics.AdmissionAttempts.WithLabelValues(metrics.ResultError).Inc()
	if errors.Is(err, patch.ErrOutcomeUnknown) {
		return fmt.Errorf("admitting %s: %w", key, err)
	}
	w.decisions.forget(key, a)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("admitting %s: %w", key, err)
}

// writeEviction sends an admitted unit back to its queue.
func (w *Writer) writeEviction(ctx context.Context, key string) error {
	d, ok := w.decisions.decision(key)
	if !ok || d.eviction == nil {
		return nil
	}
	e := d.eviction
	u := d.unit.DeepCopy()
	if d.assumed && !queueunit.HoldsQuota(u) {
		// Admitted by the core, the admission not seen back yet: the cache's
		// copy is older than it, so decide on the API server's.
		if err := w.apiReader.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			if apierrors.IsNotFound(err) {
				w.decisions.evictionWritten(key, e)
				return nil
			}
			return fmt.Errorf("reading %s to evict it: %w", key, err)
		}
		if !queueunit.HoldsQuota(u) {
			if d.admission == nil {
				// Written, and given back since (finished, or evicted and
				// its pods gone): nothing left to evict.
				w.decisions.evictionWritten(key, e)
				return nil
			}
			// Its admission is yet to be written: retried until it is (then
			// evicted) or until it is forgotten (then nothing to evict).
			return fmt.Errorf("evicting %s: %w", key, errAdmissionNotWritten)
		}
	}
	now := metav1.NewTime(w.clock.Now())
	if e.deactivate {
		if done, err := w.deactivate(ctx, key, e, u, now.Time); done || err != nil {
			return err
		}
	}
	changed, err := patch.Patch(ctx, w.client, w.apiReader, u, patch.Status, FieldOwner, func(cur *schedulingv1alpha1.QueueUnit) bool {
		return queueunit.Evict(cur, e.reason, e.message, now)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("evicting %s: %w", key, err)
	}
	w.decisions.evictionWritten(key, e)
	if changed {
		metrics.Evictions.WithLabelValues(e.reason).Inc()
		if e.reason == schedulingv1alpha1.EvictedByMaximumExecutionTimeExceeded {
			w.recorder.Event(u, corev1.EventTypeWarning, queueunit.EventMaximumExecutionTimeExceeded, capitalise(e.message))
		} else {
			w.recorder.Event(u, corev1.EventTypeNormal, queueunit.EventPreempted, e.message)
		}
	}
	return nil
}

// deactivate sets spec.active to false on a unit past its maximum execution
// time, before its eviction is written: evicted first, it would be queued
// again should the second write fail. It is decided again on the unit as
// read: a unit no longer past its deadline (its limit raised or removed,
// say) keeps running, and done reports that nothing is left to write. A
// unit deactivated already (an earlier attempt) is evicted all the same.
func (w *Writer) deactivate(ctx context.Context, key string, e *eviction, u *schedulingv1alpha1.QueueUnit, now time.Time) (done bool, err error) {
	stillDue := true
	_, err = patch.Patch(ctx, w.client, w.apiReader, u, patch.Main, FieldOwner, func(cur *schedulingv1alpha1.QueueUnit) bool {
		if !cur.IsActive() {
			return false
		}
		deadline, ok := queueunit.ExecutionDeadline(cur)
		if stillDue = ok && !now.Before(deadline); !stillDue {
			return false
		}
		cur.Spec.Active = ptr.To(false)
		return true
	})
	switch {
	case apierrors.IsNotFound(err):
		w.decisions.evictionWritten(key, e)
		return true, nil
	case err != nil:
		return true, fmt.Errorf("deactivating %s past its maximum execution time: %w", key, err)
	case !stillDue:
		w.deadlines.keepRunning(key, e, now)
		return true, nil
	}
	return false, nil
}

// errAdmissionNotWritten: a unit to evict was admitted, and its admission
// is still to be written.
var errAdmissionNotWritten = errors.New("its admission is not written yet")

// writeChecksVerdict releases a Reserved unit whose admission checks all
// passed, or sends it back when one failed.
func (w *Writer) writeChecksVerdict(ctx context.Context, key string) error {
	d, ok := w.decisions.decision(key)
	if !ok {
		return nil
	}
	now := metav1.NewTime(w.clock.Now())
	backoff := queueunit.Backoff{Base: w.opts.RequeueBaseDelay, Max: w.opts.RequeueMaxDelay}
	var event, eventType string
	u := d.unit.DeepCopy()
	changed, err := patch.Patch(ctx, w.client, w.apiReader, u, patch.Status, FieldOwner, func(cur *schedulingv1alpha1.QueueUnit) bool {
		ready, failed := queueunit.ChecksVerdict(cur, d.checks)
		switch {
		case ready:
			queueunit.PassChecks(cur, d.checks, d.queue, now)
			event, eventType = cur.Status.Message, corev1.EventTypeNormal
		case failed != nil:
			queueunit.FailChecks(cur, failed, backoff, now)
			event, eventType = cur.Status.Message, corev1.EventTypeWarning
		default:
			return false
		}
		return true
	})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("writing admission checks verdict of %s: %w", key, err)
	}
	if changed {
		w.recorder.Event(u, eventType, queueunit.EventAdmissionCheck, event)
	}
	return nil
}

// processDeferred makes the writes one unit is owed once none is urgent:
// the latest of each is read when it is made, so a unit whose reason to
// wait changes quickly is written once. It is false once ctx ends.
func (w *Writer) processDeferred(ctx context.Context) bool {
	for !w.owed.owesWrites() {
		select {
		case <-ctx.Done():
			return false // shutting down
		case <-w.owed.owedWake():
		}
	}
	// Admissions and evictions first: hold the writes until none waits.
	// (Re-adding every deferred write each time was half of koord-queue's
	// CPU with 15,000 units waiting.)
	for !w.quiet() {
		select {
		case <-ctx.Done():
			return false
		case <-w.clock.After(deferredRetry):
		}
	}
	key, kinds, since, ok := w.owed.takeOwed()
	if !ok {
		return true // the units owed writes were deleted meanwhile
	}
	if kinds&owesQueueName != 0 {
		w.writeQueueName(ctx, key)
	}
	if kinds&owesMessage != 0 {
		w.writeMessage(ctx, key)
	}
	metrics.DeferredWriteDelay.Observe(w.clock.Since(since).Seconds())
	return true
}

// deferredRetry is how long a deferred write waits while urgent ones run.
const deferredRetry = 250 * time.Millisecond

// quietAfterUrgent is how long after the last admission or eviction written
// deferred writes wait. While admissions flow, at the client's rate or in
// bursts a moment apart, every write that only informs is one admission
// fewer, and the queue moves on before a unit's explanation is read; once
// they pause this long, units that still wait are explained.
const quietAfterUrgent = time.Second

// quiet reports whether writes that only inform may go: no admission or
// eviction waits, and none was written within quietAfterUrgent.
func (w *Writer) quiet() bool {
	return w.urgent.Len() == 0 && w.clock.Since(time.Unix(0, w.lastUrgent.Load())) >= quietAfterUrgent
}

// writeMessage writes why one unit waits, if that changed since the last
// write: the latest reason is read when the write happens, so a unit whose
// reason changes quickly is written once.
func (w *Writer) writeMessage(ctx context.Context, key string) {
	d, ok := w.decisions.decision(key)
	if !ok || d.assumed || queueunit.HoldsQuota(d.unit) {
		return
	}
	reason, noQueue, behind := w.views.waitReasonAndQueueNotFound(key)
	if reason == "" || reason == d.unit.Status.Message {
		return
	}
	if err := w.limiter.Wait(ctx); err != nil {
		return
	}
	u := d.unit.DeepCopy()
	changed, err := patch.Patch(ctx, w.client, w.apiReader, u, patch.Status, FieldOwner, func(cur *schedulingv1alpha1.QueueUnit) bool {
		return queueunit.Explain(cur, reason)
	})
	if err != nil {
		switch {
		case apierrors.IsNotFound(err):
		case apierrors.IsConflict(err):
			// The unit keeps changing; the next change explains it again.
			w.log.V(2).Info("Writing why a unit waits", "queueUnit", key, "error", err.Error())
		default:
			// Such as forbidden: a missing RBAC rule must not be silent.
			w.log.Error(err, "Writing why a unit waits", "queueUnit", key)
		}
		return
	}
	if changed {
		metrics.AdmissionAttempts.WithLabelValues(metrics.ResultWaiting).Inc()
		switch {
		case noQueue && w.views.firstQueueNotFound(key):
			w.recorder.Event(u, corev1.EventTypeWarning, queueunit.EventQueueNotFound, reason)
		case behind:
			// Waiting its turn is a queue at work, not a failure: the
			// status says where it waits, and an event would be a second
			// write per waiting unit.
		default:
			w.recorder.Event(u, corev1.EventTypeWarning, queueunit.EventFailedScheduling, reason)
		}
	}
}
