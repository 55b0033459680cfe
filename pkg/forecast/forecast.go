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
//
// A unit whose pod sets ask for a topology level (pkg/topology) is admitted
// in the replay, as live, only when one domain has room for its pods: given
// the nodes and what holds them (Input.Nodes), the replay places each unit
// it admits, which takes the room until it ends, and each unit's ending
// gives back the room its pods held. A unit that would not fit even with no
// unit's pods on the nodes gets no time, and the reason.
package forecast

import (
	"container/heap"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/quota"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	"github.com/koord-queue/koord-queue/pkg/topology"
)

// Basis says where a runtime, or an estimate built on runtimes, comes from,
// from the surest to the least sure.
type Basis int

const (
	// Declared: the unit's own limit (spec.maximumExecutionTimeSeconds,
	// set by hand or from its job's max-exec-time label), which koord-queue
	// enforces. It may end sooner, never later.
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
	// Nodes are the nodes, what the units' pods and other pods hold on
	// them, and what the units ask of them; nil when no waiting unit asks
	// for a topology level: then each unit is admitted as its quota has
	// room.
	Nodes *topology.Cluster
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
	// Reason, when At is zero, says why the unit will never be admitted
	// as things are, such as a topology level no domain of which has room
	// for its pods even with no unit's pods on the nodes; "" otherwise.
	Reason string
}

// Run replays in and returns an estimate for every unit not admitted in it
// (those waiting, and, for units preempted during the replay, their
// readmission), by key. Units the replay admits end after their runtime;
// units with an unknown runtime never end in it. Preemptions evict their
// victims at once; a victim is back in its queue and gets an estimate too.
func Run(in Input) map[string]Estimate {
	return newReplay(in).run()
}

// replay is a forecast under way. It keeps nothing of Input.Units once its
// scheduler has them (each unit is read back from there), so that the
// caller's input is garbage while the replay runs: 220 bytes a unit
// (BenchmarkReplayMemory), 11 MB at 50,000.
type replay struct {
	s          *scheduler.Scheduler
	now, limit time.Time
	// index is each unit's place in state.
	index map[string]int32
	state []replayState
	ends  endQueue
	out   map[string]Estimate
	// nodes places the units that ask for a topology level, nil when
	// none waits (Input.Nodes).
	nodes *topology.Replay
}

// replayState is what the replay keeps of a unit beside the scheduler's
// copy: how long it runs, and whether and when it was admitted (admitted
// units run).
type replayState struct {
	admitted  bool
	basis     Basis
	runtime   time.Duration
	admitTime time.Time
	partial   map[string]int32
}

func newReplay(in Input) *replay {
	r := &replay{
		s:     scheduler.New(),
		now:   in.Now,
		index: make(map[string]int32, len(in.Units)),
		state: make([]replayState, len(in.Units)),
		out:   map[string]Estimate{},
	}
	if in.Horizon > 0 {
		r.limit = in.Now.Add(in.Horizon)
	}
	if in.Capacity != nil {
		r.s.SetClusterCapacity(in.Capacity)
	}
	r.s.UpsertQuotas(in.Quotas)
	for _, q := range in.Queues {
		r.s.UpsertQueue(q)
	}
	for i, fu := range in.Units {
		// The replay assumes an admitted unit's pods run: a queue that waits
		// for pods to run (wait-for-pods-running) would otherwise never
		// open again in it.
		u := fu.Unit
		u.Running = u.Admitted
		if err := r.s.UpsertUnit(u); err != nil {
			continue // the live core refused it too: it is not forecast
		}
		r.index[u.Key] = int32(i)
		r.state[i] = replayState{admitted: u.Admitted, basis: fu.Basis, runtime: fu.Runtime, admitTime: u.AdmitTime, partial: u.Partial}
		if u.Admitted {
			admitted := u.AdmitTime
			if admitted.IsZero() {
				admitted = u.EnqueueTime
			}
			r.ends.add(u.Key, r.state[i], admitted, in.Now)
		} else {
			r.out[u.Key] = Estimate{Basis: Unknown}
		}
	}
	if in.Nodes != nil {
		r.nodes = topology.NewReplay(in.Nodes, func(key string) bool {
			i, ok := r.index[key]
			return ok && r.state[i].admitted
		})
		r.s.SetPlacer(r.nodes)
	}
	return r
}

