package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/metrics"
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
	// Deferred writes: only when no urgent write waits.
	opMessage
	opQueueName
)

type op struct {
	kind opKind
	key  string
}

type eviction struct {
	reason, message, preemptor string
}

// WriterOptions tune the Writer.
type WriterOptions struct {
	// Workers write admissions and evictions in parallel (default 8); the
	// client's QPS limit is what really bounds them.
	Workers int
	// MessageQPS bounds the writes that only inform (why a unit waits, the
	// admitting queue in spec.queue); they are made only while no admission
	// or eviction waits, so a backlog never takes the budget admissions need
	// (default 5).
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
	cache     *Cache
	clock     clock.Clock
	opts      WriterOptions
	log       logr.Logger

	urgent workqueue.TypedRateLimitingInterface[op]
	// deferred holds writes that only inform (why a unit waits, spec.queue):
	// they are made when no admission or eviction waits, so a backlog never
	// spends the API budget that admissions need.
	deferred workqueue.TypedInterface[op]
	limiter  *rate.Limiter

	mu        sync.Mutex
	evictions map[string]eviction
	// admitting are the admissions decided and not yet written.
	admitting map[string]struct{}
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
		client: c, apiReader: apiReader, recorder: recorder, cache: cache, clock: clk, opts: opts,
		urgent: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[op](10*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[op]{Name: "koord_queue_urgent_writes"}),
		deferred:  workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[op]{Name: "koord_queue_deferred_writes"}),
		limiter:   rate.NewLimiter(rate.Limit(opts.MessageQPS), 1),
		evictions: map[string]eviction{},
		admitting: map[string]struct{}{},
	}
}

// admissionBudget is how many more admissions the loop may decide now.
// Twice the workers keeps every worker busy while the loop decides the next
// ones; deciding further ahead would only hold quota for admissions that
// wait for the client's rate limit (see Scheduler.CycleLimited). When
// nothing is left, the next admission written wakes the loop.
func (w *Writer) admissionBudget() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return 2*w.opts.Workers - len(w.admitting)
}

// admissionWritten frees the admission's place in the budget and wakes the
// loop, which may have waited for it (wake-ups coalesce).
func (w *Writer) admissionWritten(key string) {
	w.mu.Lock()
	delete(w.admitting, key)
	w.mu.Unlock()
	w.cache.notify()
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
	w.deferred.ShutDown()
	wg.Wait()
}

func (w *Writer) admit(key string) {
	w.mu.Lock()
	w.admitting[key] = struct{}{}
	w.mu.Unlock()
	w.urgent.Add(op{kind: opAdmit, key: key})
}
func (w *Writer) checksPassed(key string) { w.urgent.Add(op{kind: opChecksPassed, key: key}) }
func (w *Writer) checksFailed(key string) { w.urgent.Add(op{kind: opChecksFailed, key: key}) }
func (w *Writer) explain(key string)      { w.deferred.Add(op{kind: opMessage, key: key}) }
func (w *Writer) evict(key string, e eviction) {
	w.mu.Lock()
	w.evictions[key] = e
	w.mu.Unlock()
	w.urgent.Add(op{kind: opEvict, key: key})
}

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
	if o.kind == opAdmit {
		w.admissionWritten(o.key)
	}
	return true
}

// patchStatus applies mutate to a fresh copy of the unit and writes the
// status with an optimistic lock; on a conflict it reads the unit from the
// API server and tries again. mutate returns false when, on the data it
// sees, there is nothing to write.
func (w *Writer) patchStatus(ctx context.Context, u *schedulingv1alpha1.QueueUnit, mutate func(*schedulingv1alpha1.QueueUnit) bool) (*schedulingv1alpha1.QueueUnit, bool, error) {
	for attempt := 0; ; attempt++ {
		updated := u.DeepCopy()
		if !mutate(updated) {
			return u, false, nil
		}
		err := w.client.Status().Patch(ctx, updated, client.MergeFromWithOptions(u, client.MergeFromWithOptimisticLock{}), FieldOwner)
		if err == nil {
			return updated, true, nil
		}
		if !apierrors.IsConflict(err) || attempt >= 5 {
			return u, false, err
		}
		fresh := &schedulingv1alpha1.QueueUnit{}
		if err := w.apiReader.Get(ctx, client.ObjectKeyFromObject(u), fresh); err != nil {
			return u, false, err
		}
		u = fresh
	}
}

