package admission

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/pkg/podledger"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/quota"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	"github.com/koord-queue/koord-queue/pkg/topology"
	"github.com/koord-queue/koord-queue/pkg/watched"
)

// unitRecord is what the Cache keeps of a QueueUnit besides what the core
// keeps. There is one per unit, so what few units have is kept beside it,
// in the Cache's maps: when a unit's backoff ends (backingOff) and when it
// passes its maximum execution time (deadlineOf); in every record, these
// two would be 48 bytes more, 3.2 MB at 50,000 units with the size class.
type unitRecord struct {
	unit *schedulingv1alpha1.QueueUnit // the latest object seen
	// key is the unit's namespace/name, the one string every index of the
	// Cache and the core keeps of it.
	key string
	// queue the unit waits in or is admitted to; empty when no quota serves it.
	queue string
	// rule chose queue; unless the unit named it (rule.Named()), it is
	// re-resolved when quotas change.
	rule    queueunit.QuotaRule
	request corev1.ResourceList
	// inCore: the unit is in the scheduler.
	inCore bool
	// warnedNoQueue: the QueueNotFound event was already raised.
	warnedNoQueue bool
	// leaving: the unit holds no quota of its own, yet pods of its job do
	// (pods.go): it is charged what they hold until they are gone. deleted:
	// the unit is gone from the API server and kept only for that.
	leaving, deleted bool
	// owes are the writes that only inform the unit is owed (owed.go).
	owes owed
	// ask is what the unit's pod sets ask of a topology; nil when none
	// asks for a level (topologies.askers holds those with one).
	ask *unitAsk
	// admission the core decided and the API server has not shown back yet
	// (the unit is "assumed" admitted); nil otherwise.
	admission *admission
	// eviction decided and not yet seen on the API server; nil otherwise.
	eviction *eviction
	// problem is why the unit cannot be queued at all, for its status.
	problem string
	// jobType is what the unit is counted under in Cache.jobTypes; zero:
	// not counted.
	jobType jobType
	// listed is where Cache.lists has it (listing.go).
	listed listing
}

// backoff is a unit held out of its queue until a time.
type backoff struct {
	r     *unitRecord
	until time.Time
}

// backoffs are the units held out of their queue while their backoff
// runs, by key, each until when, so a cycle looks only at them, not at
// every unit.
type backoffs map[string]backoff

// release takes out each unit whose backoff is over at now, and places it.
func (b backoffs) release(now time.Time, place func(r *unitRecord)) {
	for key, o := range b {
		if !now.Before(o.until) {
			delete(b, key)
			place(o.r)
		}
	}
}

// next is when the first backoff ends, zero if none.
func (b backoffs) next() time.Time {
	var next time.Time
	for _, o := range b {
		if next.IsZero() || o.until.Before(next) {
			next = o.until
		}
	}
	return next
}

// queueRecord is what the Cache keeps of a Queue.
type queueRecord struct {
	queue     *schedulingv1alpha1.Queue
	configErr error
}

// queueRecords are the Queues the Cache keeps, by name.
type queueRecords map[string]*queueRecord

// checksFor lists the Queue's admission checks that select the unit.
func (qs queueRecords) checksFor(queue string, u *schedulingv1alpha1.QueueUnit) (queueunit.Checks, error) {
	q, ok := qs[queue]
	if !ok {
		return queueunit.Checks{}, nil
	}
	names, err := selectedChecks(q.queue, u)
	return queueunit.Checks{Names: names, Known: err == nil}, err
}

// unitPlacer places a unit again, with c.mu held: the Cache, for a part
// that changed what the unit is charged.
type unitPlacer interface {
	place(r *unitRecord)
}

// podPlacer places again, with c.mu held, a unit whose pods changed: the
// Cache, for the pods' part.
type podPlacer interface {
	placeForPods(r *unitRecord)
}

// quotaUser uses a quota again, with c.mu held: the Cache, for the part
// that computes the trees' capacities.
type quotaUser interface {
	useQuota(eq *elasticquotav1alpha1.ElasticQuota)
}

