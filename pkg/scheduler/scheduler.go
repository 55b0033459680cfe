package scheduler

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/quota"
)

var (
	// ErrInvalidUnit is returned for a unit without a key or a queue, or
	// with a key the scheduler keeps for itself (see reservationKey).
	ErrInvalidUnit = errors.New("invalid unit")
	// ErrBookkeeping wraps an error of the quota engine met where the
	// scheduler's own records say it cannot happen (see Scheduler): a bug,
	// never a user's mistake, for the controller to log.
	ErrBookkeeping = errors.New("quota bookkeeping failed (a koord-queue bug)")
)

// bookkeeping wraps an error of the quota engine as ErrBookkeeping; both
// stay visible to errors.Is.
func bookkeeping(err error) error { return fmt.Errorf("%w: %w", ErrBookkeeping, err) }

type unitState struct {
	u Unit
	// req is what the unit asks for while it waits, and what it holds
	// once admitted (less for a partial admission). need is the least it
	// can be admitted with: its policy item's request (see partial.go).
	req, need quota.Vector
	// sets are its pod sets, nil when it has none that add up to its request.
	sets *podSets
	// admitted is true while it holds quota; inQueue while it waits in an
	// existing queue's order.
	admitted, inQueue bool
	// quota is where the unit is charged (admitted) or counted as pending.
	quota string
	// preemptState is its side of preemption (preemptions.go): shared
	// noPreemption, read only, until it takes part in one (preempting).
	// Few units ever do, and the state is a quarter of a unit's bytes.
	*preemptState
	// reason is the latest reason it waits, as last sent out in a Wait:
	// a Wait goes out only when it changes.
	reason string
	// quotaWait is set while reason is a quota shortage; WaitReason
	// re-explains it fresh. Only a queue's head waits for quota, so it is
	// kept apart: 56 of a unit's bytes otherwise.
	quotaWait *quotaWait
}

// quotaWait is what a head's quota shortage was explained for: this band,
// these binding quotas (cause) and this preemptor its room is held for
// (heldFor).
type quotaWait struct {
	band    policy.Band
	cause   []string
	heldFor string
}

type queueState struct {
	spec  QueueSpec
	quota string
	q     *policy.Queue
	// notRunning lists admitted units whose pods do not run yet, for
	// wait-for-pods-running.
	notRunning map[string]struct{}
	admitted   int
	nextPromo  time.Time
	// patient is the unit of the queue that holds a reservation while it
	// waits to preempt (patience.go), or nil; kept by preemptions.
	patient *unitState
	// cycle scheduling: its share and its head's rank (line.go) as last taken
	share     float64
	headPrio  int32
	headSince int64
	entry     lineEntry // its entry in the line, kept to spare an allocation
	// parkedState is where it is parked (parked.go).
	parkedState
	// scheduled and unschedulable count the queue's turns that admitted a
	// unit and those that ended without (Attempts).
	scheduled, unschedulable uint64
	// asides counts its units set aside in the running cycle (placement.go).
	asides int
}

// Scheduler is the decision core. Create it with New.
//
// The engine holds a charge under a unit's key exactly while the unit is
// admitted, and under reservationKey(key) exactly while it is reserved;
// UpsertUnit refuses keys that could be taken for a reservation. So the
// engine's Charge, Admit and Resize cannot fail on the scheduler's behalf
// unless that bookkeeping is broken (or the engine was charged directly
// through Quotas). If one does, it is not ignored: it is wrapped in
// ErrBookkeeping and returned by UpsertUnit or reported in Result.Errors.
type Scheduler struct {
	engine *quota.Engine
	queues map[string]*queueState
	units  map[string]*unitState
	// orphans are the units whose queue does not exist (orphans.go).
	orphans orphans
	// sizer reads units' requests and pod sets as the engine's vectors
	// (partial.go).
	sizer sizer
	// preemption: who may evict whom and when, and the room held
	// meanwhile (preemption.go).
	preemption preemption
	// turns: the cycle, which queues take a turn and in what order, and
	// each turn's steps (cycle.go).
	turns turns
}

