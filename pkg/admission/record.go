package admission

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
)

// A unit's decisions live in its unitRecord, and nowhere else: the cycle
// records them there (record), the writer reads them in one call (decision) and
// reports back (admissionWritten, forget, evictionWritten), and the
// informer's view of the unit clears them once the API server shows them.

// admission is an admission the core decided and the API server has not
// shown back yet. Its fields do not change once recorded, but written.
type admission struct {
	// unit as it was when decided: the write is based on it, so the
	// optimistic lock refuses it if the unit changed since.
	unit    *schedulingv1alpha1.QueueUnit
	queue   string
	request corev1.ResourceList
	// partial, for a partial admission, is the pods each pod set that gives
	// some up is admitted with (scheduler.Admission.Partial); nil: whole.
	partial map[string]int32
	// charged is what the core charged: request, or what the admitted pods
	// of a partial admission ask for (queueunit.HeldWith).
	charged corev1.ResourceList
	// tree is the quota tree of the queue's quota (quota.Engine.TreeID),
	// written with the admission (status.quotaTree).
	tree string
	// topology is where the pod sets that ask for a topology level go
	// (topology.go), written with the admission
	// (status.topologyAssignments).
	topology []schedulingv1alpha1.PodSetTopologyAssignment
	// sent: the writer has taken it and its write may land, so it stays
	// charged as decided until the API server answers (admissionWritten,
	// or forget on a refusal): a shrink of the room, a resize or a move
	// may withdraw only an admission not yet sent.
	sent bool
	// written: the write finished (the informer is yet to show it), so it
	// no longer counts against the writer's budget.
	written bool
}

// eviction is an eviction decided and not yet seen on the API server. Its
// fields do not change once recorded, but written.
type eviction struct {
	reason, message, preemptor string
	// deactivate: set spec.active to false first, so that the unit is not
	// queued again once evicted (its maximum execution time passed).
	deactivate bool
	// written: the write finished, or found nothing to evict.
	written bool
}

// decision is everything the writer needs of one unit, read under one lock.
type decision struct {
	// unit is the latest object seen.
	unit  *schedulingv1alpha1.QueueUnit
	queue string
	// named: the unit names its quota itself, rather than being charged by
	// a fallback that a quota change re-resolves.
	named bool
	// assumed: admitted by the core, and not yet seen admitted on the API
	// server (the write may have finished).
	assumed bool
	// admission to write, if one is decided and not yet written.
	admission *admission
	// eviction to write, if one is decided and not yet written.
	eviction *eviction
	// checks are the queue's admission checks that select the unit;
	// checksErr says why they could not be read (a bad selector).
	checks    queueunit.Checks
	checksErr error
}

// decisions is the writer's side of the decisions recorded in the units'
// records: what it takes to write, and what it reports back.
type decisions struct {
	mu    *sync.Mutex            // the Cache's
	units map[string]*unitRecord // the Cache's records
	// queues are the Cache's, for the admission checks a decision carries.
	queues queueRecords
	core   *scheduler.Scheduler
	wake   wakeup // the Cache's
	// placer places a unit again once its admission is undone: the Cache.
	placer unitPlacer
	// unwritten counts the admissions decided whose write has not finished.
	unwritten int
	// shrinksSeen is the core's quota.Engine.Shrinks as last seen with
	// admissions unwritten (forgetIfShrunk; record, at the first of them).
	shrinksSeen uint64
}

// record records on r the admission a the core decided, with c.mu held.
func (c *decisions) record(r *unitRecord, a scheduler.Admission) {
	if c.unwritten == 0 {
		c.shrinksSeen = c.core.Quotas().Shrinks() // the room it is decided in
	}
	charged := r.request // what the core was given, unless it admitted fewer pods
	if len(a.Partial) > 0 {
		charged = queueunit.HeldWith(r.unit, a.Partial)
	}
	r.admission = &admission{unit: r.unit, queue: r.queue, request: r.request,
		partial: a.Partial, charged: charged, tree: c.core.Quotas().TreeID(a.Quota)}
	c.unwritten++
}