// askerPlacer places again, with c.mu held, a unit asking for a topology
// level whose Topology in force may have changed, and has the loop look at
// it: the Cache, for the topologies' part.
type askerPlacer interface {
	placeAsker(r *unitRecord)
}

// Cache is the decision core fed from the API server, safe for concurrent use.
// What it keeps itself is the translation of API objects into the core's
// units and quotas, and the lock (cache.go); each concern besides is a part
// of its own, a field below with the fields only it writes, given of the
// rest only what it reads. A part that changes how a unit or a quota is
// charged asks the Cache to place it again through a one-method interface
// (unitPlacer, podPlacer, quotaUser, askerPlacer); the Cache's answers
// that a part gives ask that part (parts.go), and Setup feeds the objects
// only one part reads (ElasticQuotaProfiles) to that part.
type Cache struct {
	mu     sync.Mutex
	core   *scheduler.Scheduler
	quotas *quotaIndex
	// quotaObjects by name, for the visibility API and errors: of several
	// ElasticQuotas with one name, the one in use (see quotaCopies).
	quotaObjects map[string]*elasticquotav1alpha1.ElasticQuota
	// quotaCopies are every ElasticQuota of a name, the one in use first.
	// Names are global in Koordinator, whose webhook refuses a second
	// quota of a name in another namespace; koord-queue reads objects it did
	// not validate, so it uses the oldest and reports the others.
	quotaCopies map[string][]*elasticquotav1alpha1.ElasticQuota
	quotaErrs   map[string]error
	queues      queueRecords
	units       map[string]*unitRecord
	// backingOff are the units held out of their queue while their backoff
	// runs.
	backingOff backoffs
	// wake has room for one signal: events coalesce while a cycle runs.
	wake wakeup
	// dirty units changed since the loop last looked at them.
	dirty map[string]struct{}
	// log reports what only a bug causes: the core's books disagreeing with
	// its quota engine (scheduler.ErrBookkeeping). The zero Logger discards.
	log logr.Logger

	// The parts below own what only they keep, and are given of the rest
	// only what they read; they work under mu, as their methods say.
	decisions          decisions          // the writer's side of the decisions (record.go)
	clusterCapacity    clusterCapacity    // the nodes' capacity, the root's (capacity.go)
	podCharges         podCharges         // what pods hold (pods.go)
	treeCapacities     treeCapacities     // trees' capacities from profiles (pools.go)
	topologies         topologies         // placements within topology domains (topology.go)
	owedWrites         owedWrites         // the writes that only inform (owed.go)
	executionDeadlines executionDeadlines // maximum execution times (deadlines.go)
	jobTypeCounts      jobTypeCounts      // v1.8's metrics (v18metrics.go)
	forecasts          forecasts          // the forecast's snapshot and learner (forecast.go)
	views              views              // the visibility API and the status writers (views.go)
	domainViews        domainViews        // the visibility API's views of topology domains (domainviews.go)
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	c := &Cache{
		core:         scheduler.New(),
		quotas:       newQuotaIndex(),
		quotaObjects: map[string]*elasticquotav1alpha1.ElasticQuota{},
		quotaCopies:  map[string][]*elasticquotav1alpha1.ElasticQuota{},
		quotaErrs:    map[string]error{},
		queues:       queueRecords{},
		units:        map[string]*unitRecord{},
		backingOff:   backoffs{},
		wake:         make(wakeup, 1),
		dirty:        map[string]struct{}{},
	}
	c.decisions = decisions{mu: &c.mu, units: c.units, queues: c.queues, core: c.core, wake: c.wake, placer: c}
	c.clusterCapacity = clusterCapacity{mu: &c.mu, core: c.core, decisions: &c.decisions, wake: c.wake, nodes: newCapacitySum()}
	c.owedWrites = owedWrites{mu: &c.mu, units: c.units, owed: owedQueue{wake: make(wakeup, 1)}}
	c.executionDeadlines = executionDeadlines{mu: &c.mu, units: c.units, wake: c.wake, deadlineOf: map[*unitRecord]time.Time{}}
	c.podCharges = podCharges{mu: &c.mu, units: c.units, core: c.core, quotas: c.quotas, wake: c.wake, placer: c,
		pods: podledger.New(), claims: map[ownerKey]string{}, unclaimed: map[podledger.Group]string{}}
	c.treeCapacities = treeCapacities{mu: &c.mu, quotaObjects: c.quotaObjects, user: c, pools: newPools(), placer: &c.topologies}
	c.topologies = topologies{mu: &c.mu, units: c.units, core: c.core, quotaObjects: c.quotaObjects, profiles: c.treeCapacities.pools.profiles, pods: &c.podCharges,
		wake: c.wake, placer: c, byName: map[string]*schedulingv1alpha1.Topology{}, nodeFacts: map[string]topology.Node{},
		askers: map[*unitRecord]struct{}{}}
	c.core.SetPlacer(&c.topologies)
	c.forecasts = forecasts{mu: &c.mu, units: c.units, core: c.core, nodes: &c.topologies, queues: c.queues, views: &c.views, now: time.Now}
	c.views = views{mu: &c.mu, units: c.units, core: c.core, quotas: c.quotas, quotaObjects: c.quotaObjects,
		quotaCopies: c.quotaCopies, quotaErrs: c.quotaErrs, queues: c.queues, queueNamespace: schedulingv1alpha1.QueueNamespace,
		pods: &c.podCharges, forecasts: &c.forecasts, lists: newUnitLists()}
	c.domainViews = domainViews{mu: &c.mu, topologies: &c.topologies, now: time.Now}
	c.jobTypeCounts = jobTypeCounts{mu: &c.mu, core: c.core, quotaObjects: c.quotaObjects, queues: c.queues, jobTypes: map[jobType]int{}}
	return c
}