// New returns a Scheduler with an empty quota tree.
func New() *Scheduler {
	s := &Scheduler{
		engine:  quota.NewEngine(),
		queues:  map[string]*queueState{},
		units:   map[string]*unitState{},
		orphans: newOrphans(),
	}
	s.sizer = sizer{engine: s.engine}
	s.turns = turns{
		engine: s.engine,
		queues: s.queues,
		units:  s.units,
		sizer:  s.sizer,
		dirty:  map[string]struct{}{},
		timed:  map[string]struct{}{},
		parked: newParkedQueues(),

		unplaced: map[string]struct{}{},
	}
	s.preemption = newPreemptor(&s.turns)
	s.turns.preemption = s.preemption
	return s
}

// SetReclaimProtection keeps units admitted less than d ago from being
// reclaimed by other quotas (KoordQueueConfiguration's
// defaultReclaimProtectTime); 0 turns it off. In-queue preemption is not
// affected. A head that needs a protected unit waits, and is reconsidered
// at the next event.
func (s *Scheduler) SetReclaimProtection(d time.Duration) { s.preemption.setReclaimProtection(d) }

// Quotas is the quota engine, for queries (Runtime, Used, Errors, Explain).
// Change quotas only through the Scheduler, so affected queues are woken,
// and never charge or release through it: the scheduler owns every charge.
func (s *Scheduler) Quotas() *quota.Engine { return s.engine }

// UpsertQuota adds or changes an ElasticQuota.
func (s *Scheduler) UpsertQuota(spec quota.Spec) {
	width := s.engine.Len()
	s.engine.UpsertQuota(spec)
	s.widened(width)
	s.turns.wakeAll()
}

// UpsertQuotas is UpsertQuota for many quotas at once, rebuilding the tree
// once (a restart, or a benchmark, with thousands of quotas).
func (s *Scheduler) UpsertQuotas(specs []quota.Spec) {
	width := s.engine.Len()
	s.engine.UpsertQuotas(specs)
	s.widened(width)
	s.turns.wakeAll()
}

// KeepInTree says that units admitted in quota, which does not exist, were
// admitted in the quota tree tree (quota.Engine.KeepInTree).
func (s *Scheduler) KeepInTree(quota, tree string) { s.engine.KeepInTree(quota, tree) }

// DeleteQuota removes an ElasticQuota.
func (s *Scheduler) DeleteQuota(name string) {
	s.engine.DeleteQuota(name)
	s.turns.wakeAll()
}

// SetClusterCapacity sets the root's capacity (allocatable of Ready,
// schedulable nodes).
func (s *Scheduler) SetClusterCapacity(capacity corev1.ResourceList) {
	width := s.engine.Len()
	s.engine.SetClusterCapacity(capacity)
	s.widened(width)
	s.turns.wakeAll()
}

// UpsertQueue adds or changes a queue. A policy change keeps every unit's place.
func (s *Scheduler) UpsertQueue(spec QueueSpec) {
	quotaName := spec.Quota
	if quotaName == "" {
		quotaName = spec.Name
	}
	s.turns.configured(spec)
	qs, ok := s.queues[spec.Name]
	if !ok {
		qs = &queueState{q: policy.NewQueue(spec.Config), quota: quotaName, notRunning: map[string]struct{}{}}
		qs.spec = spec
		s.queues[spec.Name] = qs
		waiting, admitted := s.orphans.claim(spec.Name)
		for _, k := range waiting {
			s.enqueue(s.units[k])
		}
		for k := range admitted {
			qs.admitted++
			if !s.units[k].u.Running {
				qs.notRunning[k] = struct{}{}
			}
		}
		s.turns.wake(spec.Name)
		return
	}
	qs.spec = spec
	qs.q.SetConfig(spec.Config)
	if qs.quota != quotaName {
		if qs.patient != nil {
			s.preemption.unitChanged(qs.patient, patienceOver) // its reservation is in the old quota
		}
		// Move pending demand; admitted units stay charged where they are.
		for _, it := range qs.q.Items(0) {
			us := s.units[it.Key]
			s.engine.RemovePending(us.quota, us.req)
			s.engine.AddPending(quotaName, us.req)
			us.quota = quotaName
		}
		qs.quota = quotaName
	}
	s.turns.wake(spec.Name)
}

