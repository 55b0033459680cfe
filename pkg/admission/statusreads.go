package admission

import (
	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// What the Queue status writer (pkg/queue) reads of the Cache, besides the
// visibility API's views (Queue, Quotas).

// HasSynced reports whether every informer Setup feeds the Cache from has
// delivered its initial objects (false until Setup has run).
func (c *views) HasSynced() bool {
	c.mu.Lock()
	synced := c.synced
	c.mu.Unlock()
	if synced == nil {
		return false
	}
	for _, s := range synced {
		if !s() {
			return false
		}
	}
	return true
}

// QueueState is what the Queue status writer checks of every queue every
// second: its object, its counts and what its Ready condition says, none
// of its quota's figures (its QueueView has those, and costs a quota view
// and a tree view to build: with a thousand queues, most of the writer's
// time).
type QueueState struct {
	Queue  *schedulingv1alpha1.Queue
	Policy schedulingv1alpha1.QueuePolicy
	// Pending counts the units waiting in the queue, Admitted those
	// holding quota.
	Pending, Admitted int
	// HasQuota: an ElasticQuota has the queue's name; QuotaError is what
	// is wrong with it ("" when nothing is).
	HasQuota   bool
	QuotaError string
	// ConfigError reports malformed koord-queue/* annotations.
	ConfigError string
}

// QueueStates are every queue's state, read under one hold of the lock.
func (c *views) QueueStates() []QueueState {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]QueueState, 0, len(c.queues))
	for name := range c.queues {
		out = append(out, c.queueState(name))
	}
	return out
}

// QueueState is one queue's state, and whether the queue exists.
func (c *views) QueueState(name string) (QueueState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.queues[name]; !ok {
		return QueueState{}, false
	}
	return c.queueState(name), true
}

func (c *views) queueState(name string) QueueState {
	r := c.queues[name]
	st := QueueState{Queue: r.queue, Policy: policyOf(r.queue)}
	st.Pending, st.Admitted = c.core.QueueCounts(name)
	if _, st.HasQuota = c.quotaObjects[name]; st.HasQuota {
		st.QuotaError = c.quotaError(name)
	}
	if r.configErr != nil {
		st.ConfigError = r.configErr.Error()
	}
	return st
}

// QuotaObject is the ElasticQuota used under a name, nil when none is.
func (c *views) QuotaObject(name string) *elasticquotav1alpha1.ElasticQuota {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.quotaObjects[name]
}

// PendingItems are the first n waiting units of a queue, in admission
// order, as a Queue's status lists them.
func (c *views) PendingItems(queue string, n int) []schedulingv1alpha1.QueueItemDetail {
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

// DuplicateQuotas are the ElasticQuotas not used because an older one has
// their name.
func (c *views) DuplicateQuotas() []*elasticquotav1alpha1.ElasticQuota {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*elasticquotav1alpha1.ElasticQuota
	for _, copies := range c.quotaCopies {
		out = append(out, copies[1:]...)
	}
	return out
}