// Wake is signalled whenever something happened that could change a decision.
func (c *Cache) Wake() <-chan struct{} { return c.wake }

// wakeup has room for one signal: signals coalesce until it is read.
type wakeup chan struct{}

// notify signals w unless a signal waits already.
func (w wakeup) notify() {
	select {
	case w <- struct{}{}:
	default:
	}
}

// UpsertElasticQuota records a quota and re-maps units that fell back to one.
// An update that changes nothing koord-queue reads (koord-scheduler's
// figures, rewritten about once a second) only replaces the object kept.
func (c *Cache) UpsertElasticQuota(eq *elasticquotav1alpha1.ElasticQuota) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sameNamespace := func(o *elasticquotav1alpha1.ElasticQuota) bool { return o.Namespace == eq.Namespace }
	if i := slices.IndexFunc(c.quotaCopies[eq.Name], sameNamespace); i >= 0 && !watched.ElasticQuotaChanged(c.quotaCopies[eq.Name][i], eq) {
		if c.quotaObjects[eq.Name] == c.quotaCopies[eq.Name][i] {
			c.quotaObjects[eq.Name] = eq
		}
		c.quotaCopies[eq.Name][i] = eq
		metrics.WatchedUpdates.WithLabelValues(metrics.KindElasticQuota, metrics.UpdateIgnored).Inc()
		return
	}
	metrics.WatchedUpdates.WithLabelValues(metrics.KindElasticQuota, metrics.UpdateApplied).Inc()
	copies := slices.DeleteFunc(c.quotaCopies[eq.Name], sameNamespace)
	copies = append(copies, eq)
	slices.SortFunc(copies, quota.OlderFirst)
	c.quotaCopies[eq.Name] = copies
	if copies[0] != eq {
		c.wake.notify() // a duplicate: only reported
		return
	}
	c.useQuota(eq)
}

// useQuota makes eq the quota of its name, with c.mu held.
func (c *Cache) useQuota(eq *elasticquotav1alpha1.ElasticQuota) {
	topologyMoved := topologyNamingChanged(c.quotaObjects[eq.Name], eq)
	spec, err := quota.SpecFromElasticQuota(eq)
	spec, err = c.treeCapacities.treeSpec(eq.Namespace, spec, err)
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
	c.decisions.forgetIfShrunk()
	c.remapFallbacks()
	c.topologies.quotasChanged()
	if topologyMoved {
		c.topologies.namingChanged()
	}
	c.wake.notify()
}