func (w *Writer) writeAdmission(ctx context.Context, key string) error {
	u, queue, assumed := w.cache.unit(key)
	if u == nil || !assumed {
		return nil // deleted meanwhile, or the admission was already seen
	}
	checks, err := w.cache.admissionChecksFor(queue, u)
	if err != nil {
		w.recorder.Event(u, corev1.EventTypeWarning, queueunit.EventAdmissionCheck, err.Error())
	}
	request := w.cache.requestOf(key)
	now := metav1.NewTime(w.clock.Now())
	written, ok, err := w.patchStatus(ctx, u, func(cur *schedulingv1alpha1.QueueUnit) bool {
		if queueunit.HoldsQuota(cur) || cur.DeletionTimestamp != nil || !cur.IsActive() {
			return false
		}
		if queueunit.Finished(cur.EffectivePhase()) {
			return false
		}
		setAdmitted(cur, queue, request, checks.names, now)
		return true
	})
	if err != nil {
		return w.settleFailedAdmission(ctx, key, u, err)
	}
	if !ok {
		if !queueunit.HoldsQuota(written) {
			w.cache.forget(key) // finished, deleted or deactivated meanwhile
		}
		return nil
	}
	metrics.AdmissionAttempts.WithLabelValues(metrics.ResultAdmitted).Inc()
	metrics.AdmissionWaitTime.WithLabelValues(queue).Observe(now.Sub(written.CreationTimestamp.Time).Seconds())
	w.recorder.Eventf(written, corev1.EventTypeNormal, queueunit.EventScheduled, "Admitted by queue %s", queue)
	if written.Spec.Queue != queue {
		if w.cache.namesItsQuota(key) {
			w.deferred.Add(op{kind: opQueueName, key: key})
		} else {
			// Charged by a fallback (its namespace's quota, say): spec.queue
			// pins it, so that a quota change cannot move what it holds.
			w.patchQueueName(ctx, key, written, queue)
		}
	}
	return nil
}

// writeQueueName records the admitting queue in spec.queue, as Koord-Queue
// does, for a unit whose label already names its quota. It is a second
// write of the unit's main resource, so it waits for the admissions of a
// backlog: the status already says where the unit is.
func (w *Writer) writeQueueName(ctx context.Context, key string) {
	u, queue, assumed := w.cache.unit(key)
	// assumed: admitted, and the admission not seen back from the API yet.
	if u == nil || queue == "" || u.Spec.Queue == queue || !(queueunit.HoldsQuota(u) || assumed) {
		return
	}
	if err := w.limiter.Wait(ctx); err != nil {
		return
	}
	w.patchQueueName(ctx, key, u, queue)
}

func (w *Writer) patchQueueName(ctx context.Context, key string, u *schedulingv1alpha1.QueueUnit, queue string) {
	updated := u.DeepCopy()
	updated.Spec.Queue = queue
	if err := w.client.Patch(ctx, updated, client.MergeFrom(u), FieldOwner); client.IgnoreNotFound(err) != nil {
		w.log.Error(err, "Recording the admitting queue in spec.queue", "queueUnit", key)
	}
}

// settleFailedAdmission: the write failed. If the unit is gone the
// admission is forgotten; if the write may have landed anyway (a timeout),
// the API server is asked before anything is forgotten, so the same quota
// is never handed out twice.
func (w *Writer) settleFailedAdmission(ctx context.Context, key string, u *schedulingv1alpha1.QueueUnit, err error) error {
	metrics.AdmissionAttempts.WithLabelValues(metrics.ResultError).Inc()
	if apierrors.IsNotFound(err) {
		w.cache.forget(key)
		return nil
	}
	fresh := &schedulingv1alpha1.QueueUnit{}
	if getErr := w.apiReader.Get(ctx, client.ObjectKeyFromObject(u), fresh); getErr == nil && queueunit.HoldsQuota(fresh) {
		return nil
	} else if getErr != nil && !apierrors.IsNotFound(getErr) {
		return errors.Join(err, getErr) // unknown outcome: keep the reservation and retry
	}
	w.cache.forget(key)
	return fmt.Errorf("admitting %s: %w", key, err)
}

func (w *Writer) writeEviction(ctx context.Context, key string) error {
	w.mu.Lock()
	e, ok := w.evictions[key]
	w.mu.Unlock()
	if !ok {
		return nil
	}
	u, _, assumed := w.cache.unit(key)
	if u == nil {
		w.doneEvicting(key)
		return nil
	}
	now := metav1.NewTime(w.clock.Now())
	mutate := func(cur *schedulingv1alpha1.QueueUnit) bool {
		if !queueunit.HoldsQuota(cur) || (cur.EffectivePhase() == schedulingv1alpha1.Enqueued && queueunit.Evicted(cur)) {
			return false // already evicted, finished or released
		}
		setEvicted(cur, e.reason, e.message, now)
		return true
	}
	if assumed && !queueunit.HoldsQuota(u) {
		// Admitted by the core, the admission not seen back yet: the cache's
		// copy is older than it, so decide on the API server's.
		fresh := &schedulingv1alpha1.QueueUnit{}
		if err := w.apiReader.Get(ctx, client.ObjectKeyFromObject(u), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				w.doneEvicting(key)
				return nil
			}
			return fmt.Errorf("reading %s to evict it: %w", key, err)
		}
		if !queueunit.HoldsQuota(fresh) {
			// Its admission is yet to be written: retried until it is (then
			// evicted) or until it is forgotten (then nothing to evict).
			return fmt.Errorf("evicting %s: %w", key, errAdmissionNotWritten)
		}
		u = fresh
	}
	written, changed, err := w.patchStatus(ctx, u, mutate)
	if apierrors.IsNotFound(err) {
		w.doneEvicting(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("evicting %s: %w", key, err)
	}
	w.doneEvicting(key)
	if changed {
		metrics.Evictions.WithLabelValues(e.reason).Inc()
		w.recorder.Event(written, corev1.EventTypeNormal, queueunit.EventPreempted, e.message)
	}
	return nil
}

