// Package forecast says when each waiting unit would be admitted, by running
// the decision core (pkg/scheduler) forward from a copy of the live state: a
// scheduler of its own is fed the quotas, queues and units, each admitted
// unit ends when its expected runtime is over, every eviction completes at
// once, and each waiting unit's admission time is recorded as the replay
// reaches it. Like the core it has no clock and no client: the same input
// gives the same forecast.
//
// A forecast is only as good as the runtimes it is given. Each unit's comes
// with its Basis (declared by the user, learned from finished units, or
// unknown); an estimate carries the weakest basis of the ends it waited for,
// and a unit that waits for a unit whose end is unknown gets no time at all.
package forecast

import (
	"container/heap"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/quota"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
)

// Basis says where a runtime, or an estimate built on runtimes, comes from,
// from the surest to the least sure.
type Basis int

const (
	// Declared: the unit's own limit (spec.maximumExecutionTimeSeconds, or
	// its job's active deadline). It may end sooner, never later.
	Declared Basis = iota
	// Learned: the average runtime of the units that finished in the same
	// quota with a request of the same size (Learner).
	Learned
	// Unknown: no limit and nothing learned.
	Unknown
)

func (b Basis) String() string {
	switch b {
	case Declared:
		return "Declared"
	case Learned:
		return "Learned"
	}
	return "Unknown"
}

// Unit is a unit of the live state with how long it runs once admitted.
type Unit struct {
	scheduler.Unit
	// Runtime is how long the unit runs from its admission (AdmitTime for
	// a unit admitted already); ignored when Basis is Unknown.
	Runtime time.Duration
	// Basis is where Runtime comes from.
	Basis Basis
}

// Input is the live state a forecast starts from.
type Input struct {
	// Now is when the forecast starts; nothing is admitted before it.
	Now      time.Time
	Capacity corev1.ResourceList
	Quotas   []quota.Spec
	Queues   []scheduler.QueueSpec
	Units    []Unit
	// Horizon bounds how far ahead the replay goes (0: no bound); a unit
	// not admitted within it gets no time.
	Horizon time.Duration
}

// Estimate is when one waiting unit would be admitted.
type Estimate struct {
	// At is the admission time; zero when the replay did not reach it:
	// it waits for a unit whose end is unknown, or for longer than the
	// horizon.
	At time.Time
	// Basis is the weakest basis of the ends the replay went through up to
	// At; Unknown when At is zero.
	Basis Basis
}

// Run replays in and returns an estimate for every unit not admitted in it
// (those waiting, and, for units preempted during the replay, their
// readmission), by key. Units the replay admits end after their runtime;
// units with an unknown runtime never end in it. Preemptions evict their
// victims at once; a victim is back in its queue and gets an estimate too.
func Run(in Input) map[string]Estimate {
	s := scheduler.New()
	if in.Capacity != nil {
		s.SetClusterCapacity(in.Capacity)
	}
	s.UpsertQuotas(in.Quotas)
	for _, q := range in.Queues {
		s.UpsertQueue(q)
	}
	// Each unit as the replay has it: its input, with what the replay
	// changed of it in state; not a map of Units, which holds about 200
	// bytes more per unit while the replay runs.
	index := make(map[string]int32, len(in.Units))
	state := make([]replayState, len(in.Units))
	unit := func(i int32) Unit {
		u, st := in.Units[i], state[i]
		u.Admitted, u.AdmitTime, u.Running, u.Partial = st.admitted, st.admitTime, st.admitted, st.partial
		return u
	}
	var ends endQueue
	out := map[string]Estimate{}
	for i, u := range in.Units {
		// The replay assumes an admitted unit's pods run: a queue that waits
		// for pods to run (wait-for-pods-running) would otherwise never
		// open again in it.
		state[i] = replayState{admitted: u.Admitted, admitTime: u.AdmitTime, partial: u.Partial}
		u = unit(int32(i))
		if err := s.UpsertUnit(u.Unit); err != nil {
			continue // the live core refused it too: it is not forecast
		}
		index[u.Key] = int32(i)
		if u.Admitted {
			admitted := u.AdmitTime
			if admitted.IsZero() {
				admitted = u.EnqueueTime
			}
			ends.add(u, admitted, in.Now)
		} else {
			out[u.Key] = Estimate{Basis: Unknown}
		}
	}
	now, weakest := in.Now, Declared
	limit := time.Time{}
	if in.Horizon > 0 {
		limit = in.Now.Add(in.Horizon)
	}
	for waiting := len(out); waiting > 0; {
		res := s.Cycle(now)
		for _, a := range res.Admissions {
			i, ok := index[a.Unit]
			if !ok {
				continue // never: the replay admits only the units it was given
			}
			state[i] = replayState{admitted: true, admitTime: now, partial: a.Partial}
			u := unit(i)
			_ = s.UpsertUnit(u.Unit) // its pods run (see above)
			if e, ok := out[a.Unit]; ok && e.At.IsZero() {
				out[a.Unit] = Estimate{At: now, Basis: weakest}
				waiting--
			}
			ends.add(u, now, now)
		}
		for _, p := range res.Preemptions {
			for _, v := range p.Victims {
				i, ok := index[v]
				if !ok {
					continue // never: the replay admitted it
				}
				state[i] = replayState{admitTime: state[i].admitTime}
				ends.drop(v)
				if err := s.UpsertUnit(unit(i).Unit); err == nil {
					out[v] = Estimate{Basis: Unknown}
					waiting++
				}
			}
		}
		if len(res.Admissions) > 0 || len(res.Preemptions) > 0 || res.More {
			continue // decide what follows at the same time
		}
		next, ok := ends.next()
		if wake := res.NextWakeup; !wake.IsZero() && (!ok || wake.Before(next.at)) {
			next, ok = end{at: wake, basis: Declared}, true
		}
		if !ok || (!limit.IsZero() && next.at.After(limit)) {
			break // nothing left that could change an answer
		}
		now = next.at
		for e, ok := ends.popDue(now); ok; e, ok = ends.popDue(now) {
			weakest = max(weakest, e.basis)
			s.DeleteUnit(e.key)
		}
	}
	return out
}

