package admission

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
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
	"github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// AnnotationQueueItemsRefreshInterval on a Queue (or its ElasticQuota) sets
// how often its status.queueItemDetails is rewritten (a duration, default 15s).
const AnnotationQueueItemsRefreshInterval = "koord-queue/queue-items-refresh-interval"

// Queue condition types and reasons.
const (
	QueueConditionReady   = "Ready"
	ReasonQueueReady      = "Ready"
	ReasonQuotaInvalid    = "QuotaInvalid"
	ReasonQuotaNotFound   = "QuotaNotFound"
	ReasonInvalidSettings = "InvalidSettings"
	EventQuotaInvalid     = "QuotaInvalid"
	// EventDuplicateQuotaName is raised on an ElasticQuota not used because
	// an older one in another namespace has its name.
	EventDuplicateQuotaName = "DuplicateQuotaName"
)

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
// becomes invalid.
type StatusWriter struct {
	client    client.Client
	apiReader client.Reader
	recorder  record.EventRecorder
	cache     *Cache
	clock     clock.WithTicker
	opts      StatusOptions
	synced    []toolscache.InformerSynced

	lastWrite     map[string]time.Time
	lastQuotaErrs map[string]string
	// warnedDuplicates are the duplicate ElasticQuotas (by UID) already
	// given their Warning event.
	warnedDuplicates map[types.UID]bool
}

var _ manager.LeaderElectionRunnable = (*StatusWriter)(nil)

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
	if err := waitSynced(ctx, s.synced); err != nil {
		return fmt.Errorf("waiting for the cache: %w", err)
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
	s.reportQuotas()
	for _, q := range s.cache.queueObjects() {
		// Metrics every tick; the Queue object only at its refresh interval.
		if view, ok := s.cache.Queue(q.Name); ok {
			metrics.PendingUnits.WithLabelValues(q.Name).Set(float64(view.Pending))
			metrics.AdmittedUnits.WithLabelValues(q.Name).Set(float64(view.Admitted))
		}
		interval := s.opts.RefreshInterval
		if v, ok := q.Annotations[AnnotationQueueItemsRefreshInterval]; ok {
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				interval = d
			}
		}
		if last, ok := s.lastWrite[q.Name]; ok && now.Sub(last) < interval {
			continue
		}
		s.lastWrite[q.Name] = now
		// Locked: the status keeps conditions others may set, so a write
		// based on a stale copy must not drop theirs.
		_, err := queueunit.Patch(ctx, s.client, s.apiReader, q.DeepCopy(), queueunit.Status, FieldOwner, func(cur *schedulingv1alpha1.Queue) bool {
			desired := s.desiredStatus(cur, metav1.NewTime(now))
			if reflect.DeepEqual(stripTimes(cur.Status), stripTimes(desired)) {
				return false
			}
			cur.Status = desired
			return true
		})
		if client.IgnoreNotFound(err) != nil {
			log.Error(err, "Writing queue status", "queue", q.Name)
		}
	}
}

func (s *StatusWriter) desiredStatus(q *schedulingv1alpha1.Queue, now metav1.Time) schedulingv1alpha1.QueueStatus {
	view, _ := s.cache.Queue(q.Name)
	st := schedulingv1alpha1.QueueStatus{
		Pending:    int32(view.Pending),
		Admitted:   int32(view.Admitted),
		Conditions: append([]metav1.Condition(nil), q.Status.Conditions...),
	}
	for _, p := range s.cache.pending(q.Name, s.opts.TopN) {
		if st.QueueItemDetails == nil {
			st.QueueItemDetails = map[string][]schedulingv1alpha1.QueueItemDetail{}
		}
		st.QueueItemDetails[schedulingv1alpha1.QueueItemDetailsActive] = append(st.QueueItemDetails[schedulingv1alpha1.QueueItemDetailsActive], p)
	}
	cond := metav1.Condition{Type: QueueConditionReady, Status: metav1.ConditionTrue, Reason: ReasonQueueReady,
		Message: fmt.Sprintf("%s policy; %d pending, %d admitted", view.Policy, view.Pending, view.Admitted), LastTransitionTime: now}
	switch {
	case view.Quota == nil:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonQuotaNotFound
		cond.Message = fmt.Sprintf("no ElasticQuota named %s: its units wait until one exists", q.Name)
	case view.Quota.Error != "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonQuotaInvalid, view.Quota.Error
	case view.ConfigError != "":
		cond.Reason, cond.Message = ReasonInvalidSettings, view.ConfigError
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
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
	for _, dup := range s.cache.duplicateQuotas() {
		if s.warnedDuplicates[dup.UID] {
			continue
		}
		s.warnedDuplicates[dup.UID] = true
		used := s.cache.quotaObject(dup.Name)
		usedAt := "another namespace"
		if used != nil {
			usedAt = used.Namespace + "/" + used.Name
		}
		s.recorder.Eventf(dup, corev1.EventTypeWarning, EventDuplicateQuotaName,
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
				if obj := s.cache.quotaObject(q.Name); obj != nil {
					eq = obj
				}
				s.recorder.Event(eq, corev1.EventTypeWarning, EventQuotaInvalid, q.Error+"; its units wait")
			}
		}
	}
}

// queueObjects are the latest Queue objects.
func (c *Cache) queueObjects() []*schedulingv1alpha1.Queue {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*schedulingv1alpha1.Queue, 0, len(c.queues))
	for _, r := range c.queues {
		out = append(out, r.queue)
	}
	return out
}

func (c *Cache) quotaObject(name string) *elasticquotav1alpha1.ElasticQuota {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.quotaObjects[name]
}

// pending is the first n waiting units of a queue as QueueItemDetails.
func (c *Cache) pending(queue string, n int) []schedulingv1alpha1.QueueItemDetail {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []schedulingv1alpha1.QueueItemDetail
	for _, p := range c.core.Pending(queue, n) {
		r, ok := c.units[p.Key]
		if !ok {
			continue
		}
		out = append(out, schedulingv1alpha1.QueueItemDetail{
			Name: r.unit.Name, Namespace: r.unit.Namespace, Priority: p.Priority, Position: int32(p.Position),
		})
	}
	return out
}
