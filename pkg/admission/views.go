package admission

import (
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// views answers the visibility API (views.go, listing.go), the Queue
// status writer (statusreads.go) and the Writer's messages (reasons.go),
// from what the Cache keeps, under its lock.
type views struct {
	mu    *sync.Mutex            // the Cache's
	units map[string]*unitRecord // the Cache's records
	core  *scheduler.Scheduler
	// The Cache's quotas and Queues, as it keeps them (cache.go).
	quotas       *quotaIndex
	quotaObjects map[string]*elasticquotav1alpha1.ElasticQuota
	quotaCopies  map[string][]*elasticquotav1alpha1.ElasticQuota
	quotaErrs    map[string]error
	queues       queueRecords
	// queueNamespace holds the Queues, for messages.
	queueNamespace string
	// pods say what a leaving unit's pods hold; forecasts, when waiting
	// units are estimated to be admitted.
	pods      *podCharges
	forecasts *forecasts
	// recent admissions seen on the API server, newest last, for the dashboard.
	recent []api.AdmissionRecord
	// lists are the queues' units holding quota, and their waiting units
	// in an odd phase, for QueueUnits' pages (listing.go).
	lists unitLists
	// synced are the informers feeding the Cache (Setup), for HasSynced.
	synced []toolscache.InformerSynced
}

// RecentAdmissions lists the latest admissions, newest first.
func (c *views) RecentAdmissions() []api.AdmissionRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]api.AdmissionRecord, len(c.recent))
	for i, r := range c.recent {
		out[len(out)-1-i] = r
	}
	return out
}

// recentAdmissionsKept bounds the dashboard's history.
const recentAdmissionsKept = 50

// seenAdmitted records, with c.mu held, that unit u was seen admitted on
// the API server (it holds quota and did not), for the dashboard.
func (c *views) seenAdmitted(u *schedulingv1alpha1.QueueUnit) {
	q, _ := c.quotas.quotaNameOf(u)
	c.recent = append(c.recent, api.AdmissionRecord{Namespace: u.Namespace, Name: u.Name, Queue: q, Time: u.Status.LastAllocateTime.Time,
		TopologyAssignments: u.Status.TopologyAssignments})
	// Informers deliver a restart's units in no particular order.
	slices.SortStableFunc(c.recent, func(a, b api.AdmissionRecord) int { return a.Time.Compare(b.Time) })
	if len(c.recent) > recentAdmissionsKept {
		c.recent = c.recent[len(c.recent)-recentAdmissionsKept:]
	}
}

// Quotas lists the quota tree, by name.
func (c *views) Quotas() []api.QuotaView {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := slices.Sorted(maps.Keys(c.quotaObjects))
	out := make([]api.QuotaView, 0, len(names))
	for _, name := range names {
		out = append(out, c.quotaView(name))
	}
	return out
}

func (c *views) quotaView(name string) api.QuotaView {
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
	v.Error = c.quotaError(name)
	return v
}

// quotaError is what is wrong with quota name, with c.mu held: the
// engine's error and the ElasticQuota's, joined; "" when nothing is.
func (c *views) quotaError(name string) string {
	var errs []string
	if err := c.core.Quotas().Err(name); err != nil {
		errs = append(errs, err.Error())
	}
	if err := c.quotaErrs[name]; err != nil {
		errs = append(errs, err.Error())
	}
	return strings.Join(errs, "; ")
}

// treeView is the tree of quota name, with c.mu held; nil when the engine
// does not know the quota.
func (c *views) treeView(name string) *api.TreeView {
	e := c.core.Quotas()
	root := e.TreeRoot(name)
	if root == "" {
		return nil
	}
	t := &api.TreeView{Root: root, Pool: e.Pool(name), Capacity: e.Capacity(root), Used: e.Used(root)}
	if name == root {
		t.Unqueued = c.pods.unqueuedIn(root)
	}
	if eq, ok := c.quotaObjects[root]; ok && root != elasticquotav1alpha1.RootQuotaName {
		t.ID = eq.Labels[elasticquotav1alpha1.LabelQuotaTreeID]
	}
	return t
}

// Quota is one quota of the tree, and whether it exists.
func (c *views) Quota(name string) (api.QuotaView, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.quotaObjects[name]; !ok {
		return api.QuotaView{}, false
	}
	return c.quotaView(name), true
}

