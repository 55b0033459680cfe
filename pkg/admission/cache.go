package admission

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/quota"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
)

// unitRecord is what the Cache keeps of a QueueUnit besides what the core keeps.
type unitRecord struct {
	unit *schedulingv1alpha1.QueueUnit // the latest object seen
	// queue the unit waits in or is admitted to; empty when no quota serves it.
	queue string
	// byLabel: the unit named its quota; otherwise the mapping is re-resolved
	// when quotas change.
	byLabel bool
	request corev1.ResourceList
	// inCore: the unit is in the scheduler.
	inCore bool
	// assumed: admitted in memory, the write not yet seen back.
	assumed bool
	// evicting: an eviction write is queued or in flight.
	evicting bool
	// notBefore holds a unit out of its queue while its backoff runs.
	notBefore time.Time
	// warnedNoQueue: the QueueNotFound event was already raised.
	warnedNoQueue bool
	// problem is why the unit cannot be queued at all, for its status.
	problem string
}

func (r *unitRecord) key() string { return r.unit.Namespace + "/" + r.unit.Name }

// queueRecord is what the Cache keeps of a Queue.
type queueRecord struct {
	queue     *schedulingv1alpha1.Queue
	configErr error
}

// Cache is the decision core fed from the API server, safe for concurrent use.
type Cache struct {
	mu     sync.Mutex
	core   *scheduler.Scheduler
	quotas *quotaIndex
	// quotaObjects by name, for the visibility API and errors.
	quotaObjects map[string]*elasticquotav1alpha1.ElasticQuota
	quotaErrs    map[string]error
	queues       map[string]*queueRecord
	units        map[string]*unitRecord
	// backingOff are the units whose notBefore is set, so a cycle looks
	// only at them, not at every unit.
	backingOff map[string]*unitRecord
	nodes      map[string]corev1.ResourceList
	// wake has room for one signal: events coalesce while a cycle runs.
	wake chan struct{}
	// dirty units changed since the loop last looked at them.
	dirty map[string]struct{}
	// recent admissions seen on the API server, newest last, for the dashboard.
	recent []AdmissionRecord
}

// recentAdmissionsKept bounds the dashboard's history.
const recentAdmissionsKept = 50

// AdmissionRecord is one admission as seen on the API server.
type AdmissionRecord struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Queue     string    `json:"queue"`
	Time      time.Time `json:"time"`
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{
		core:         scheduler.New(),
		quotas:       newQuotaIndex(),
		quotaObjects: map[string]*elasticquotav1alpha1.ElasticQuota{},
		quotaErrs:    map[string]error{},
		queues:       map[string]*queueRecord{},
		units:        map[string]*unitRecord{},
		backingOff:   map[string]*unitRecord{},
		nodes:        map[string]corev1.ResourceList{},
		wake:         make(chan struct{}, 1),
		dirty:        map[string]struct{}{},
	}
}

// Wake is signalled whenever something happened that could change a decision.
func (c *Cache) Wake() <-chan struct{} { return c.wake }

func (c *Cache) notify() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// UpsertElasticQuota records a quota and re-maps units that fell back to one.
func (c *Cache) UpsertElasticQuota(eq *elasticquotav1alpha1.ElasticQuota) {
	c.mu.Lock()
	defer c.mu.Unlock()
	spec, err := quota.SpecFromElasticQuota(eq)
	if nsErr := c.quotas.upsert(eq); nsErr != nil {
		err = nsErr // names the annotation
	}
	c.quotaObjects[eq.Name] = eq
	if err != nil {
		c.quotaErrs[eq.Name] = err
	} else {
		delete(c.quotaErrs, eq.Name)
	}
	c.core.UpsertQuota(spec)
	c.remapFallbacks()
	c.notify()
}

// DeleteElasticQuota forgets a quota.
func (c *Cache) DeleteElasticQuota(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.quotas.remove(name)
	delete(c.quotaObjects, name)
	delete(c.quotaErrs, name)
	metrics.QuotaResource.DeletePartialMatch(prometheus.Labels{"quota": name})
	c.core.DeleteQuota(name)
	c.remapFallbacks()
	c.notify()
}