// DeleteElasticQuota forgets a quota; of several of its name, the next
// oldest is used.
func (c *Cache) DeleteElasticQuota(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	copies := slices.DeleteFunc(c.quotaCopies[name], func(o *elasticquotav1alpha1.ElasticQuota) bool { return o.Namespace == namespace })
	if len(copies) > 0 {
		c.quotaCopies[name] = copies
		if used := c.quotaObjects[name]; used == nil || used.Namespace == namespace {
			c.useQuota(copies[0])
		}
		c.wake.notify()
		return
	}
	delete(c.quotaCopies, name)
	gone := c.quotaObjects[name]
	c.quotas.remove(name)
	delete(c.quotaObjects, name)
	delete(c.quotaErrs, name)
	metrics.QuotaResource.DeletePartialMatch(prometheus.Labels{"quota": name})
	c.core.DeleteQuota(name)
	c.decisions.forgetIfShrunk()
	c.remapFallbacks()
	c.topologies.quotasChanged()
	if topologyNamingChanged(gone, nil) {
		c.topologies.namingChanged()
	}
	c.wake.notify()
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
	c.wake.notify()
}

// DeleteQueue forgets a Queue; its waiting units wait for it to come back.
func (c *Cache) DeleteQueue(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.queues, name)
	c.core.DeleteQueue(name)
	c.wake.notify()
}

// UpsertNode counts a node's allocatable while it is Ready and schedulable
// (watched.NodeCapacity), and, when koord-queue computes the quota trees'
// capacities, in the pools whose selector chooses it. An update that leaves
// all that as it was (a heartbeat; a label, unless trees are computed)
// changes nothing.
func (c *Cache) UpsertNode(n *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	capacity := watched.NodeCapacity(n)
	clusterChanged := c.clusterCapacity.changed(n.Name, capacity)
	poolChanged := c.treeCapacities.upsertPoolNode(n)
	topologyChanged := c.topologies.upsertTopologyNode(n)
	if !clusterChanged && !poolChanged && !topologyChanged {
		metrics.WatchedUpdates.WithLabelValues(metrics.KindNode, metrics.UpdateIgnored).Inc()
		return
	}
	metrics.WatchedUpdates.WithLabelValues(metrics.KindNode, metrics.UpdateApplied).Inc()
	if clusterChanged {
		c.clusterCapacity.setNode(n.Name, capacity)
	}
	if poolChanged {
		c.treeCapacities.refreshTrees()
	}
	if topologyChanged {
		c.wake.notify()
	}
}

// DeleteNode stops counting a node.
func (c *Cache) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.topologies.deleteTopologyNode(name)
	c.clusterCapacity.deleteNode(name)
	c.treeCapacities.deletePoolNode(name)
}

// UpsertUnit records a QueueUnit as the API server has it.
func (c *Cache) UpsertUnit(u *schedulingv1alpha1.QueueUnit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := u.Namespace + "/" + u.Name
	r := c.units[key]
	if r == nil {
		r = &unitRecord{key: key}
		c.units[key] = r
	}
	if queueunit.HoldsQuota(u) && (r.unit == nil || !queueunit.HoldsQuota(r.unit)) && u.Status.LastAllocateTime != nil {
		c.views.seenAdmitted(u)
	}
	if q, _ := c.quotas.quotaNameOf(u); q != "" {
		c.forecasts.observeFinished(r.unit, u, q)
	}
	gaveBack := r.unit != nil && len(r.unit.Status.TopologyAssignments) > 0 && len(u.Status.TopologyAssignments) == 0
	r.unit, r.deleted = u, false
	c.podCharges.claim(r)
	c.jobTypeCounts.countJobType(r, jobTypeOf(u))
	if queueunit.HoldsQuota(u) || (r.admission != nil && u.Status.Attempts > r.admission.unit.Status.Attempts) {
		// The admission was written and seen back. Attempts tells it even
		// when the informer skipped the admitted state (a relist shows only
		// the latest): evicted or finished since, the unit no longer holds
		// quota, and the record must not keep it charged.
		c.decisions.dropAdmission(r)
	}
	if !queueunit.HoldsQuota(u) {
		r.eviction = nil // evicted, finished or released
	}
	if gaveBack {
		c.core.WakeUnplaced() // the room its domains kept for its pods is free
	}
	if rs := u.Status.RequeueState; rs != nil && rs.RequeueAt != nil && !queueunit.HoldsQuota(u) {
		c.backingOff[key] = backoff{r: r, until: rs.RequeueAt.Time}
	} else {
		delete(c.backingOff, key)
	}
	c.place(r)
	c.executionDeadlines.setDeadline(r)
	c.dirty[key] = struct{}{}
	c.wake.notify()
}