// DeleteQueue removes a queue; its waiting units wait for it to come back.
// Admitted units keep their quota.
func (s *Scheduler) DeleteQueue(name string) {
	qs, ok := s.queues[name]
	if !ok {
		return
	}
	for _, it := range qs.q.Items(0) {
		us := s.units[it.Key]
		s.dequeue(us)
		// Its preemption cannot end in an admission without the queue:
		// over, so that what it asks is no longer held against every
		// queue of its tree. Back with its queue, it looks for victims
		// afresh.
		s.preemption.unitChanged(us, preemptionOver)
		s.orphans.wait(us)
	}
	if qs.admitted > 0 {
		for _, us := range s.units {
			if us.admitted && us.u.Queue == name {
				s.orphans.adoptLater(us)
			}
		}
	}
	s.turns.forgetQueue(qs, name)
	s.preemption.forgetQueue(qs, name)
	delete(s.queues, name)
}

// UpsertUnit adds or updates a unit. Admitted false on a unit that held
// quota releases it: the unit finished its eviction and waits again.
//
// An error refuses the unit: it is not in the scheduler afterwards (a unit
// already here leaves, giving back what it held), and the error says why,
// in words for its status. ErrInvalidUnit and quota.ErrRequestTooLarge are
// the unit's own doing; ErrBookkeeping is a bug, to log as well.
func (s *Scheduler) UpsertUnit(u Unit) error {
	if err := s.upsertUnit(u); err != nil {
		s.DeleteUnit(u.Key)
		return err
	}
	return nil
}

func (s *Scheduler) upsertUnit(u Unit) error {
	if u.Key == "" || u.Queue == "" {
		return fmt.Errorf("unit %q in queue %q: %w", u.Key, u.Queue, ErrInvalidUnit)
	}
	for _, prefix := range []string{reservationPrefix, podsPrefix} {
		if strings.HasPrefix(u.Key, prefix) {
			return fmt.Errorf("unit %q: keys starting with %q are the scheduler's own: %w", u.Key, prefix, ErrInvalidUnit)
		}
	}
	if err := quota.CheckRequest(u.Request); err != nil {
		// Never counted, so never charged as whatever it wraps around to.
		return err // it becomes the unit's own message: no need to name it
	}
	u.PodSets = slices.Clone(u.PodSets)
	u.Partial = maps.Clone(u.Partial)
	req, need, sets := s.sizer.vectors(u)
	us, ok := s.units[u.Key]
	if !ok {
		us = &unitState{u: u, req: req, need: need, sets: sets, preemptState: &noPreemption}
		s.units[u.Key] = us
		if u.Admitted {
			return s.restoreAdmitted(us)
		}
		s.enqueue(us)
		return nil
	}
	old := us.u
	switch {
	case us.admitted && !u.Admitted:
		s.release(us)
		us.u, us.req, us.need, us.sets = u, req, need, sets
		s.enqueue(us)
	case us.admitted:
		us.sets = sets
		return s.updateAdmitted(us, old, u, req)
	case u.Admitted:
		// Admitted elsewhere (for example restored before its queue
		// existed): count it.
		s.dequeue(us)
		s.orphans.stopWaiting(us)
		us.u, us.req, us.need, us.sets = u, req, need, sets
		return s.restoreAdmitted(us)
	default:
		if old.Queue != u.Queue || old.Priority != u.Priority || !old.EnqueueTime.Equal(u.EnqueueTime) ||
			!equalVec(us.req, req) || !equalVec(us.need, need) {
			if old.Queue != u.Queue {
				// Its preemption was for its old queue's quota.
				s.preemption.unitChanged(us, preemptionOver)
			}
			s.dequeue(us)
			s.orphans.stopWaiting(us)
			us.u, us.req, us.need, us.sets = u, req, need, sets
			s.enqueue(us)
		} else {
			us.u, us.sets = u, sets
		}
	}
	return nil
}

// DeleteUnit forgets a unit: finished, failed, deleted, or evicted and gone.
// Whatever it held is released.
func (s *Scheduler) DeleteUnit(key string) {
	us, ok := s.units[key]
	if !ok {
		return
	}
	if us.admitted {
		s.release(us)
	} else {
		s.dequeue(us)
		s.orphans.stopWaiting(us)
	}
	s.preemption.unitChanged(us, preemptionOver)
	delete(s.units, key)
}

// podsPrefix starts the engine key of what pods no unit claims hold
// (ChargePods). No namespace/name has a colon, and UpsertUnit refuses keys
// that start with it.
const podsPrefix = "pods:"