// forgetIfShrunk is called, with c.mu held, after every change to the
// core's quota tree or cluster capacity. If the change shrank the room of
// some quota (quota.Engine.Shrinks: a max lowered, a parent changed, a node
// lost or NotReady, the root's total fallen, a non-lending min raised,
// lending turned off, a quota turned invalid), admissions decided in the
// old room and not yet handed to the API server are not written in the new
// one: they are decided again. With none decided it leaves the tree unbuilt
// (quota.Engine builds it at its next read), so a start's thousands of
// quotas build it once; record takes the count when the cycle decides the
// first.
func (c *decisions) forgetIfShrunk() {
	if c.unwritten == 0 {
		return
	}
	if n := c.core.Quotas().Shrinks(); n != c.shrinksSeen {
		c.shrinksSeen = n
		c.forgetUnwritten()
	}
}

// forgetUnwritten undoes every admission decided and not yet sent to the
// API server, with c.mu held; the units are decided again. One sent may
// land whatever the room is now, so it stays charged until it is answered.
func (c *decisions) forgetUnwritten() {
	for _, r := range c.units {
		if r.admission != nil && !r.admission.sent {
			c.undoAdmission(r)
			c.placer.place(r)
		}
	}
}

// decision returns what the writer needs to write key's decisions.
func (c *decisions) decision(key string) (decision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.decisionLocked(key)
}

// sendAdmission is decision for the write of key's admission: the admission
// returned is sent from now on (admission.sent), charged until the write is
// answered.
func (c *decisions) sendAdmission(key string) (decision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.decisionLocked(key)
	if d.admission != nil {
		d.admission.sent = true
	}
	return d, ok
}

func (c *decisions) decisionLocked(key string) (decision, bool) {
	r, ok := c.units[key]
	if !ok {
		return decision{}, false
	}
	d := decision{unit: r.unit, queue: r.queue, named: r.rule.Named(), assumed: r.admission != nil}
	if r.admission != nil && !r.admission.written {
		d.admission = r.admission
	}
	if r.eviction != nil && !r.eviction.written {
		d.eviction = r.eviction
	}
	if d.admission != nil || r.unit.Status.Phase == schedulingv1alpha1.Reserved {
		d.checks, d.checksErr = c.queues.checksFor(r.queue, r.unit)
	}
	return d, true
}

// unwrittenAdmissions counts the admissions decided whose write has not
// finished.
func (c *decisions) unwrittenAdmissions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unwritten
}

// WritingAdmissions reports whether admissions decided wait for their
// write: a backlog admitted as fast as the client's rate allows, whose
// budget writes that only report (Queue status) should leave to them.
func (c *decisions) WritingAdmissions() bool { return c.unwrittenAdmissions() > 0 }

// admissionWritten records that a's write finished, and wakes the loop,
// which may have waited for room in the writer's budget.
func (c *decisions) admissionWritten(key string, a *admission) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.units[key]; ok && r.admission == a && !a.written {
		a.written = true
		c.unwritten--
	}
	c.wake.notify()
}

// forget undoes admission a, which could not be written, and places the
// unit again as its latest object says: deactivated, being deleted or
// finished meanwhile, it leaves the core instead of waiting there to be
// admitted once more.
func (c *decisions) forget(key string, a *admission) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.units[key]; ok && r.admission == a {
		c.undoAdmission(r)
		c.placer.place(r)
	}
	c.wake.notify()
}

// undoAdmission takes back r's admission from the record and the core, with
// c.mu held; the caller places the unit again.
func (c *decisions) undoAdmission(r *unitRecord) {
	placed := r.admission != nil && len(r.admission.topology) > 0
	c.dropAdmission(r)
	c.core.ForgetAdmission(r.key)
	if placed {
		c.core.WakeUnplaced() // the room its domains kept is free
	}
}

// dropAdmission clears r's admission, with c.mu held.
func (c *decisions) dropAdmission(r *unitRecord) {
	if r.admission != nil && !r.admission.written {
		c.unwritten--
	}
	r.admission = nil
}

// evictionWritten records that e's write finished, or found nothing to
// evict. The record stays until the unit is seen to give its quota back, so
// the unit is not evicted again meanwhile.
func (c *decisions) evictionWritten(key string, e *eviction) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.units[key]; ok && r.eviction == e {
		e.written = true
	}
}
