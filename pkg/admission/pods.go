package admission

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/podledger"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
)

// What holds a node is a pod, so the books follow the pods (the pod ledger,
// pkg/podledger, fed by UpsertPod and DeletePod):
//
//   - a unit holding quota is charged at least what its pods hold (pods
//     grown, or added, past its admission: scheduler.Unit.HeldByPods);
//   - a unit that gave its quota back (finished, evicted, backed off,
//     deleted) or that never had it while pods of its job run (a job
//     un-suspended behind the queue's back) is "leaving": out of its queue,
//     its quota charged what its pods hold until they are gone, so that
//     nobody is admitted into room they still hold;
//   - pods no unit claims are charged where koord-scheduler charges them:
//     their quota, or, for the system and default quotas' pods (or pods of
//     no quota), taken out of what the classic tree hands out.
//
// A pod is a unit's when its template carries the release's annotation
// naming the unit, or when its controller is the unit's job.

// ownerKey is a job as pods name their controller.
type ownerKey struct{ namespace, kind, name string }

// podCharges charges the quotas what pods hold.
type podCharges struct {
	mu    *sync.Mutex            // the Cache's
	units map[string]*unitRecord // the Cache's records
	core  *scheduler.Scheduler
	// quotas are the Cache's, to charge pods no unit claims to their quota.
	quotas *quotaIndex
	wake   wakeup // the Cache's
	// placer places a unit again once what its pods hold changed: the Cache.
	placer podPlacer
	// pods is what the pods hold; claims maps the jobs units are made for,
	// as their pods name their controller, to the units; unclaimed are the
	// groups of pods no unit claims that hold room, and the quota each is
	// charged to ("": the root).
	pods      *podledger.Ledger
	claims    map[ownerKey]string
	unclaimed map[podledger.Group]string
}

// UpsertPod records a pod as the API server has it.
func (c *podCharges) UpsertPod(p *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods.Upsert(podledger.FromPod(p))
	c.podsChanged()
}

// DeletePod forgets a pod: it is gone.
func (c *podCharges) DeletePod(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods.Delete(namespace, name)
	c.podsChanged()
}

// podsChanged brings the books in line with the groups of pods that
// changed, with c.mu held.
func (c *podCharges) podsChanged() {
	for _, g := range c.pods.Drain() {
		if r := c.unitOfGroup(g); r != nil {
			c.placer.placeForPods(r)
			continue
		}
		c.chargeUnclaimed(g)
	}
	c.core.WakeUnplaced() // a pod gone, or moved, may leave room in its domain
	c.wake.notify()
}

// unitOfGroup is the unit whose pods g holds, nil if none.
func (c *podCharges) unitOfGroup(g podledger.Group) *unitRecord {
	if g.Unit != "" {
		return c.units[g.Namespace+"/"+g.Unit]
	}
	if key, ok := c.claims[ownerKey{g.Namespace, g.OwnerKind, g.OwnerName}]; ok {
		return c.units[key]
	}
	return nil
}

// claim records the job r's pods name as their controller, with c.mu held;
// the pods it claims, and those the release named r on, stop being charged
// as nobody's (pods seen before their unit: at a start, the pod feed may
// list before the units' informer).
func (c *podCharges) claim(r *unitRecord) {
	if r.deleted {
		return
	}
	c.stopChargingUnclaimed(podledger.Group{Namespace: r.unit.Namespace, Unit: r.unit.Name})
	ref := r.unit.Spec.ConsumerRef
	if ref == nil {
		return
	}
	owner := ownerKey{r.unit.Namespace, podledger.OwnerKind(ref.APIVersion, ref.Kind), ref.Name}
	if c.claims[owner] == r.key {
		return
	}
	c.claims[owner] = r.key
	c.stopChargingUnclaimed(podledger.Group{Namespace: owner.namespace, OwnerKind: owner.kind, OwnerName: owner.name})
}

// stopChargingUnclaimed drops g's charge as pods nobody claims, if it has
// one, with c.mu held.
func (c *podCharges) stopChargingUnclaimed(g podledger.Group) {
	if _, ok := c.unclaimed[g]; ok {
		c.core.ChargePods(unclaimedKey(g), "", nil)
		delete(c.unclaimed, g)
	}
}