// UpsertQueue records a Queue and its policy.
func (c *Cache) UpsertQueue(q *schedulingv1alpha1.Queue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg, err := policy.ConfigFromQueue(q.Spec.QueuePolicy, q.Annotations)
	if old, ok := c.queues[q.Name]; ok && !equality.Semantic.DeepEqual(old.queue.Spec.AdmissionChecks, q.Spec.AdmissionChecks) {
		// Units reserved for a check taken off the queue wait for it no more.
		for key, r := range c.units {
			if r.queue == q.Name && r.unit.Status.Phase == schedulingv1alpha1.Reserved {
				c.dirty[key] = struct{}{}
			}
		}
	}
	c.queues[q.Name] = &queueRecord{queue: q, configErr: err}
	priority := schedulingv1alpha1.DefaultQueuePriority
	if q.Spec.Priority != nil {
		priority = *q.Spec.Priority
	}
	c.core.UpsertQueue(scheduler.QueueSpec{Name: q.Name, Quota: q.Name, Priority: priority, Config: cfg})
	c.notify()
}

// DeleteQueue forgets a Queue; its waiting units wait for it to come back.
func (c *Cache) DeleteQueue(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.queues, name)
	c.core.DeleteQueue(name)
	metrics.PendingUnits.DeleteLabelValues(name)
	metrics.AdmittedUnits.DeleteLabelValues(name)
	c.notify()
}

// UpsertNode counts a node's allocatable while it is Ready and schedulable.
func (c *Cache) UpsertNode(n *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if nodeUsable(n) {
		c.nodes[n.Name] = n.Status.Allocatable
	} else {
		delete(c.nodes, n.Name)
	}
	c.setCapacity()
}

// DeleteNode stops counting a node.
func (c *Cache) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
	c.setCapacity()
}