// DeleteUnit forgets a unit; whatever it held is released, but what its
// job's pods still hold, which stays charged until they are gone (pods.go).
func (c *Cache) DeleteUnit(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := namespace + "/" + name
	r, ok := c.units[key]
	if !ok {
		return
	}
	c.decisions.dropAdmission(r)
	c.jobTypeCounts.countJobType(r, jobType{})
	c.owedWrites.forgetOwed(r)
	delete(c.executionDeadlines.deadlineOf, r)
	delete(c.backingOff, key)
	r.deleted = true
	if held := c.podCharges.heldByPods(r); !held.IsZero() {
		c.place(r) // leaving: charged what its pods hold
	} else {
		c.forgetUnit(r)
	}
	c.wake.notify()
}

// forgetUnit drops a deleted unit's record, with c.mu held.
func (c *Cache) forgetUnit(r *unitRecord) {
	if r.inCore {
		c.core.DeleteUnit(r.key)
		r.inCore = false
	}
	c.podCharges.stopLeaving(r)
	c.podCharges.unclaim(r)
	c.topologies.forgetAsker(r)
	c.views.relist(r, true)
	delete(c.units, r.key)
}

// placeForPods places r again after what its pods hold changed, with c.mu
// held: a unit deleted whose last pod left is forgotten.
func (c *Cache) placeForPods(r *unitRecord) {
	if r.deleted && c.podCharges.heldByPods(r).IsZero() {
		c.forgetUnit(r)
		return
	}
	c.place(r)
	c.dirty[r.key] = struct{}{}
}

// placeAsker places r, which asks for a topology level, again, with c.mu
// held: the Topology in force for it may have changed.
func (c *Cache) placeAsker(r *unitRecord) {
	c.place(r)
	c.dirty[r.key] = struct{}{}
}

// remapFallbacks re-resolves the queue of units that did not name their quota.
func (c *Cache) remapFallbacks() {
	for key, r := range c.units {
		if !r.rule.Named() {
			c.place(r)
			c.dirty[key] = struct{}{}
		}
	}
	c.podCharges.rechargeUnclaimed()
}

