package admission

import (
	"slices"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
)

// QueueUnits lists a queue's waiting units in the core's order, then its
// units holding quota by namespace/name, and answers a page of that list
// in O(log n + page): the core gives a page of its order by position
// (scheduler.PendingFrom), and the lists below, kept as units change, give
// the rest without looking at every unit.

// listing is where QueueUnits lists a unit besides the core's order; the
// zero listing: nowhere else.
type listing struct {
	queue string
	// holding: among the queue's units holding quota, under phase;
	// otherwise, when phase is set, a unit waiting in the core in a phase
	// other than Enqueued, which an Enqueued page skips.
	holding bool
	phase   schedulingv1alpha1.QueueUnitPhase
}

// unitLists are the listings of every unit, by queue.
type unitLists struct {
	holding map[string]*holdingList
	// oddWaiting: by queue and key, the units waiting in the core whose
	// phase is not Enqueued, with that phase. None today: a unit in
	// TimeoutBackoff, the one waiting phase besides Enqueued that holds
	// nothing, is kept out of the core until it is queued again (place).
	oddWaiting map[string]map[string]schedulingv1alpha1.QueueUnitPhase
}

// holdingList is a queue's units holding quota, by key, and by key within
// each phase.
type holdingList struct {
	all     keySet
	byPhase map[schedulingv1alpha1.QueueUnitPhase]*keySet
}

func newUnitLists() unitLists {
	return unitLists{holding: map[string]*holdingList{}, oddWaiting: map[string]map[string]schedulingv1alpha1.QueueUnitPhase{}}
}

// viewPhase is the phase the visibility API shows for r (phaseShown).
func viewPhase(r *unitRecord) schedulingv1alpha1.QueueUnitPhase {
	return phaseShown(r.unit, r.admission)
}

// phaseShown is the phase the visibility API shows for unit u: its own, or
// Dequeued while an admission a is decided and its write in flight.
func phaseShown(u *schedulingv1alpha1.QueueUnit, a *admission) schedulingv1alpha1.QueueUnitPhase {
	if a != nil && !queueunit.HoldsQuota(u) {
		return schedulingv1alpha1.Dequeued
	}
	return u.EffectivePhase()
}

// relist lists r where it belongs now (nowhere once gone), with c.mu held.
// Called wherever what it is listed by changes: its object, its queue,
// whether the core has it (place), its admission (cycle) and its deletion.
func (c *views) relist(r *unitRecord, gone bool) {
	var now listing
	switch {
	case gone:
	case queueunit.HoldsQuota(r.unit) || r.admission != nil || r.leaving:
		now = listing{queue: r.queue, holding: true, phase: viewPhase(r)}
	case r.inCore && r.unit.EffectivePhase() != schedulingv1alpha1.Enqueued:
		now = listing{queue: r.queue, phase: r.unit.EffectivePhase()}
	}
	if now == r.listed {
		return
	}
	key := r.key
	c.lists.remove(key, r.listed)
	c.lists.add(key, now)
	r.listed = now
}

func (l *unitLists) add(key string, at listing) {
	switch {
	case at.holding:
		h := l.holding[at.queue]
		if h == nil {
			h = &holdingList{byPhase: map[schedulingv1alpha1.QueueUnitPhase]*keySet{}}
			l.holding[at.queue] = h
		}
		h.all.Insert(key)
		s := h.byPhase[at.phase]
		if s == nil {
			s = &keySet{}
			h.byPhase[at.phase] = s
		}
		s.Insert(key)
	case at.phase != "":
		odd := l.oddWaiting[at.queue]
		if odd == nil {
			odd = map[string]schedulingv1alpha1.QueueUnitPhase{}
			l.oddWaiting[at.queue] = odd
		}
		odd[key] = at.phase
	}
}

func (l *unitLists) remove(key string, at listing) {
	switch {
	case at.holding:
		h := l.holding[at.queue]
		h.all.Remove(key)
		h.byPhase[at.phase].Remove(key)
		if h.byPhase[at.phase].Len() == 0 {
			delete(h.byPhase, at.phase)
		}
		if h.all.Len() == 0 {
			delete(l.holding, at.queue)
		}
	case at.phase != "":
		delete(l.oddWaiting[at.queue], key)
		if len(l.oddWaiting[at.queue]) == 0 {
			delete(l.oddWaiting, at.queue)
		}
	}
}

// holdingOf is queue's units holding quota in phase (any phase when
// empty); nil when there are none.
func (l *unitLists) holdingOf(queue string, phase schedulingv1alpha1.QueueUnitPhase) *keySet {
	h := l.holding[queue]
	switch {
	case h == nil:
		return nil
	case phase == "":
		return &h.all
	}
	return h.byPhase[phase]
}

// pendingPage is the page of queue's waiting units in phase (any when
// empty) from 0-based place offset on, up to limit of them (all when
// limit <= 0), with their positions in the queue, and how many wait in
// that phase; with c.mu held. The units in an odd phase are looked up one
// by one (they are few); the others are a page of the core's order.
func (c *views) pendingPage(queue string, phase schedulingv1alpha1.QueueUnitPhase, offset, limit int) ([]scheduler.PendingUnit, int) {
	odd := c.lists.oddWaiting[queue]
	if phase == "" || phase == schedulingv1alpha1.Enqueued && len(odd) == 0 {
		return c.core.PendingFrom(queue, offset, limit)
	}
	var places []scheduler.PendingUnit // the odd units of the page's concern, by position
	for key, p := range odd {
		if phase != schedulingv1alpha1.Enqueued && p != phase {
			continue
		}
		if pos := c.core.Position(key); pos > 0 {
			places = append(places, scheduler.PendingUnit{Key: key, Position: pos})
		}
	}
	slices.SortFunc(places, func(a, b scheduler.PendingUnit) int { return a.Position - b.Position })
	if phase != schedulingv1alpha1.Enqueued {
		page := places[min(offset, len(places)):]
		if limit > 0 && limit < len(page) {
			page = page[:limit]
		}
		return page, len(places)
	}
	// Enqueued: the core's order without the odd units. The page starts
	// at the offset-th Enqueued unit: each odd unit before it moves it one
	// place further.
	start := offset
	skipped := 0
	for _, p := range places {
		if p.Position > start+1 {
			break
		}
		start++
		skipped++
	}
	fetch := 0
	if limit > 0 {
		fetch = limit + len(places) - skipped
	}
	units, total := c.core.PendingFrom(queue, start, fetch)
	units = slices.DeleteFunc(units, func(p scheduler.PendingUnit) bool { _, isOdd := odd[p.Key]; return isOdd })
	if limit > 0 && limit < len(units) {
		units = units[:limit]
	}
	return units, total - len(places)
}