// ChargePods charges quotaName what pods that no unit claims hold, as
// koord-scheduler charges every pod to some quota: key names them (their
// owner, say); an empty quotaName is the root, so that they are taken out
// of what the classic tree hands out, as koord-scheduler takes the pods of
// its system and default quotas out of its total. The charge replaces the
// one key had; an empty request gives it back. Such a charge is no unit's,
// so it is never a victim: only its pods' going gives it back.
func (s *Scheduler) ChargePods(key, quotaName string, request corev1.ResourceList) {
	ek := podsPrefix + key
	if quotaName == "" {
		quotaName = elasticquotav1alpha1.RootQuotaName
	}
	v := s.engine.Vector(request)
	if c, ok := s.engine.Charged(ek); ok {
		if c.Quota == quotaName && !isZeroFrom(v, 0) {
			if err := s.engine.Resize(ek, v); err != nil {
				s.turns.errs = append(s.turns.errs, UnitError{Unit: ek, Queue: quotaName, Err: bookkeeping(err)})
			}
			if quota.Fits(v, c.Request) {
				s.turns.released(c.Quota)
			}
			return
		}
		s.engine.Release(ek)
		s.turns.released(c.Quota)
	}
	if isZeroFrom(v, 0) {
		return
	}
	if err := s.engine.Charge(quota.Charge{Key: ek, Quota: quotaName, Request: v, Namespace: namespaceOf(key)}); err != nil {
		s.turns.errs = append(s.turns.errs, UnitError{Unit: ek, Queue: quotaName, Err: bookkeeping(err)})
	}
}

// ForgetAdmission undoes an admission the controller could not write: the
// quota is released and the unit waits again in its old place.
func (s *Scheduler) ForgetAdmission(key string) {
	us, ok := s.units[key]
	if !ok || !us.admitted {
		return
	}
	s.release(us)
	waiting := us.u
	waiting.Admitted, waiting.Partial = false, nil
	us.req, us.need, us.sets = s.sizer.vectors(waiting)
	s.enqueue(us)
}

// WaitReason says why a waiting unit is not admitted, in words for its
// status; "" if it holds quota or is unknown.
func (s *Scheduler) WaitReason(key string) string {
	return s.WaitReasonText(key).For(namespaceOf(key))
}

// WaitText is a wait reason before it is rendered for a reader (For). It
// keeps nothing of the scheduler, so a caller that holds a lock around the
// scheduler may render it after releasing it. The zero WaitText is the
// empty reason.
type WaitText struct {
	text Text
	// behind: the unit waits because others come first (behind), at
	// position of the queue's length, ahead (a key) just before it.
	behind       bool
	queue, ahead string
	position, of int
}

// For renders the reason for readers of the namespace ns (Text.For).
func (w WaitText) For(ns string) string {
	if w.behind {
		return behindText(w.queue, w.position, w.of, w.ahead).For(ns)
	}
	return w.text.For(ns)
}

// Behind reports whether the unit only waits its turn: others come first
// in its queue. Any other reason says the unit was tried and does not fit,
// or cannot be tried.
func (w WaitText) Behind() bool { return w.behind }

// WaitReasonText is WaitReason before it is rendered for the unit's
// namespace. Waiting behind others, the commonest reason, it takes no
// allocation: a caller may take the reasons of a page of units while it
// holds its lock, and render them after.
func (s *Scheduler) WaitReasonText(key string) WaitText {
	us, ok := s.units[key]
	if !ok || us.admitted {
		return WaitText{}
	}
	qs, ok := s.queues[us.u.Queue]
	if !ok {
		return WaitText{text: words(fmt.Sprintf("queue %q does not exist", us.u.Queue))}
	}
	if err := s.engine.Err(qs.quota); err != nil {
		return WaitText{text: words(err.Error())}
	}
	if us.quotaWait != nil && len(us.victims) == 0 {
		if why := s.engine.Explain(qs.quota, us.need); why != "" {
			return WaitText{text: words(why + partialNote(us) + bandNote(us.quotaWait.band))}
		}
	}
	if us.reason != "" {
		return WaitText{text: words(us.reason)}
	}
	if never := s.engine.NeverFits(qs.quota, us.need); never != "" {
		return WaitText{text: words(never + partialNote(us))}
	}
	w := WaitText{behind: true, queue: qs.spec.Name, position: qs.q.Position(key), of: qs.q.Len()}
	if ahead, ok := qs.q.At(w.position - 1); ok {
		w.ahead = ahead.Key
	}
	return w
}