// unit is the unit under key, at i in state, as the replay has it now.
func (r *replay) unit(key string, i int32) scheduler.Unit {
	u, _ := r.s.Unit(key)
	st := r.state[i]
	u.Admitted, u.AdmitTime, u.Running, u.Partial = st.admitted, st.admitTime, st.admitted, st.partial
	return u
}

func (r *replay) run() map[string]Estimate {
	s, out, now, weakest := r.s, r.out, r.now, Declared
	for waiting := len(out); waiting > 0; {
		res := s.Cycle(now)
		for _, a := range res.Admissions {
			i, ok := r.index[a.Unit]
			if !ok {
				continue // never: the replay admits only the units it was given
			}
			st := &r.state[i]
			st.admitted, st.admitTime, st.partial = true, now, a.Partial
			_ = s.UpsertUnit(r.unit(a.Unit, i)) // its pods run (see above)
			if e, ok := out[a.Unit]; ok && e.At.IsZero() {
				out[a.Unit] = Estimate{At: now, Basis: weakest}
				waiting--
			}
			r.ends.add(a.Unit, *st, now, now)
			if r.nodes != nil {
				r.nodes.Admit(a.Unit, a.Partial)
			}
		}
		if r.nodes != nil && r.nodes.EndCycle() {
			s.WakeUnplaced()
		}
		for _, p := range res.Preemptions {
			for _, v := range p.Victims {
				i, ok := r.index[v]
				if !ok {
					continue // never: the replay admitted it
				}
				st := &r.state[i]
				st.admitted, st.partial = false, nil
				r.ends.drop(v)
				r.release(v)
				if err := s.UpsertUnit(r.unit(v, i)); err == nil {
					out[v] = Estimate{Basis: Unknown}
					waiting++
				}
			}
		}
		if len(res.Admissions) > 0 || len(res.Preemptions) > 0 || res.More {
			continue // decide what follows at the same time
		}
		next, ok := r.ends.next()
		if wake := res.NextWakeup; !wake.IsZero() && (!ok || wake.Before(next.at)) {
			next, ok = end{at: wake, basis: Declared}, true
		}
		if !ok || (!r.limit.IsZero() && next.at.After(r.limit)) {
			break // nothing left that could change an answer
		}
		now = next.at
		for e, ok := r.ends.popDue(now); ok; e, ok = r.ends.popDue(now) {
			weakest = max(weakest, e.basis)
			s.DeleteUnit(e.key)
			r.release(e.key)
		}
	}
	r.explainNever()
	return out
}

// release gives back the room on the nodes the unit key holds (it ended,
// or was evicted), and wakes the queues that waited for room there.
func (r *replay) release(key string) {
	if r.nodes != nil && r.nodes.End(key) {
		r.s.WakeUnplaced()
	}
}

// explainNever gives each unit the replay did not admit that would not
// fit the nodes even with no unit's pods on them, with as few pods as it
// can start with, the reason.
func (r *replay) explainNever() {
	if r.nodes == nil {
		return
	}
	for key, e := range r.out {
		if !e.At.IsZero() {
			continue
		}
		u, _ := r.s.Unit(key)
		if why, never := r.nodes.Never(key, fewestPods(u.PodSets)); never {
			r.out[key] = Estimate{Basis: Unknown, Reason: "it would not fit even with no unit's pods on the nodes: " + why}
		}
	}
}

// fewestPods is, for each pod set that can start with fewer pods than it
// asks for (partial admission), the fewest it can; nil if none can.
func fewestPods(sets []scheduler.PodSet) map[string]int32 {
	var out map[string]int32
	for _, ps := range sets {
		if ps.MinCount >= 1 && ps.MinCount < ps.Count {
			if out == nil {
				out = map[string]int32{}
			}
			out[ps.Name] = ps.MinCount
		}
	}
	return out
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

// add schedules the end of the unit under key, admitted at admitted, no
// sooner than now; a unit whose runtime is unknown never ends.
func (q *endQueue) add(key string, st replayState, admitted, now time.Time) {
	if st.basis == Unknown {
		return
	}
	at := admitted.Add(st.runtime)
	if at.Before(now) {
		at = now // over its time already: it ends as the replay starts
	}
	if q.current == nil {
		q.current = map[string]time.Time{}
	}
	q.current[key] = at
	heap.Push(q, end{key: key, at: at, basis: st.basis})
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
