package framework

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// The gate counts a job's pods from the manager's cache, and the cache
// shows a pod a moment after the API server made it. Two pods of a job
// created one right after the other (the Job controller makes them in
// bursts) would each find the pod set one short of full, and both be let
// through; a pod whose gate openGates removed a moment ago still looks
// gated. SlotExpectations closes that window: every pod the gate lets take
// a slot is expected until the cache shows it, and counted meanwhile.

// slotExpectationTTL is how long a pod let take a slot is expected before
// it is forgotten unseen. The webhook lets a pod in before the API server
// has stored it: a later admission step (a ResourceQuota, another webhook)
// may still refuse it, and a pod deleted before the cache saw it is never
// seen. Until then the pod keeps its slot, so a pod of its pod set may wait
// at the gate that long; the cache shows a stored pod well within it.
const slotExpectationTTL = 10 * time.Second

// SlotExpectations remembers, per job, the pods the gate let take a slot
// of their pod set that the cache does not show taking one yet: pods the
// webhook let in ungated (by pod set: the webhook does not know a pod's
// name, which the API server may generate after it) and pods whose gate
// was opened (by UID). One value serves the pod webhook and every job
// reconciler of a process, so that each counts what the others let
// through; replicas of the controllers do not share it.
//
// A pod the webhook let in is seen when the cache first shows a pod of
// its job and pod set that it did not show before and that does not wait
// at the gate; an opened pod when the cache shows it without the gate, or
// no longer shows it.
type SlotExpectations struct {
	clock clock.PassiveClock

	mu sync.Mutex
	// turns serialize the decisions on one job's pods, so that each counts
	// what the one before let through; a job's turn exists while a
	// decision holds or awaits it. One job's decisions never wait on
	// another's.
	turns     map[types.UID]*jobTurn
	jobs      map[types.UID]*jobExpectations
	lastSweep time.Time
}

// jobTurn is one job's turn: held by one decision at a time.
type jobTurn struct {
	sync.Mutex
	// decisions holding or awaiting it, under SlotExpectations.mu.
	decisions int
}

// jobExpectations is what is expected of one job's pods.
type jobExpectations struct {
	// known are the job's pods the cache has shown since the first pod
	// was expected: a pod not among them is new.
	known map[types.UID]bool
	// created: when each pod let in ungated and not seen yet was let in,
	// by pod set, oldest first.
	created map[string][]time.Time
	// opened: the pods whose gate was opened that the cache shows gated.
	opened map[types.UID]openedPod
}

type openedPod struct {
	podSet string
	at     time.Time
}

// NewSlotExpectations returns an empty SlotExpectations reading time from
// c.
func NewSlotExpectations(c clock.PassiveClock) *SlotExpectations {
	return &SlotExpectations{clock: c, turns: map[types.UID]*jobTurn{}, jobs: map[types.UID]*jobExpectations{}}
}

// Lock holds the decisions on the pods of the job with UID job until the
// returned JobSlots is unlocked.
func (e *SlotExpectations) Lock(job types.UID) *JobSlots {
	e.mu.Lock()
	turn := e.turns[job]
	if turn == nil {
		turn = &jobTurn{}
		e.turns[job] = turn
	}
	turn.decisions++
	e.mu.Unlock()
	turn.Lock()
	e.mu.Lock()
	exp := e.jobs[job]
	e.mu.Unlock()
	return &JobSlots{e: e, job: job, turn: turn, exp: exp, now: e.clock.Now()}
}

// JobSlots is what is expected of one job's pods, held by one decision.
type JobSlots struct {
	e    *SlotExpectations
	job  types.UID
	turn *jobTurn
	exp  *jobExpectations
	now  time.Time
	// listed is the job's pods as the cache showed them last (Observe).
	listed []corev1.Pod
}

// Observe brings the expectations up to date with pods, the job's pods as
// the cache shows them now; podSetOf names a pod's pod set.
func (s *JobSlots) Observe(pods []corev1.Pod, podSetOf func(*corev1.Pod) string) {
	s.listed = pods
	exp := s.exp
	if exp == nil {
		return
	}
	exp.expire(s.now)
	var listed map[types.UID]bool
	if len(exp.opened) > 0 {
		listed = make(map[types.UID]bool, len(pods))
	}
	for i := range pods {
		p := &pods[i]
		if listed != nil {
			listed[p.UID] = true
		}
		if _, ok := exp.opened[p.UID]; ok {
			if !hasAdmissionGate(p) {
				delete(exp.opened, p.UID)
			}
			continue
		}
		if exp.known[p.UID] {
			continue
		}
		exp.known[p.UID] = true
		if hasAdmissionGate(p) {
			continue
		}
		set := podSetOf(p)
		if created := exp.created[set]; len(created) > 0 {
			exp.created[set] = created[1:]
		}
	}
	for uid := range exp.opened {
		if !listed[uid] {
			delete(exp.opened, uid) // gone
		}
	}
}