// behindText says where a unit waits because others come first, naming
// the one just ahead of it (ahead, "" for none): "waiting in queue q at
// position 3 of 7, behind ns/b" ("behind a unit of another namespace" when
// it is not of the reader's: the message lands in the unit's status,
// text.go).
func behindText(queue string, position, of int, ahead string) Text {
	msg := say("waiting in queue %s at position %d of %d", queue, position, of)
	if ahead != "" {
		msg = say("%s, behind %s", msg, unitRef(ahead))
	}
	return msg
}

// Pending lists up to limit waiting units of a queue in order (all when
// limit <= 0).
func (s *Scheduler) Pending(queue string, limit int) []PendingUnit {
	out, _ := s.PendingFrom(queue, 0, limit)
	return out
}

// PendingFrom is a page of a queue's waiting units: up to limit of them
// (all when limit <= 0) from 0-based place offset on, in order, and how
// many wait in the queue. O(log n + limit).
func (s *Scheduler) PendingFrom(queue string, offset, limit int) (units []PendingUnit, total int) {
	qs, ok := s.queues[queue]
	if !ok {
		return nil, 0
	}
	offset = max(offset, 0)
	items := qs.q.ItemsFrom(offset, limit)
	out := make([]PendingUnit, len(items))
	for i, it := range items {
		out[i] = PendingUnit{Key: it.Key, Priority: it.Priority, Position: offset + i + 1}
	}
	return out, qs.q.Len()
}

// Position is a waiting unit's 1-based place in its queue, 0 if it is not waiting there.
func (s *Scheduler) Position(key string) int {
	us, ok := s.units[key]
	if !ok || !us.inQueue {
		return 0
	}
	qs, ok := s.queues[us.u.Queue]
	if !ok {
		return 0
	}
	return qs.q.Position(key)
}

// QueueCounts is how many units of a queue wait and how many hold quota.
func (s *Scheduler) QueueCounts(queue string) (pending, admitted int) {
	qs, ok := s.queues[queue]
	if !ok {
		return s.orphans.counts(queue)
	}
	return qs.q.Len(), qs.admitted
}

// Attempts counts the queue's turns since it was added: those that
// admitted a unit (scheduled), and those that ended without, its head
// waiting (unschedulable: it does not fit, waits for victims or for the
// queue's admitted units to run, or its quota is invalid). A queue parked
// until an event is not tried meanwhile, so it adds nothing while it waits.
// A queue that does not exist has none.
func (s *Scheduler) Attempts(queue string) (scheduled, unschedulable uint64) {
	if qs, ok := s.queues[queue]; ok {
		return qs.scheduled, qs.unschedulable
	}
	return 0, 0
}

// IsAdmitted reports whether the unit holds quota.
func (s *Scheduler) IsAdmitted(key string) bool {
	us, ok := s.units[key]
	return ok && us.admitted
}

// restoreAdmitted counts a unit that holds quota already (admitted before a
// restart, or while it was not here). us is known, neither admitted nor
// waiting. It is charged first, so a refused charge changes nothing.
func (s *Scheduler) restoreAdmitted(us *unitState) error {
	qs := s.queues[us.u.Queue]
	quotaName := us.u.Queue
	if qs != nil {
		quotaName = qs.quota
	}
	if us.u.AdmitTime.IsZero() {
		us.u.AdmitTime = us.u.EnqueueTime
	}
	if err := s.engine.Charge(quota.Charge{Key: us.u.Key, Quota: quotaName, Request: us.req,
		Priority: us.u.Priority, AdmitTime: us.u.AdmitTime, Namespace: namespaceOf(us.u.Key)}); err != nil {
		return bookkeeping(err)
	}
	us.admitted, us.quota = true, quotaName
	if qs != nil {
		qs.admitted++
		if !us.u.Running {
			qs.notRunning[us.u.Key] = struct{}{}
		}
	} else {
		s.orphans.adoptLater(us)
	}
	s.preemption.wakeReclaimWaiters(us.quota)
	return nil
}

