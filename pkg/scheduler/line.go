package scheduler

import (
	"container/heap"
	"math"
	"time"
)

// The line is the order in which queues take their turns in a cycle:
// the dirty queues, and the settled groups woken (parked.go) as one entry
// each, in order of lineKey.

// lineKey is a queue's place in the line: smallest dominant share first,
// then highest Queue priority, then the queue whose head (the unit its
// policy serves first) has the highest priority, then the earliest
// enqueued head, then name.
//
// The head's rank is kept with the queue (queueState.headPrio, headSince),
// not read from its units at each comparison: it is taken when the queue
// is lined up (lineUp), after each turn that goes on (it admitted, or
// offers again; cycle.go), and when it settles (settle). Every change of a queue's units (enqueue, dequeue)
// and of its config wakes it (wake), which unsettles it and has it lined
// up afresh; the only other change of its head, a unit taken by admit, is
// in a turn of its own or of a queue that cannot settle (a preemptor's, a
// patient head's). So a settled member's key is never stale and is never
// re-keyed for its head; only new fair shares re-key members (rekey).
type lineKey struct {
	share     float64
	prio      int32
	headPrio  int32
	headSince int64
	name      string
}

func (a lineKey) less(b lineKey) bool {
	if a.share != b.share {
		return a.share < b.share
	}
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if a.headPrio != b.headPrio {
		return a.headPrio > b.headPrio
	}
	if a.headSince != b.headSince {
		return a.headSince < b.headSince
	}
	return a.name < b.name
}

// headRank is the priority and enqueue time of the unit qs's policy serves
// first now (an empty queue's: after every head). O(log units).
func (qs *queueState) headRank(now time.Time) (int32, int64) {
	p, t, ok := qs.q.HeadRank(now)
	if !ok {
		return math.MinInt32, math.MaxInt64
	}
	return p, t
}

// lineKey is qs's place in the line by its share and head as last taken.
func (qs *queueState) lineKey() lineKey {
	return lineKey{qs.share, qs.spec.Priority, qs.headPrio, qs.headSince, qs.spec.Name}
}

// lineEntry is a queue, or the members of a settled group after `after`
// that parked before cycle since.
type lineEntry struct {
	qs    *queueState
	g     *settledGroup
	after *lineKey
	since int
	key   lineKey // a group's: its next member's
	index int
}

func (e *lineEntry) lineKey() lineKey {
	if e.qs != nil {
		return e.qs.lineKey()
	}
	return e.key
}

// queueLine is a min-heap of entries by lineKey.
type queueLine []*lineEntry

func (l queueLine) Len() int           { return len(l) }
func (l queueLine) Less(i, j int) bool { return l[i].lineKey().less(l[j].lineKey()) }
func (l queueLine) Swap(i, j int) {
	l[i], l[j] = l[j], l[i]
	l[i].index, l[j].index = i, j
}
func (l *queueLine) Push(x any) {
	e := x.(*lineEntry)
	e.index = len(*l)
	*l = append(*l, e)
}
func (l *queueLine) Pop() any {
	old := *l
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*l = old[:len(old)-1]
	return e
}

// second is the key of the entry after the first, if any.
func (l queueLine) second() (lineKey, bool) {
	switch {
	case len(l) > 2 && l.Less(2, 1):
		return l[2].lineKey(), true
	case len(l) > 1:
		return l[1].lineKey(), true
	}
	return lineKey{}, false
}

// holds reports whether member m of e's group is still to take its turn
// in e.
func (e *lineEntry) holds(m *queueState) bool {
	return (e.after == nil || e.after.less(m.key)) && m.parkCycle < e.since
}

// next is e's group's next member to take its turn, or nil.
func (e *lineEntry) next() *queueState {
	after := e.after
	for {
		m := e.g.members.after(after)
		if m == nil || m.parkCycle < e.since {
			return m
		}
		after = &m.key
	}
}

// lineUp takes the dirty queues and the woken settled groups, in serving
// order.
func (s *turns) lineUp(now time.Time) queueLine {
	s.evictChanged()
	s.parked.rekeyIfStale(s.engine, s.wake)
	// No need to sort: the line's order is total (its last key is the
	// name), so it pops the same way whatever order the map gives.
	line := s.lineBuf[:0]
	shares := len(s.dirty) > 1 || s.parked.woken() // shares only matter when queues compete
	for name := range s.dirty {
		qs := s.queues[name]
		if qs == nil {
			continue
		}
		qs.share, qs.headPrio, qs.headSince = 0, 0, 0
		if shares {
			qs.share = s.engine.DominantShare(qs.quota)
			qs.headPrio, qs.headSince = qs.headRank(now)
		}
		qs.entry = lineEntry{qs: qs}
		line = append(line, &qs.entry)
	}
	if len(s.dirty) > 64 {
		// A map keeps its size: ranging over and clearing a map that once
		// held every queue would cost O(queues) in every later cycle.
		s.dirty = map[string]struct{}{}
	} else {
		clear(s.dirty)
	}
	line = s.parked.lineUpGroups(line, s.cycle)
	for i, e := range line {
		e.index = i
	}
	heap.Init(&line)
	return line
}

// cutShort: a limit ends the cycle; what is still in line takes its turn
// next call.
func (s *turns) cutShort(line queueLine) {
	for _, e := range line {
		if e.qs != nil {
			if e.qs.q.Len() > 0 {
				s.dirty[e.qs.spec.Name] = struct{}{}
			}
			continue
		}
		s.parked.wakeRest(e)
	}
}

// groupTurn handles the first entry, a settled group: if the group's quota
// chain is as its members parked, it passes over every member before the
// next entry; otherwise its next member leaves the group, to take a real
// turn as an ordinary queue in line.
func (s *turns) groupTurn(line *queueLine) {
	e := (*line)[0]
	m := e.next()
	if m == nil {
		heap.Pop(line)
		e.g.entry = nil
		return
	}
	if m.key != e.key {
		e.key = m.key // its next member left the group
		heap.Fix(line, 0)
		return
	}
	if !s.parked.asParked(e.g, s.engine) {
		s.parked.unsettle(m, line) // takes its turn as an ordinary queue, in line now
		return
	}
	// Every member before the next entry would replay its last turn.
	next, ok := line.second()
	if !ok {
		heap.Pop(line)
		e.g.entry = nil
		return
	}
	e.after = &next // keys are unique: nobody in the group has next's
	if n := e.next(); n != nil {
		e.key = n.key
		heap.Fix(line, 0)
	} else {
		heap.Pop(line)
		e.g.entry = nil
	}
}