// Queues lists the queues, by name.
func (c *views) Queues() []api.QueueView {
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
func (c *views) Queue(name string) (api.QueueView, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.queues[name]; !ok {
		return api.QueueView{}, false
	}
	return c.queueView(name), true
}

func (c *views) queueView(name string) api.QueueView {
	r := c.queues[name]
	v := api.QueueView{Name: name, Policy: policyOf(r.queue), Priority: schedulingv1alpha1.DefaultQueuePriority}
	if r.queue.Spec.Priority != nil {
		v.Priority = *r.queue.Spec.Priority
	}
	v.Pending, v.Admitted = c.core.QueueCounts(name)
	if _, ok := c.quotaObjects[name]; ok {
		q := c.quotaView(name)
		v.Quota = &q
		v.QuotaTree = c.treeView(name)
	}
	if r.configErr != nil {
		v.ConfigError = r.configErr.Error()
	}
	return v
}

// policyOf is q's policy, Priority when it names none.
func policyOf(q *schedulingv1alpha1.Queue) schedulingv1alpha1.QueuePolicy {
	if q.Spec.QueuePolicy == "" {
		return schedulingv1alpha1.QueuePolicyPriority
	}
	return q.Spec.QueuePolicy
}

// QueueUnits lists a queue's units: waiting ones in admission order first
// (with 1-based positions), then those holding quota, by namespace/name.
// phase filters by phase when not empty; offset and limit page the list
// (a page has at most api.MaxLimit units, and that many when limit is 0),
// and total counts the filtered list. Only the page's units are looked at
// (listing.go), and their views are built once the lock is released.
func (c *views) QueueUnits(queue string, phase schedulingv1alpha1.QueueUnitPhase, offset, limit int) (units []api.UnitView, total int) {
	if limit <= 0 || limit > api.MaxLimit {
		limit = api.MaxLimit
	}
	c.mu.Lock()
	page, total := c.queueUnitsPage(queue, phase, offset, limit)
	c.mu.Unlock()
	units = page.views()
	c.forecasts.addEstimates(units)
	return units, total
}

// queueUnitsPage is QueueUnits' page before its views are built, with c.mu
// held.
func (c *views) queueUnitsPage(queue string, phase schedulingv1alpha1.QueueUnitPhase, offset, limit int) (page unitPage, total int) {
	offset = max(offset, 0)
	pending, waiting := c.pendingPage(queue, phase, offset, limit)
	holding := c.lists.holdingOf(queue, phase)
	total = waiting
	if holding != nil {
		total += holding.Len()
	}
	if offset >= total {
		return nil, total
	}
	size := total - offset
	if limit > 0 {
		size = min(size, limit)
	}
	page = make(unitPage, 0, size)
	for _, p := range pending {
		if r, ok := c.units[p.Key]; ok {
			page = append(page, c.viewSource(p.Key, r, p.Position))
		}
	}
	if holding != nil {
		holding.Each(max(offset-waiting, 0), func(key string) bool {
			if len(page) == size {
				return false
			}
			page = append(page, c.viewSource(key, c.units[key], 0))
			return true
		})
	}
	return page, total
}

// unitPage is a page of units' view sources.
type unitPage []unitViewSource

// views builds the page's views; an empty page is an empty list (JSON
// [], not null).
func (p unitPage) views() []api.UnitView {
	out := make([]api.UnitView, len(p))
	for i := range p {
		out[i] = p[i].view()
	}
	return out
}

// QueueUnit is one unit with its position and reason, and whether it exists.
func (c *views) QueueUnit(namespace, name string) (api.UnitView, bool) {
	c.mu.Lock()
	key := namespace + "/" + name
	r, ok := c.units[key]
	if !ok {
		c.mu.Unlock()
		return api.UnitView{}, false
	}
	src := c.viewSource(key, r, 0)
	if !queueunit.HoldsQuota(r.unit) && r.admission == nil && r.inCore {
		src.position = c.core.Position(key)
	}
	c.mu.Unlock()
	v := src.view()
	if v.Phase == schedulingv1alpha1.Enqueued {
		v.Reason = c.waitReason(key)
	}
	views := []api.UnitView{v}
	c.forecasts.addEstimates(views)
	return views[0], true
}

// unitViewSource is what a unit's view is built from, copied from its
// record and the core with c.mu held, so that the view is built once it
// is released: the objects the record points to are replaced, never
// changed (admission: but written, which a view does not read).
type unitViewSource struct {
	unit      *schedulingv1alpha1.QueueUnit
	queue     string
	rule      queueunit.QuotaRule
	request   corev1.ResourceList
	admission *admission
	problem   string
	// position in its queue's order, 0: not waiting there.
	position int
	// reason is the core's wait reason, rendered by view.
	reason scheduler.WaitText
	// podsHeld, for a leaving unit, is what its job's pods hold (pods.go).
	podsHeld corev1.ResourceList
}

// viewSource is the view source of r, whose key is key, with c.mu held.
func (c *views) viewSource(key string, r *unitRecord, position int) unitViewSource {
	src := unitViewSource{unit: r.unit, queue: r.queue, rule: r.rule, request: r.request, admission: r.admission, problem: r.problem, position: position}
	if r.leaving {
		src.podsHeld = c.pods.heldByPods(r).Requests
	}
	if r.problem == "" && r.inCore && viewPhase(r) == schedulingv1alpha1.Enqueued {
		src.reason = c.core.WaitReasonText(key)
	}
	return src
}

func (src *unitViewSource) view() api.UnitView {
	u := src.unit
	v := api.UnitView{Namespace: u.Namespace, Name: u.Name, Queue: src.queue, QuotaRule: string(src.rule), Phase: phaseShown(u, src.admission),
		Request: src.request, Resource: u.Spec.Resource, PodState: u.Status.PodState, Position: src.position}
	if u.Spec.Priority != nil {
		v.Priority = *u.Spec.Priority
	}
	switch {
	case src.podsHeld != nil: // leaving: charged what its pods hold
		v.Request = src.podsHeld
	case src.admission != nil && !queueunit.HoldsQuota(u): // admitted, the write in flight
		v.Request, v.PartialAdmission = src.admission.charged, queueunit.PartialNote(u, src.admission.partial)
		v.TopologyAssignments = src.admission.topology
	case queueunit.ResizedSinceAdmitted(u):
		v.Request = queueunit.Charged(u) // its spec (Resource) waits to be queued again
	case queueunit.HoldsQuota(u):
		partial := queueunit.PartialCounts(u)
		v.Request, v.PartialAdmission = queueunit.HeldWith(u, partial), queueunit.PartialNote(u, partial)
	}
	if v.TopologyAssignments == nil && queueunit.HoldsQuota(u) {
		v.TopologyAssignments = u.Status.TopologyAssignments
	}
	v.Reason = src.reason.For(u.Namespace)
	if src.problem != "" {
		v.Reason = src.problem
	}
	return v
}