// errAdmissionNotWritten: a unit to evict was admitted, and its admission
// is still to be written.
var errAdmissionNotWritten = errors.New("its admission is not written yet")

func (w *Writer) doneEvicting(key string) {
	w.mu.Lock()
	delete(w.evictions, key)
	w.mu.Unlock()
}

func (w *Writer) writeChecksVerdict(ctx context.Context, key string) error {
	u, queue, _ := w.cache.unit(key)
	if u == nil {
		return nil
	}
	now := metav1.NewTime(w.clock.Now())
	var event, eventType string
	written, changed, err := w.patchStatus(ctx, u, func(cur *schedulingv1alpha1.QueueUnit) bool {
		current, _ := w.cache.admissionChecksFor(queue, cur)
		ready, failed := checksVerdict(cur, current)
		switch {
		case ready:
			setChecksPassed(cur, current, queue, now)
			event, eventType = cur.Status.Message, corev1.EventTypeNormal
		case failed != nil:
			setChecksFailed(cur, failed, w.opts.RequeueBaseDelay, w.opts.RequeueMaxDelay, now)
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
		w.recorder.Event(written, eventType, queueunit.EventAdmissionCheck, event)
	}
	return nil
}

// processMessage writes why one unit waits, if that changed since the last
// write: the latest reason is read when the write happens, so a unit whose
// reason changes quickly is written once.
func (w *Writer) processDeferred(ctx context.Context) bool {
	o, shutdown := w.deferred.Get()
	if shutdown {
		return false
	}
	defer w.deferred.Done(o)
	// Admissions and evictions first: hold this write until none waits.
	// (Re-adding every deferred write each time was half of koord-queue's
	// CPU with 15,000 units waiting.)
	for w.urgent.Len() > 0 {
		select {
		case <-ctx.Done():
			return false // shutting down
		case <-w.clock.After(deferredRetry):
		}
	}
	switch o.kind {
	case opQueueName:
		w.writeQueueName(ctx, o.key)
	case opMessage:
		w.writeMessage(ctx, o.key)
	}
	return true
}

// deferredRetry is how long a deferred write waits while urgent ones run.
const deferredRetry = 250 * time.Millisecond

// writeMessage writes why one unit waits, if that changed since the last
// write: the latest reason is read when the write happens, so a unit whose
// reason changes quickly is written once.
func (w *Writer) writeMessage(ctx context.Context, key string) {
	u, _, assumed := w.cache.unit(key)
	if u == nil || assumed || queueunit.HoldsQuota(u) {
		return
	}
	reason, noQueue := w.cache.waitReasonAndQueueNotFound(key)
	if reason == "" || reason == u.Status.Message {
		return
	}
	if err := w.limiter.Wait(ctx); err != nil {
		return
	}
	written, changed, err := w.patchStatus(ctx, u, func(cur *schedulingv1alpha1.QueueUnit) bool {
		if queueunit.HoldsQuota(cur) || cur.Status.Message == reason {
			return false
		}
		cur.Status.Message = reason
		if p := cur.EffectivePhase(); p != schedulingv1alpha1.Succeed && p != schedulingv1alpha1.Failed {
			cur.Status.Phase = schedulingv1alpha1.Enqueued
		}
		return true
	})
	if err != nil {
		if client.IgnoreNotFound(err) != nil {
			w.log.V(2).Info("Writing why a unit waits", "queueUnit", key, "error", err.Error())
		}
		return
	}
	if changed {
		metrics.AdmissionAttempts.WithLabelValues(metrics.ResultWaiting).Inc()
		if noQueue && w.cache.firstQueueNotFound(key) {
			w.recorder.Event(written, corev1.EventTypeWarning, queueunit.EventQueueNotFound, reason)
		} else {
			w.recorder.Event(written, corev1.EventTypeWarning, queueunit.EventFailedScheduling, reason)
		}
	}
}
