package admission

import (
	"maps"
	"slices"
	"strings"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// Quotas lists the quota tree, by name.
func (c *Cache) Quotas() []api.QuotaView {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := slices.Sorted(maps.Keys(c.quotaObjects))
	out := make([]api.QuotaView, 0, len(names))
	for _, name := range names {
		out = append(out, c.quotaView(name))
	}
	return out
}

func (c *Cache) quotaView(name string) api.QuotaView {
	e := c.core.Quotas()
	v := api.QuotaView{Name: name, Used: e.Used(name), Runtime: e.Runtime(name)}
	if eq, ok := c.quotaObjects[name]; ok {
		v.Namespace, v.Min, v.Max = eq.Namespace, eq.Spec.Min, eq.Spec.Max
		v.Tree = eq.Labels[elasticquotav1alpha1.LabelQuotaTreeID]
	}
	v.Parent = e.Parent(name)
	if v.Parent == "" && name != elasticquotav1alpha1.RootQuotaName {
		v.Capacity = e.Capacity(name) // a quota tree's root
	}
	if copies := c.quotaCopies[name]; len(copies) > 1 {
		for _, dup := range copies[1:] {
			v.IgnoredDuplicates = append(v.IgnoredDuplicates, dup.Namespace+"/"+dup.Name)
		}
	}
	var errs []string
	if err := e.Err(name); err != nil {
		errs = append(errs, err.Error())
	}
	if err := c.quotaErrs[name]; err != nil {
		errs = append(errs, err.Error())
	}
	v.Error = strings.Join(errs, "; ")
	return v
}

// Quota is one quota of the tree, and whether it exists.
func (c *Cache) Quota(name string) (api.QuotaView, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.quotaObjects[name]; !ok {
		return api.QuotaView{}, false
	}
	return c.quotaView(name), true
}

// Queues lists the queues, by name.
func (c *Cache) Queues() []api.QueueView {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := slices.Sorted(maps.Keys(c.queues))
	out := make([]api.QueueView, 0, len(names))
	for _, name := range names {
		out = append(out, c.queueView(name))
	}
	return out
}

// Queue is one queue, and whether it exists.
func (c *Cache) Queue(name string) (api.QueueView, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.queues[name]; !ok {
		return api.QueueView{}, false
	}
	return c.queueView(name), true
}

func (c *Cache) queueView(name string) api.QueueView {
	r := c.queues[name]
	v := api.QueueView{Name: name, Policy: r.queue.Spec.QueuePolicy, Priority: schedulingv1alpha1.DefaultQueuePriority}
	if v.Policy == "" {
		v.Policy = schedulingv1alpha1.QueuePolicyPriority
	}
	if r.queue.Spec.Priority != nil {
		v.Priority = *r.queue.Spec.Priority
	}
	v.Pending, v.Admitted = c.core.QueueCounts(name)
	if _, ok := c.quotaObjects[name]; ok {
		q := c.quotaView(name)
		v.Quota = &q
	}
	if r.configErr != nil {
		v.ConfigError = r.configErr.Error()
	}
	return v
}

// QueueUnits lists a queue's units: waiting ones in admission order first
// (with 1-based positions), then those holding quota. phase filters by
// phase when not empty; offset and limit page the list.
func (c *Cache) QueueUnits(queue string, phase schedulingv1alpha1.QueueUnitPhase, offset, limit int) (units []api.UnitView, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var all []api.UnitView
	for _, p := range c.core.Pending(queue, 0) {
		if r, ok := c.units[p.Key]; ok {
			v := c.unitView(r)
			v.Position = p.Position
			all = append(all, v)
		}
	}
	var holding []api.UnitView
	for _, r := range c.units {
		if r.queue == queue && (queueunit.HoldsQuota(r.unit) || r.admission != nil) {
			holding = append(holding, c.unitView(r))
		}
	}
	slices.SortFunc(holding, func(a, b api.UnitView) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	all = append(all, holding...)
	if phase != "" {
		all = slices.DeleteFunc(all, func(v api.UnitView) bool { return v.Phase != phase })
	}
	total = len(all)
	if offset >= len(all) {
		return []api.UnitView{}, total
	}
	all = all[offset:]
	if limit > 0 && limit < len(all) {
		all = all[:limit]
	}
	return all, total
}

// QueueUnit is one unit with its position and reason, and whether it exists.
func (c *Cache) QueueUnit(namespace, name string) (api.UnitView, bool) {
	c.mu.Lock()
	r, ok := c.units[namespace+"/"+name]
	if !ok {
		c.mu.Unlock()
		return api.UnitView{}, false
	}
	v := c.unitView(r)
	if !queueunit.HoldsQuota(r.unit) && r.admission == nil && r.inCore {
		v.Position = c.core.Position(r.key())
	}
	c.mu.Unlock()
	if v.Phase == schedulingv1alpha1.Enqueued {
		v.Reason = c.waitReason(namespace + "/" + name)
	}
	return v, true
}

func (c *Cache) unitView(r *unitRecord) api.UnitView {
	u := r.unit
	v := api.UnitView{Namespace: u.Namespace, Name: u.Name, Queue: r.queue, QuotaRule: string(r.rule), Phase: u.EffectivePhase(),
		Request: r.request, Resource: u.Spec.Resource, PodState: u.Status.PodState}
	if u.Spec.Priority != nil {
		v.Priority = *u.Spec.Priority
	}
	switch {
	case r.admission != nil && !queueunit.HoldsQuota(u):
		v.Phase = schedulingv1alpha1.Dequeued // admitted, the write in flight
		v.Request, v.PartialAdmission = r.admission.charged, queueunit.PartialNote(u, r.admission.partial)
	case queueunit.ResizedSinceAdmitted(u):
		v.Request = queueunit.Charged(u) // its spec (Resource) waits to be queued again
	case queueunit.HoldsQuota(u):
		partial := queueunit.PartialCounts(u)
		v.Request, v.PartialAdmission = queueunit.HeldWith(u, partial), queueunit.PartialNote(u, partial)
	}
	if v.Phase == schedulingv1alpha1.Enqueued && r.inCore {
		v.Reason = c.core.WaitReason(r.key())
	}
	if r.problem != "" {
		v.Reason = r.problem
	}
	return v
}