// unclaim forgets the job r claimed, with c.mu held: its pods, if any
// remain, are charged as nobody's.
func (c *podCharges) unclaim(r *unitRecord) {
	ref := r.unit.Spec.ConsumerRef
	if ref == nil {
		return
	}
	owner := ownerKey{r.unit.Namespace, podledger.OwnerKind(ref.APIVersion, ref.Kind), ref.Name}
	if c.claims[owner] != r.key {
		return
	}
	delete(c.claims, owner)
	c.chargeUnclaimed(podledger.Group{Namespace: owner.namespace, OwnerKind: owner.kind, OwnerName: owner.name})
}

// podGroups are the ledger's groups of r's pods: those the release named
// it on, and those its job controls while r claims the job.
func (c *podCharges) podGroups(r *unitRecord) (groups [2]podledger.Group, n int) {
	ns := r.unit.Namespace
	groups[0], n = podledger.Group{Namespace: ns, Unit: r.unit.Name}, 1
	if ref := r.unit.Spec.ConsumerRef; ref != nil {
		owner := ownerKey{ns, podledger.OwnerKind(ref.APIVersion, ref.Kind), ref.Name}
		if c.claims[owner] == r.key {
			groups[1], n = podledger.Group{Namespace: ns, OwnerKind: owner.kind, OwnerName: owner.name}, 2
		}
	}
	return groups, n
}

// heldByPods is what r's pods hold (podGroups).
func (c *podCharges) heldByPods(r *unitRecord) podledger.Tally {
	groups, n := c.podGroups(r)
	t := c.pods.Tally(groups[0])
	for _, g := range groups[1:n] {
		t = t.Plus(c.pods.Tally(g))
	}
	return t
}

// heldOnNodes adds into, per node name, what r's pods hold there (those
// heldByPods counts).
func (c *podCharges) heldOnNodes(r *unitRecord, into map[string]corev1.ResourceList) {
	groups, n := c.podGroups(r)
	for _, g := range groups[:n] {
		c.pods.HeldOnNodes(g, into)
	}
}

// fullyScheduled reports whether the pods of r, a unit admitted to run,
// have every pod set it holds (status.admissions) fully scheduled as the
// pod ledger counts them (podledger.Scheduled): what queueunit.FullyRunning
// reads from admissions[].running, known as soon as the pods change rather
// than once the extension has counted them and its write has come back.
// Only the pods its job controls count, as the extensions count them (a
// unit without a job has none); pods the release named no pod set on count
// for a unit of one pod set.
func (c *podCharges) fullyScheduled(r *unitRecord) bool {
	u := r.unit
	ref := u.Spec.ConsumerRef
	if ref == nil || !queueunit.Admitted(u.EffectivePhase()) || len(u.Status.Admissions) == 0 {
		return false
	}
	job := podledger.ControllerKey(ref.APIVersion, ref.Kind, ref.Name)
	groups, n := c.podGroups(r)
	alone := len(u.Status.Admissions) == 1
	for _, a := range u.Status.Admissions {
		var scheduled int64
		for _, g := range groups[:n] {
			scheduled += int64(c.pods.ScheduledPods(g, a.Name, job))
			if alone {
				scheduled += int64(c.pods.ScheduledPods(g, "", job))
			}
		}
		if scheduled < a.Replicas {
			return false
		}
	}
	return true
}

// placeLeaving makes r, which holds no quota of its own while pods of its
// job still do, leaving, with c.mu held, and returns it as the core is to
// keep it (upsertCore): admitted as what they hold, in the quota their
// label names (else its own), out of its queue, never a victim, its quota
// not handed to anyone until they are gone. A unit no quota serves has its
// pods charged to the root, and is not returned (false).
func (c *podCharges) placeLeaving(r *unitRecord, held podledger.Tally) (scheduler.Unit, bool) {
	if held.Quota != "" {
		// Charged where koord-scheduler charges its pods, by their quota
		// label, whatever the unit's says now.
		r.queue = held.Quota
	}
	r.problem, r.leaving = leavingReason(r, held), true
	if r.queue == "" {
		if r.inCore {
			c.core.DeleteUnit(r.key)
			r.inCore = false
		}
		c.core.ChargePods(leavingKey(r.key), "", held.Requests)
		return scheduler.Unit{}, false
	}
	c.core.ChargePods(leavingKey(r.key), "", nil)
	su := scheduler.Unit{Key: r.key, Queue: r.queue, Request: held.Requests, EnqueueTime: r.unit.CreationTimestamp.Time,
		Admitted: true, Running: true, HeldByPods: true, Leaving: true}
	if r.unit.Spec.Priority != nil {
		su.Priority = *r.unit.Spec.Priority
	}
	return su, true
}