// Pending is how many pods of podSet are expected to take a slot that the
// pods last observed do not show taking one.
func (s *JobSlots) Pending(podSet string) int32 {
	if s.exp == nil {
		return 0
	}
	n := int32(len(s.exp.created[podSet]))
	for _, o := range s.exp.opened {
		if o.podSet == podSet {
			n++
		}
	}
	return n
}

// Created expects a pod of podSet the webhook lets in ungated now.
func (s *JobSlots) Created(podSet string) {
	exp := s.expectations()
	exp.created[podSet] = append(exp.created[podSet], s.now)
}

// Opened expects pod, of podSet, whose gate is being opened, to take a
// slot.
func (s *JobSlots) Opened(pod *corev1.Pod, podSet string) {
	s.expectations().opened[pod.UID] = openedPod{podSet: podSet, at: s.now}
}

// IsOpened reports whether pod is expected by Opened.
func (s *JobSlots) IsOpened(pod *corev1.Pod) bool {
	if s.exp == nil {
		return false
	}
	_, ok := s.exp.opened[pod.UID]
	return ok
}

// NotOpened forgets pod, expected by Opened, whose gate stayed shut.
func (s *JobSlots) NotOpened(pod *corev1.Pod) {
	if s.exp != nil {
		delete(s.exp.opened, pod.UID)
	}
}

// Recheck is how long until the first pod expected now is forgotten
// unseen, and its slot counts free; 0 if none is expected.
func (s *JobSlots) Recheck() time.Duration {
	if s.exp == nil {
		return 0
	}
	first, ok := s.exp.oldest()
	if !ok {
		return 0
	}
	return max(first.Add(slotExpectationTTL).Sub(s.now), time.Millisecond)
}

// Unlock ends the decision. A job nothing is expected of is forgotten.
func (s *JobSlots) Unlock() {
	e := s.e
	e.mu.Lock()
	switch {
	case s.exp != nil && s.exp.empty():
		delete(e.jobs, s.job)
	case s.exp != nil:
		e.jobs[s.job] = s.exp
	}
	if s.turn.decisions--; s.turn.decisions == 0 {
		delete(e.turns, s.job)
	}
	if s.now.Sub(e.lastSweep) >= slotExpectationTTL {
		e.lastSweep = s.now
		e.sweep(s.now)
	}
	e.mu.Unlock()
	s.turn.Unlock()
}

// expectations are the job's, made on the first pod expected: every pod
// the cache shows then is known.
func (s *JobSlots) expectations() *jobExpectations {
	if s.exp == nil {
		s.exp = &jobExpectations{known: make(map[types.UID]bool, len(s.listed)),
			created: map[string][]time.Time{}, opened: map[types.UID]openedPod{}}
		for i := range s.listed {
			s.exp.known[s.listed[i].UID] = true
		}
	}
	return s.exp
}

// sweep forgets what has expired of the jobs no decision has looked at
// since, so that a job whose pods never come is not remembered for ever.
// A job a decision holds or awaits is left to it. Call with e.mu held.
func (e *SlotExpectations) sweep(now time.Time) {
	for job, exp := range e.jobs {
		if _, decided := e.turns[job]; decided {
			continue
		}
		if exp.expire(now); exp.empty() {
			delete(e.jobs, job)
		}
	}
}

// expire forgets the pods expected since longer than slotExpectationTTL.
func (exp *jobExpectations) expire(now time.Time) {
	live := func(at time.Time) bool { return now.Sub(at) < slotExpectationTTL }
	for set, created := range exp.created {
		i := 0
		for i < len(created) && !live(created[i]) {
			i++
		}
		if i == len(created) {
			delete(exp.created, set)
		} else {
			exp.created[set] = created[i:]
		}
	}
	for uid, o := range exp.opened {
		if !live(o.at) {
			delete(exp.opened, uid)
		}
	}
}

func (exp *jobExpectations) empty() bool {
	if len(exp.opened) > 0 {
		return false
	}
	for _, created := range exp.created {
		if len(created) > 0 {
			return false
		}
	}
	return true
}

// oldest is when the pod expected longest was let through.
func (exp *jobExpectations) oldest() (time.Time, bool) {
	var first time.Time
	ok := false
	take := func(at time.Time) {
		if !ok || at.Before(first) {
			first, ok = at, true
		}
	}
	for _, created := range exp.created {
		if len(created) > 0 {
			take(created[0])
		}
	}
	for _, o := range exp.opened {
		take(o.at)
	}
	return first, ok
}