// place puts a unit where it belongs in the core: pending in its queue,
// admitted, or out (finished, inactive, backing off after its admission
// checks or its running timeout, or unmapped).
func (c *Cache) place(r *unitRecord) {
	defer c.views.relist(r, false)
	u := r.unit
	key := r.key
	chargedIn, chargedRule := r.queue, r.rule
	r.queue, r.rule = c.quotas.quotaNameOf(u)
	r.problem = ""
	request := queueunit.Request(u)
	sized := u // the unit as it is charged
	if a := r.admission; a != nil && (r.queue != a.queue || !equality.Semantic.DeepEqual(a.request, request) ||
		a.partial != nil && !equality.Semantic.DeepEqual(queueunit.HeldWith(u, a.partial), a.charged)) {
		if a.sent {
			// Its write may still land as decided: charged as decided (in
			// its queue, at its size) until the API server answers, and
			// then placed again as the unit is.
			r.queue, r.rule, request, sized = a.queue, chargedRule, a.request, a.unit
		} else {
			// Admitted at another size or in another queue and not sent
			// yet: the decision no longer holds (charging the new size
			// would skip the fit check), so the writer skips it and the
			// unit is decided again as it is now.
			c.decisions.undoAdmission(r)
		}
	}
	r.request = request
	holds := !r.deleted && (queueunit.HoldsQuota(u) || r.admission != nil)
	held := c.podCharges.heldByPods(r)
	leaving := !holds && !held.IsZero()
	if (holds || leaving) && r.inCore && chargedIn != "" && r.queue != chargedIn {
		// A unit holding quota stays charged where it was admitted until it
		// leaves (the core keeps it in that queue), whatever serves its
		// namespace now: its quota deleted, its pods still run and count.
		r.queue, r.rule = chargedIn, chargedRule
	}

	if leaving {
		if su, ok := c.podCharges.placeLeaving(r, held); ok {
			c.upsertCore(r, su)
		}
		return
	}
	c.podCharges.stopLeaving(r)

	var amountsErr error // a negative amount, which a unit written by hand may ask
	if !holds {
		amountsErr = queueunit.CheckAmounts(u)
	}
	// What its pod sets ask of a topology: checked only while it waits, as
	// a unit holding quota was placed when it was admitted.
	_, topologyErr := c.topologies.checkTopology(r)
	if holds {
		topologyErr = nil
	}
	out := false
	switch phase := u.EffectivePhase(); {
	case queueunit.Finished(phase):
		out = true // finished: quota released
	case u.DeletionTimestamp != nil && !holds:
		out = true
	case !u.IsActive() && !holds:
		out = true
		r.problem = "inactive: spec.active is false"
	case amountsErr != nil:
		out = true
		r.problem = amountsErr.Error()
	case r.queue == "" && !holds:
		out = true
		r.problem = "no ElasticQuota serves this unit: label it quota.scheduling.koordinator.sh/name=<quota>"
	case topologyErr != nil:
		out = true
		r.problem = topologyErr.Error()
	case phase == schedulingv1alpha1.TimeoutBackoff && !holds:
		// Sent back after its running timeout: its extension queues it
		// again (Enqueued) when its backoff ends (queueunit.EndBackoff).
		out = true
		r.problem = "backing off after its running timeout; koord-queue-controllers queues it again (Enqueued) when the backoff ends"
	case !holds && c.backingOff[key].r == r:
		out = true
		r.problem = fmt.Sprintf("backing off until %s after admission checks sent it back", c.backingOff[key].until.UTC().Format(time.RFC3339))
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
		// Running as wait-for-pods-running means it: every admitted pod
		// set's pods on nodes, not the phase (which says one pod runs);
		// the pods say so before the extension's count is written.
		Running: queueunit.FullyRunning(u) || holds && c.podCharges.fullyScheduled(r),
	}
	if holds && !su.Running && queueunit.Admitted(u.EffectivePhase()) {
		// Not for a unit reserved for its checks or evicted: pods are not
		// what it waits for.
		su.NotRunning = queueunit.RunningShortfall(u)
	}
	switch {
	case r.admission != nil:
		su.Partial = r.admission.partial
	case holds:
		su.Partial = queueunit.PartialCounts(u) // what a restart finds written
	}
	if su.Partial != nil || queueunit.MayAdmitPartially(sized) {
		su.PodSets = corePodSets(sized)
	}
	if r.admission == nil && queueunit.ResizedSinceAdmitted(u) {
		// Resized while it holds quota: charged what it was admitted with
		// until it is queued again, never a new size without a fit check.
		su.Request, su.Partial, su.PodSets = queueunit.Charged(u), nil, nil
	}
	if u.Status.LastAllocateTime != nil {
		su.AdmitTime = u.Status.LastAllocateTime.Time
	}
	if holds && !held.IsZero() {
		chargedByPods(&su, sized, held)
	}
	if holds && u.Status.QuotaTree != "" && !c.quotas.Exists(r.queue) {
		// Its quota was deleted before this process saw it: it still
		// counts in the tree it was admitted in.
		c.core.KeepInTree(r.queue, u.Status.QuotaTree)
	}
	c.upsertCore(r, su)
}

// upsertCore gives the core r as su, with c.mu held.
func (c *Cache) upsertCore(r *unitRecord, su scheduler.Unit) {
	key := r.key
	if err := c.core.UpsertUnit(su); err != nil {
		// The core refused the unit (and dropped it if it had it).
		r.problem, r.inCore = err.Error(), false
		if errors.Is(err, scheduler.ErrBookkeeping) {
			c.log.Error(err, "The decision core refused a unit: a bug; the unit is counted again at its next change", "queueUnit", key, "queue", r.queue)
		}
		return
	}
	r.inCore = true
}