// stopLeaving: r's pods are gone, or it holds quota again; with c.mu held.
func (c *podCharges) stopLeaving(r *unitRecord) {
	if r.leaving {
		c.core.ChargePods(leavingKey(r.key), "", nil)
		r.leaving = false
	}
}

// chargedByPods raises su's charge, that of a unit holding quota, to what
// its pods hold where they hold more than it was admitted with (a template
// grown, pods added): the quota is charged what is on its nodes.
func chargedByPods(su *scheduler.Unit, sized *schedulingv1alpha1.QueueUnit, held podledger.Tally) {
	charge := su.Request
	if su.Partial != nil {
		charge = queueunit.HeldWith(sized, su.Partial)
	}
	if resources.Fits(held.Requests, charge) {
		return
	}
	su.Request, su.Partial, su.PodSets, su.HeldByPods = resources.Max(charge, held.Requests), nil, nil, true
}

// leavingReason says why a leaving unit is out of its queue, or, deleted,
// why it is still shown.
func leavingReason(r *unitRecord, held podledger.Tally) string {
	holds := fmt.Sprintf("%d pod(s) of its job still hold %s of quota %s on their nodes", held.Pods, resources.Describe(held.Requests), r.queue)
	switch {
	case r.deleted:
		return "deleted; " + holds + ", charged until they are gone"
	case queueunit.Finished(r.unit.EffectivePhase()):
		return "finished; " + holds + ", charged until they are gone"
	}
	return "waiting for " + holds + " to leave them: it is queued again once they are gone"
}

// chargeUnclaimed charges the pods of g, which no unit claims, where
// koord-scheduler charges them, with c.mu held.
func (c *podCharges) chargeUnclaimed(g podledger.Group) {
	t := c.pods.Tally(g)
	if t.Bound == 0 {
		c.stopChargingUnclaimed(g)
		return
	}
	q, _ := queueunit.QuotaOf(map[string]string{elasticquotav1alpha1.LabelQuotaName: t.Quota}, "", g.Namespace, c.quotas)
	switch q {
	case elasticquotav1alpha1.SystemQuotaName, elasticquotav1alpha1.DefaultQuotaName:
		q = "" // taken out of what the classic tree hands out
	}
	c.core.ChargePods(unclaimedKey(g), q, t.BoundRequests)
	c.unclaimed[g] = q
}

// rechargeUnclaimed charges every unclaimed group again: a quota change
// may move them (a quota now serves their namespace).
func (c *podCharges) rechargeUnclaimed() {
	for g := range c.unclaimed {
		c.chargeUnclaimed(g)
	}
}

// unqueuedIn is what the pods no unit claims hold on nodes in the tree of
// root, with c.mu held. It walks every such group, so it is asked for a
// tree's root only.
func (c *podCharges) unqueuedIn(root string) corev1.ResourceList {
	e := c.core.Quotas()
	held := corev1.ResourceList{}
	for g, q := range c.unclaimed {
		if q == "" {
			q = elasticquotav1alpha1.RootQuotaName
		}
		if e.TreeRoot(q) == root {
			resources.Add(held, c.pods.Tally(g).BoundRequests)
		}
	}
	if len(held) == 0 {
		return nil
	}
	return held
}

// leavingKey names a leaving unit's charge: its own key, so that the
// charge counts in its namespace.
func leavingKey(unit string) string { return unit }

func unclaimedKey(g podledger.Group) string {
	return g.Namespace + "/" + g.OwnerKind + "/" + g.OwnerName + "/" + g.Unit
}

// ReplacePods makes the Cache's pods these and no other (a relist).
func (c *podCharges) ReplacePods(pods []*corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	slim := make([]podledger.Pod, len(pods))
	for i, p := range pods {
		slim[i] = podledger.FromPod(p)
	}
	c.pods.Replace(slim)
	c.podsChanged()
}
