package admission

import (
	corev1 "k8s.io/api/core/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// The Cache's answers that one of its parts gives: each asks that part.

// WritingAdmissions reports whether admissions decided wait for their
// write (decisions.WritingAdmissions).
func (c *Cache) WritingAdmissions() bool { return c.decisions.WritingAdmissions() }

// UpsertPod records a pod as the API server has it (podCharges.UpsertPod).
func (c *Cache) UpsertPod(p *corev1.Pod) { c.podCharges.UpsertPod(p) }

// DeletePod forgets a pod: it is gone (podCharges.DeletePod).
func (c *Cache) DeletePod(namespace, name string) { c.podCharges.DeletePod(namespace, name) }

// ReplacePods makes the Cache's pods these and no other, a relist
// (podCharges.ReplacePods).
func (c *Cache) ReplacePods(pods []*corev1.Pod) { c.podCharges.ReplacePods(pods) }

// UpsertTopology records a Topology and places again the units that ask
// for levels (topologies.UpsertTopology).
func (c *Cache) UpsertTopology(t *schedulingv1alpha1.Topology) { c.topologies.UpsertTopology(t) }

// DeleteTopology forgets a Topology (topologies.DeleteTopology).
func (c *Cache) DeleteTopology(name string) { c.topologies.DeleteTopology(name) }

// The visibility API's reads (views.go).

// Quotas lists the quota tree, by name.
func (c *Cache) Quotas() []api.QuotaView { return c.views.Quotas() }

// Quota is one quota of the tree, and whether it exists.
func (c *Cache) Quota(name string) (api.QuotaView, bool) { return c.views.Quota(name) }

// Queues lists the queues, by name.
func (c *Cache) Queues() []api.QueueView { return c.views.Queues() }

// Queue is one queue, and whether it exists.
func (c *Cache) Queue(name string) (api.QueueView, bool) { return c.views.Queue(name) }

// QueueUnits lists a page of a queue's units, and how many there are
// (views.QueueUnits).
func (c *Cache) QueueUnits(queue string, phase schedulingv1alpha1.QueueUnitPhase, offset, limit int) ([]api.UnitView, int) {
	return c.views.QueueUnits(queue, phase, offset, limit)
}

// QueueUnit is one unit with its position and reason, and whether it exists.
func (c *Cache) QueueUnit(namespace, name string) (api.UnitView, bool) {
	return c.views.QueueUnit(namespace, name)
}

// RecentAdmissions lists the latest admissions, newest first.
func (c *Cache) RecentAdmissions() []api.AdmissionRecord { return c.views.RecentAdmissions() }

// WhatIf is the forecast of a queue's waiting units had its quota the min
// and max change gives, without the units visible does not show
// (forecasts.WhatIf).
func (c *Cache) WhatIf(queue string, change api.QuotaChange, visible func(namespace string) (bool, error)) (api.WhatIf, bool, error) {
	return c.forecasts.WhatIf(queue, change, visible)
}

// Topologies lists the Topologies, by name (domainViews.Topologies).
func (c *Cache) Topologies() []api.TopologyView { return c.domainViews.Topologies() }

// TopologyDomains is a page of the domains of a Topology's level, what
// each has and has free (domainViews.TopologyDomains).
func (c *Cache) TopologyDomains(name, level string, offset, limit int) (api.TopologyDomainList, bool, error) {
	return c.domainViews.TopologyDomains(name, level, offset, limit)
}

// The Queue status writer's reads (statusreads.go).

// HasSynced reports whether every informer Setup feeds the Cache from has
// delivered its initial objects (false until Setup has run).
func (c *Cache) HasSynced() bool { return c.views.HasSynced() }

// QueueStates are every queue's object, counts and readiness, without its
// quota's figures.
func (c *Cache) QueueStates() []QueueState { return c.views.QueueStates() }

// QueueState is one queue's state, and whether the queue exists.
func (c *Cache) QueueState(name string) (QueueState, bool) { return c.views.QueueState(name) }

// QuotaObject is the ElasticQuota used under a name, nil when none is.
func (c *Cache) QuotaObject(name string) *elasticquotav1alpha1.ElasticQuota {
	return c.views.QuotaObject(name)
}

// PendingItems are the first n waiting units of a queue, in admission
// order, as a Queue's status lists them.
func (c *Cache) PendingItems(queue string, n int) []schedulingv1alpha1.QueueItemDetail {
	return c.views.PendingItems(queue, n)
}

// DuplicateQuotas are the ElasticQuotas not used because an older one has
// their name.
func (c *Cache) DuplicateQuotas() []*elasticquotav1alpha1.ElasticQuota {
	return c.views.DuplicateQuotas()
}