func (s *Scheduler) updateAdmitted(us *unitState, old, u Unit, req quota.Vector) error {
	u.AdmitTime = old.AdmitTime
	// An admitted unit stays in the queue that admitted it until it leaves,
	// whatever its labels say meanwhile (spec.queue pins it the same way):
	// that queue counts it, charges it and gates on it.
	u.Queue = old.Queue
	us.u = u
	if old.Priority != u.Priority {
		s.engine.SetPriority(u.Key, u.Priority)
	}
	if !equalVec(us.req, req) && (quota.Fits(req, us.req) || u.HeldByPods) {
		// It shrank while admitted: count what it holds now. One that grew
		// keeps its charge: a bigger one needs a fit check, which only a
		// new admission makes (it is queued again to grow); but what its
		// pods hold is held already, fit or not.
		if err := s.engine.Resize(u.Key, req); err != nil {
			return bookkeeping(err) // admitted, yet the engine held nothing for it
		}
		us.req, us.need = req, req
		s.turns.released(us.quota)
	}
	if qs := s.queues[old.Queue]; qs != nil && old.Running != u.Running {
		if u.Running {
			delete(qs.notRunning, u.Key)
			if qs.spec.Config.WaitForPodsRunning {
				s.turns.wake(old.Queue)
			}
		} else {
			qs.notRunning[u.Key] = struct{}{}
		}
	} else if qs != nil && !u.Running && old.NotRunning != u.NotRunning && qs.spec.Config.WaitForPodsRunning {
		s.turns.wake(old.Queue) // its head's wait reason quotes NotRunning
	}
	return nil
}

// release gives back an admitted unit's quota and does the bookkeeping of
// preemption: a victim gone may complete its preemptor's reclaim.
func (s *Scheduler) release(us *unitState) {
	s.engine.Release(us.u.Key)
	us.admitted = false
	if qs := s.queues[us.u.Queue]; qs != nil {
		qs.admitted--
		delete(qs.notRunning, us.u.Key)
		s.turns.wake(us.u.Queue)
	} else {
		s.orphans.released(us)
	}
	if us.evicting {
		s.preemption.unitChanged(us, victimGone)
	}
	s.turns.released(us.quota)
}

func at(v quota.Vector, i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

func (s *Scheduler) enqueue(us *unitState) {
	us.reason, us.quotaWait = "", nil
	qs, ok := s.queues[us.u.Queue]
	if !ok {
		s.orphans.wait(us)
		return
	}
	us.quota = qs.quota
	us.inQueue = true
	us.newWait()
	// The policy sees the least the unit can be admitted with: a unit that
	// fits only partially is served like one that fits.
	qs.q.Upsert(policy.Item{Key: us.u.Key, Priority: us.u.Priority, EnqueueTime: us.u.EnqueueTime, Request: us.need})
	if p := qs.patient; p != nil && qs.q.Position(us.u.Key) < qs.q.Position(p.u.Key) {
		s.preemption.unitChanged(p, patienceOver) // it no longer heads the queue
	}
	s.engine.AddPending(qs.quota, us.req)
	s.turns.wake(us.u.Queue)
}

func (s *Scheduler) dequeue(us *unitState) {
	s.preemption.unitChanged(us, leftQueue)
	if !us.inQueue {
		return
	}
	us.inQueue = false
	if qs, ok := s.queues[us.u.Queue]; ok {
		qs.q.Remove(us.u.Key)
		s.turns.wake(us.u.Queue)
	}
	s.engine.RemovePending(us.quota, us.req)
}

// addKey adds key to the set of group in sets.
func addKey(sets map[string]map[string]struct{}, group, key string) {
	set, ok := sets[group]
	if !ok {
		set = map[string]struct{}{}
		sets[group] = set
	}
	set[key] = struct{}{}
}

// dropKey removes key from the set of group in sets, and the set once empty.
func dropKey(sets map[string]map[string]struct{}, group, key string) {
	if set, ok := sets[group]; ok {
		delete(set, key)
		if len(set) == 0 {
			delete(sets, group)
		}
	}
}

// gateShut reports whether a wait-for-pods-running queue admits nothing now:
// a unit it admitted does not run yet.
func (qs *queueState) gateShut() bool {
	return qs.spec.Config.WaitForPodsRunning && len(qs.notRunning) > 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func equalVec(a, b quota.Vector) bool {
	n := max(len(a), len(b))
	for i := 0; i < n; i++ {
		var x, y int64
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return false
		}
	}
	return true
}