// replayState is what the replay changes of a unit: admitted units run.
type replayState struct {
	admitted  bool
	admitTime time.Time
	partial   map[string]int32
}

// end is when an admitted unit finishes in the replay.
type end struct {
	key   string
	at    time.Time
	basis Basis
}

// endQueue holds the ends to come, soonest first (ties by key, so the
// replay does not depend on the order units were given in). A dropped end
// (its unit preempted) stays in the heap until it comes up.
type endQueue struct {
	heap    []end
	current map[string]time.Time
}

func (q *endQueue) Len() int { return len(q.heap) }
func (q *endQueue) Less(i, j int) bool {
	a, b := q.heap[i], q.heap[j]
	if c := a.at.Compare(b.at); c != 0 {
		return c < 0
	}
	return a.key < b.key
}
func (q *endQueue) Swap(i, j int) { q.heap[i], q.heap[j] = q.heap[j], q.heap[i] }
func (q *endQueue) Push(x any)    { q.heap = append(q.heap, x.(end)) }
func (q *endQueue) Pop() any {
	e := q.heap[len(q.heap)-1]
	q.heap = q.heap[:len(q.heap)-1]
	return e
}

// add schedules the end of u, admitted at admitted, no sooner than now; a
// unit whose runtime is unknown never ends.
func (q *endQueue) add(u Unit, admitted, now time.Time) {
	if u.Basis == Unknown {
		return
	}
	at := admitted.Add(u.Runtime)
	if at.Before(now) {
		at = now // over its time already: it ends as the replay starts
	}
	if q.current == nil {
		q.current = map[string]time.Time{}
	}
	q.current[u.Key] = at
	heap.Push(q, end{key: u.Key, at: at, basis: u.Basis})
}

// drop forgets the end of key (its unit was preempted).
func (q *endQueue) drop(key string) { delete(q.current, key) }

// next is the soonest end still current, without taking it.
func (q *endQueue) next() (end, bool) {
	for len(q.heap) > 0 {
		e := q.heap[0]
		if at, ok := q.current[e.key]; ok && at.Equal(e.at) {
			return e, true
		}
		heap.Pop(q) // dropped, or superseded by a later admission
	}
	return end{}, false
}

// popDue takes the next current end if it is due at now.
func (q *endQueue) popDue(now time.Time) (end, bool) {
	e, ok := q.next()
	if !ok || e.at.After(now) {
		return end{}, false
	}
	heap.Pop(q)
	delete(q.current, e.key)
	return e, true
}