// corePodSets are u's pod sets as the core needs them for partial admission.
func corePodSets(u *schedulingv1alpha1.QueueUnit) []scheduler.PodSet {
	out := make([]scheduler.PodSet, len(u.Spec.PodSets))
	for i := range u.Spec.PodSets {
		ps := &u.Spec.PodSets[i]
		out[i] = scheduler.PodSet{Name: ps.Name, Count: ps.Count, PodRequest: resources.PodRequests(&ps.Template.Spec)}
		if ps.MinCount != nil {
			out[i].MinCount = *ps.MinCount
		}
	}
	return out
}

// cycle runs one scheduling cycle of at most limit admissions (negative: no
// limit) and records its decisions on their units, for the writer.
func (c *Cache) cycle(now time.Time, limit int) scheduler.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.backingOff.release(now, c.place)
	c.topologies.beginPlacement()
	res := c.core.CycleLimited(now, limit)
	for _, e := range res.Errors {
		// Each such unit waits, saying why (its wait reason), and is tried
		// again at the next event.
		c.log.Error(e.Err, "The quota engine refused a decision of the core: a bug", "queueUnit", e.Unit, "queue", e.Queue)
	}
	for _, a := range res.Admissions {
		r := c.units[a.Unit]
		c.decisions.record(r, a)
		c.views.relist(r, false)
	}
	c.topologies.endPlacement(res.Admissions)
	for _, p := range res.Preemptions {
		for _, v := range p.Victims {
			if r := c.units[v]; r != nil {
				r.eviction = &eviction{reason: schedulingv1alpha1.EvictedByPreemption, message: p.Reason.For(r.unit.Namespace), preemptor: p.Preemptor}
			}
		}
	}
	for _, next := range []time.Time{c.backingOff.next(), c.executionDeadlines.nextDeadline()} {
		if !next.IsZero() && (res.NextWakeup.IsZero() || next.Before(res.NextWakeup)) {
			res.NextWakeup = next
		}
	}
	return res
}

// followUp is what the loop must do for units that changed, besides cycles.
type followUp struct {
	explain      []string // may have a new reason to wait
	deactivate   []string // inactive but holding quota: an eviction recorded
	checksPassed []string // Reserved with every check Ready
	checksFailed []string // Reserved with a check Retry or Rejected
	// pin: holds quota charged by a fallback rule (its namespace's quota,
	// say) and spec.queue does not say where yet.
	pin []string
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
		current, _ := c.queues.checksFor(r.queue, u)
		switch ready, failed := queueunit.ChecksVerdict(u, current); {
		case ready:
			f.checksPassed = append(f.checksPassed, key)
		case failed != nil:
			f.checksFailed = append(f.checksFailed, key)
		}
		if !u.IsActive() && holds && r.eviction == nil && !(u.EffectivePhase() == schedulingv1alpha1.Enqueued && queueunit.Evicted(u)) {
			r.eviction = &eviction{reason: schedulingv1alpha1.EvictedByDeactivation,
				message: "evicted: spec.active is false; quota is released when the job's pods are gone"}
			f.deactivate = append(f.deactivate, key)
		}
		if !holds && r.admission == nil && !queueunit.Finished(u.EffectivePhase()) {
			// A finished unit never waits: its op would only hold memory
			// (a restart's 20,000 finished units, 3.7 MB) until it is
			// found to have nothing to say.
			f.explain = append(f.explain, key)
		}
		if holds && r.admission == nil && r.inCore && r.queue != "" && !r.rule.Named() && u.Spec.Queue == "" {
			// The pin written after its admission is one best-effort
			// write; without it a restart after its quota's deletion would
			// find the unit in no queue and stop counting what its pods use.
			f.pin = append(f.pin, key)
		}
	}
	// A new map, not clear: one that held a burst's keys (every unit, on
	// start) would keep their room, and clear would walk it every time.
	c.dirty = map[string]struct{}{}
	return f
}