func nodeUsable(n *corev1.Node) bool {
	if n.Spec.Unschedulable || n.DeletionTimestamp != nil {
		return false
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (c *Cache) setCapacity() {
	total := corev1.ResourceList{}
	for _, alloc := range c.nodes {
		for name, q := range alloc {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	c.core.SetClusterCapacity(total)
	c.notify()
}

// UpsertUnit records a QueueUnit as the API server has it.
func (c *Cache) UpsertUnit(u *schedulingv1alpha1.QueueUnit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := u.Namespace + "/" + u.Name
	r := c.units[key]
	if r == nil {
		r = &unitRecord{}
		c.units[key] = r
	}
	if queueunit.HoldsQuota(u) && (r.unit == nil || !queueunit.HoldsQuota(r.unit)) && u.Status.LastAllocateTime != nil {
		q, _ := c.quotas.quotaNameOf(u)
		c.recent = append(c.recent, AdmissionRecord{Namespace: u.Namespace, Name: u.Name, Queue: q, Time: u.Status.LastAllocateTime.Time})
		// Informers deliver a restart's units in no particular order.
		slices.SortStableFunc(c.recent, func(a, b AdmissionRecord) int { return a.Time.Compare(b.Time) })
		if len(c.recent) > recentAdmissionsKept {
			c.recent = c.recent[len(c.recent)-recentAdmissionsKept:]
		}
	}
	r.unit = u
	if queueunit.HoldsQuota(u) {
		r.assumed = false // the admission was written and seen back
	}
	if !queueunit.HoldsQuota(u) || u.EffectivePhase() == schedulingv1alpha1.Enqueued {
		r.evicting = r.evicting && queueunit.HoldsQuota(u)
	}
	if rs := u.Status.RequeueState; rs != nil && rs.RequeueAt != nil && !queueunit.HoldsQuota(u) {
		r.notBefore = rs.RequeueAt.Time
		c.backingOff[key] = r
	} else {
		r.notBefore = time.Time{}
		delete(c.backingOff, key)
	}
	c.place(r)
	c.dirty[key] = struct{}{}
	c.notify()
}

// DeleteUnit forgets a unit; whatever it held is released.
func (c *Cache) DeleteUnit(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := namespace + "/" + name
	if r, ok := c.units[key]; ok && r.inCore {
		c.core.DeleteUnit(key)
	}
	delete(c.units, key)
	delete(c.backingOff, key)
	c.notify()
}

// remapFallbacks re-resolves the queue of units that did not name their quota.
func (c *Cache) remapFallbacks() {
	for key, r := range c.units {
		if !r.byLabel {
			c.place(r)
			c.dirty[key] = struct{}{}
		}
	}
}

// place puts a unit where it belongs in the core: pending in its queue,
// admitted, or out (finished, inactive, backing off, or unmapped).
func (c *Cache) place(r *unitRecord) {
	u := r.unit
	key := r.key()
	r.queue, r.byLabel = c.quotas.quotaNameOf(u)
	r.problem = ""
	request := queueunit.Request(u)
	if r.assumed && !queueunit.HoldsQuota(u) && !equality.Semantic.DeepEqual(r.request, request) {
		// Admitted at another size and not written yet: the decision no
		// longer holds (charging the new size would skip the fit check), so
		// the writer skips it and the unit is decided again at its new size.
		r.assumed = false
		c.core.ForgetAdmission(key)
	}
	r.request = request
	holds := queueunit.HoldsQuota(u) || r.assumed

	out := false
	switch phase := u.EffectivePhase(); {
	case queueunit.Finished(phase):
		out = true // finished: quota released
	case u.DeletionTimestamp != nil && !holds:
		out = true
	case !u.IsActive() && !holds:
		out = true
		r.problem = "inactive: spec.active is false"
	case r.queue == "" && !holds:
		out = true
		r.problem = "no ElasticQuota serves this unit: label it quota.scheduling.koordinator.sh/name=<quota>"
	case !holds && !r.notBefore.IsZero():
		out = true
		r.problem = fmt.Sprintf("backing off until %s after admission checks sent it back", r.notBefore.UTC().Format(time.RFC3339))
	}
	if out {
		if r.inCore {
			c.core.DeleteUnit(key)
			r.inCore = false
		}
		return
	}
	priority := int32(0)
	if u.Spec.Priority != nil {
		priority = *u.Spec.Priority
	}
	su := scheduler.Unit{
		Key:         key,
		Queue:       r.queue,
		Priority:    priority,
		Request:     r.request,
		EnqueueTime: u.CreationTimestamp.Time,
		Admitted:    holds,
		Running:     u.Status.Phase == schedulingv1alpha1.Running,
	}
	if u.Status.LastAllocateTime != nil {
		su.AdmitTime = u.Status.LastAllocateTime.Time
	}
	if err := c.core.UpsertUnit(su); err != nil {
		// The core refused the unit (and dropped it if it had it).
		r.problem, r.inCore = err.Error(), false
		return
	}
	r.inCore = true
}

// cycle runs one scheduling cycle of at most limit admissions (negative: no
// limit) and marks its admissions as assumed.
func (c *Cache) cycle(now time.Time, limit int) scheduler.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseBackoffs(now)
	res := c.core.CycleLimited(now, limit)
	for _, a := range res.Admissions {
		c.units[a.Unit].assumed = true
	}
	for _, p := range res.Preemptions {
		for _, v := range p.Victims {
			if r := c.units[v]; r != nil {
				r.evicting = true
			}
		}
	}
	if next := c.nextBackoff(); !next.IsZero() && (res.NextWakeup.IsZero() || next.Before(res.NextWakeup)) {
		res.NextWakeup = next
	}
	return res
}

// forget undoes an admission that could not be written, and places the
// unit again as its latest object says: deactivated, being deleted or
// finished meanwhile, it leaves the core instead of waiting there to be
// admitted once more.
func (c *Cache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.units[key]; ok && r.assumed {
		r.assumed = false
		c.core.ForgetAdmission(key)
		c.place(r)
	}
	c.notify()
}

func (c *Cache) releaseBackoffs(now time.Time) {
	for key, r := range c.backingOff {
		if !now.Before(r.notBefore) {
			r.notBefore = time.Time{}
			delete(c.backingOff, key)
			c.place(r)
		}
	}
}

func (c *Cache) nextBackoff() time.Time {
	var next time.Time
	for _, r := range c.backingOff {
		if next.IsZero() || r.notBefore.Before(next) {
			next = r.notBefore
		}
	}
	return next
}

// unit returns the latest object of a unit and whether it is still assumed
// admitted, for the writer.
func (c *Cache) unit(key string) (*schedulingv1alpha1.QueueUnit, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.units[key]
	if !ok {
		return nil, "", false
	}
	return r.unit, r.queue, r.assumed
}

// namesItsQuota reports whether the unit names its quota itself (label or
// spec.queue), rather than being charged by a fallback that a quota change
// re-resolves.
func (c *Cache) namesItsQuota(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.units[key]
	return ok && r.byLabel
}

// waitReason is why a unit waits now, or its problem, or "".
func (c *Cache) waitReason(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.units[key]
	if !ok {
		return ""
	}
	if r.problem != "" {
		return r.problem
	}
	if !r.inCore || queueunit.HoldsQuota(r.unit) || r.assumed {
		return ""
	}
	if _, ok := c.queues[r.queue]; !ok {
		if c.quotas.exists(r.queue) {
			return fmt.Sprintf("waiting for Queue %s/%s to be created for ElasticQuota %s", schedulingv1alpha1.QueueNamespace, r.queue, r.queue)
		}
		return fmt.Sprintf("ElasticQuota %s not found: the unit is admitted as soon as it exists", r.queue)
	}
	return c.core.WaitReason(key)
}

// admissionChecksFor lists the Queue's admission checks that select the unit.
func (c *Cache) admissionChecksFor(queue string, u *schedulingv1alpha1.QueueUnit) (queueChecks, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checksFor(queue, u)
}

// checksFor is admissionChecksFor with c.mu held.
func (c *Cache) checksFor(queue string, u *schedulingv1alpha1.QueueUnit) (queueChecks, error) {
	q, ok := c.queues[queue]
	if !ok {
		return queueChecks{}, nil
	}
	names, err := selectedChecks(q.queue, u)
	return queueChecks{names: names, known: err == nil}, err
}

// requestOf is the unit's total request as the core counts it.
func (c *Cache) requestOf(key string) corev1.ResourceList {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.units[key]; ok {
		return r.request
	}
	return nil
}

// waitReasonAndQueueNotFound is waitReason, and whether the reason is that
// no quota or queue serves the unit.
func (c *Cache) waitReasonAndQueueNotFound(key string) (string, bool) {
	reason := c.waitReason(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.units[key]
	if !ok {
		return reason, false
	}
	_, queueExists := c.queues[r.queue]
	return reason, !queueExists && !queueunit.HoldsQuota(r.unit)
}

// firstQueueNotFound reports true once per unit, so QueueNotFound is raised once.
func (c *Cache) firstQueueNotFound(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.units[key]
	if !ok || r.warnedNoQueue {
		return false
	}
	r.warnedNoQueue = true
	return true
}

// followUp is what the loop must do for units that changed, besides cycles.
type followUp struct {
	explain      []string // may have a new reason to wait
	deactivate   []string // inactive but holding quota
	checksPassed []string // Reserved with every check Ready
	checksFailed []string // Reserved with a check Retry or Rejected
}

// takeDirty looks at the units that changed since the last call.
func (c *Cache) takeDirty() followUp {
	c.mu.Lock()
	defer c.mu.Unlock()
	var f followUp
	for key := range c.dirty {
		r, ok := c.units[key]
		if !ok {
			continue
		}
		u := r.unit
		holds := queueunit.HoldsQuota(u)
		current, _ := c.checksFor(r.queue, u)
		switch ready, failed := checksVerdict(u, current); {
		case ready:
			f.checksPassed = append(f.checksPassed, key)
		case failed != nil:
			f.checksFailed = append(f.checksFailed, key)
		}
		if !u.IsActive() && holds && !r.evicting && !(u.EffectivePhase() == schedulingv1alpha1.Enqueued && queueunit.Evicted(u)) {
			r.evicting = true
			f.deactivate = append(f.deactivate, key)
		}
		if !holds && !r.assumed {
			f.explain = append(f.explain, key)
		}
	}
	clear(c.dirty)
	return f
}

// RecentAdmissions lists the latest admissions, newest first.
func (c *Cache) RecentAdmissions() []AdmissionRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]AdmissionRecord, len(c.recent))
	for i, r := range c.recent {
		out[len(out)-1-i] = r
	}
	return out
}
