package scheduler

import (
	"container/heap"
	"math"
	"sort"
	"time"

	"github.com/google/btree"
)

// The line is the order in which queues take their turns in a cycle.
//
// When capacity is contested, a release wakes every queue parked on the
// contested quota (often the cluster), and all but the one that takes the
// freed capacity would replay the turn they had last time: same headroom,
// same head, same answer. A queue whose turn can only depend on its own
// units and its headroom is therefore parked "settled": in a group of
// queues held back by the same quota b, keyed by what b and its ancestors
// held when they parked (quota.Engine.ChainState), sorted by their place in
// the line. A release at b puts the whole group in the next line as one
// entry. When the entry comes first and b's state is what the group parked
// with, every member up to the next entry in line would replay its turn
// unchanged, so they are passed over in one step, O(log queues); otherwise
// the first member takes a real turn. Anything else that concerns a member
// (a wake, a change of its own quota's usage, new fair shares) makes it an
// ordinary parked queue first, so the decisions are exactly those of giving
// every woken queue its turn (TestSettledQueuesDecideAsEveryQueueTakingItsTurn).

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

// settledGroup is the queues settled on one quota with one ChainState.
type settledGroup struct {
	quota, state string
	// members by key.
	members memberTree
	// entry is the group's place in the running cycle's line, if any.
	entry *lineEntry
	// active: the group is woken for the next cycle: every member if from is
	// nil, else those after from that parked before cycle since (the rest
	// of a line a limit cut short).
	active bool
	from   *lineKey
	since  int
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

// settleable says on which quota a queue that just parked can settle: its
// turn depends only on its units and its headroom (no preemption it could
// start, no gate, no time-based rule, no preemption in flight in its
// quota, no room held for one elsewhere), and one quota holds it back, its parent, so that only a change of
// its own quota's usage (which the engine reports) or of its parent's chain
// (ChainState) could change its headroom.
func (s *Scheduler) settleable(qs *queueState, head string, preempting bool) (string, bool) {
	cfg := qs.spec.Config
	if s.noSettle || preempting || s.heldFor != "" || cfg.EnablePreemption || cfg.WaitForPodsRunning || len(qs.parkedAt) > 0 {
		return "", false
	}
	if _, ok := s.timed[qs.spec.Name]; ok {
		return "", false
	}
	if _, ok := s.dirty[qs.spec.Name]; ok {
		return "", false // woken during its turn: it stays an ordinary queue
	}
	us := s.units[head]
	if us == nil || us.victims != nil || us.reserved || s.engine.WithinMin(qs.quota, us.req) ||
		s.preemptionInFlight(qs.quota, "") != "" {
		return "", false
	}
	b := ""
	for _, name := range s.binding {
		switch {
		case name == "" || name == b:
		case b == "":
			b = name
		default:
			return "", false
		}
	}
	// Held back by its own quota, only its own quota's releases wake it:
	// nothing to gain, as it has that quota to itself but for shared quotas.
	if b == "" || b == qs.quota || b != s.engine.Parent(qs.quota) {
		return "", false
	}
	return b, true
}

// settle parks qs on quota b as a settled queue.
func (s *Scheduler) settle(qs *queueState, b string, now time.Time) {
	// Changes so far are in the state qs parks with: they must not evict it.
	s.evictChanged()
	gen := s.engine.RuntimeGeneration()
	if s.settledCount == 0 {
		s.keyedGen = gen
	} else if gen != s.keyedGen {
		s.keyedGen = -1 // rekeyed by the next lineUp
	}
	p, t := qs.headRank(now)
	qs.key = lineKey{s.engine.DominantShare(qs.quota), qs.spec.Priority, p, t, qs.spec.Name}
	qs.parkCycle = s.cycle
	qs.settledQuota = qs.quota
	s.stateBuf = s.engine.ChainState(b, s.stateBuf[:0])
	groups := s.settledAt[b]
	if groups == nil {
		groups = map[string]*settledGroup{}
		s.settledAt[b] = groups
	}
	g := groups[string(s.stateBuf)]
	if g == nil {
		g = &settledGroup{quota: b, state: string(s.stateBuf)}
		groups[g.state] = g
	}
	g.members.insert(qs)
	qs.settledIn = g
	set := s.settledBy[qs.quota]
	if set == nil {
		set = map[*queueState]struct{}{}
		s.settledBy[qs.quota] = set
	}
	set[qs] = struct{}{}
	s.settledCount++
}

// unsettle takes qs out of its group. If the running line holds it there,
// it keeps its place in the line as an ordinary queue.
func (s *Scheduler) unsettle(qs *queueState) {
	g := qs.settledIn
	if g == nil {
		return
	}
	g.members.remove(qs.key)
	qs.settledIn = nil
	if set := s.settledBy[qs.settledQuota]; set != nil {
		delete(set, qs)
		if len(set) == 0 {
			delete(s.settledBy, qs.settledQuota)
		}
	}
	s.settledCount--
	if g.members.empty() {
		if s.settledAt[g.quota][g.state] == g {
			delete(s.settledAt[g.quota], g.state)
		}
		delete(s.activeGroups, g)
	}
	if e := g.entry; e != nil && s.line != nil && e.holds(qs) {
		qs.share, qs.headPrio, qs.headSince = qs.key.share, qs.key.headPrio, qs.key.headSince
		qs.entry = lineEntry{qs: qs}
		heap.Push(s.line, &qs.entry)
	}
}

// wakeSettled: quota b released usage, so its settled queues are woken.
// Between cycles the groups are woken whole; during one (a preemptor's
// reservation given back), every member becomes an ordinary queue: woken
// if it parked, in line if the line still holds it.
func (s *Scheduler) wakeSettled(b string) {
	groups := s.settledAt[b]
	if len(groups) == 0 {
		return
	}
	if s.line == nil {
		for _, g := range groups {
			g.active, g.from = true, nil
			s.activeGroups[g] = struct{}{}
		}
		return
	}
	var names []string
	for _, g := range groups {
		g.members.each(func(m *queueState) { names = append(names, m.spec.Name) })
	}
	sort.Strings(names)
	for _, n := range names {
		qs := s.queues[n]
		if e := qs.settledIn.entry; e != nil && e.holds(qs) {
			// Still to take its turn in this line, as if never parked:
			// it takes it as an ordinary queue, and nothing wakes it.
			s.unsettle(qs)
			continue
		}
		s.wake(n)
	}
}

// evictChanged makes ordinary parked queues of the settled queues whose own
// quota's usage changed: their headroom no longer follows from their
// group's. It returns whether there were any.
func (s *Scheduler) evictChanged() bool {
	s.changedBuf = s.engine.DrainChanged(s.changedBuf[:0])
	var evicted []*queueState
	for _, q := range s.changedBuf {
		for m := range s.settledBy[q] {
			evicted = append(evicted, m)
		}
	}
	if len(evicted) == 0 {
		return false
	}
	sort.Slice(evicted, func(i, j int) bool { return evicted[i].spec.Name < evicted[j].spec.Name })
	for _, m := range evicted {
		g := m.settledIn
		woken := g.active && (g.from == nil || g.from.less(m.key) && m.parkCycle < g.since)
		inLine := g.entry != nil && s.line != nil && g.entry.holds(m)
		s.unsettle(m)
		switch {
		case woken:
			s.dirty[m.spec.Name] = struct{}{}
		case !inLine:
			s.park(m, []string{g.quota})
		}
	}
	return true
}

// rekey re-sorts the settled queues by their new shares, after fair shares
// changed. Members a cut-short line left to take their turn are woken
// first, as their place was by the old shares.
func (s *Scheduler) rekey(gen int) {
	var woken []string
	for g := range s.activeGroups {
		if g.from == nil {
			continue
		}
		g.members.each(func(m *queueState) {
			if g.from.less(m.key) && m.parkCycle < g.since {
				woken = append(woken, m.spec.Name)
			}
		})
		g.active, g.from = false, nil
		delete(s.activeGroups, g)
	}
	sort.Strings(woken)
	for _, n := range woken {
		s.wake(n)
	}
	for _, groups := range s.settledAt {
		for _, g := range groups {
			var ms []*queueState
			g.members.each(func(m *queueState) { ms = append(ms, m) })
			g.members = memberTree{}
			for _, m := range ms {
				m.key.share = s.engine.DominantShare(m.quota)
				g.members.insert(m)
			}
		}
	}
	s.keyedGen = gen
}

// lineUp takes the dirty queues and the woken settled groups, in serving
// order.
func (s *Scheduler) lineUp(now time.Time) queueLine {
	s.evictChanged()
	if s.settledCount > 0 {
		if gen := s.engine.RuntimeGeneration(); gen != s.keyedGen {
			s.rekey(gen)
		}
	}
	// No need to sort: the line's order is total (its last key is the
	// name), so it pops the same way whatever order the map gives.
	line := s.lineBuf[:0]
	shares := len(s.dirty) > 1 || len(s.activeGroups) > 0 // shares only matter when queues compete
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
	for g := range s.activeGroups {
		e := &lineEntry{g: g, after: g.from, since: s.cycle}
		if g.from != nil {
			e.since = g.since
		}
		g.active, g.from = false, nil
		if m := e.next(); m != nil {
			e.key = m.key
			g.entry = e
			line = append(line, e)
		}
	}
	clear(s.activeGroups)
	for i, e := range line {
		e.index = i
	}
	heap.Init(&line)
	return line
}

// cutShort: a limit ends the cycle; what is still in line takes its turn
// next call.
func (s *Scheduler) cutShort(line queueLine) {
	for _, e := range line {
		if e.qs != nil {
			if e.qs.q.Len() > 0 {
				s.dirty[e.qs.spec.Name] = struct{}{}
			}
			continue
		}
		g := e.g
		g.entry = nil
		if e.next() == nil {
			continue
		}
		g.active, g.from, g.since = true, e.after, e.since
		if g.from == nil {
			// Every member parked before this cycle, and none since: as a whole.
			k := lineKey{share: -1}
			g.from = &k
		}
		s.activeGroups[g] = struct{}{}
	}
}

// groupTurn handles the first entry, a settled group: if the group's quota
// chain is as its members parked, it passes over every member before the
// next entry; otherwise its next member leaves the group, to take a real
// turn as an ordinary queue in line.
func (s *Scheduler) groupTurn(line *queueLine) {
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
	s.stateBuf = s.engine.ChainState(e.g.quota, s.stateBuf[:0])
	if string(s.stateBuf) != e.g.state {
		s.unsettle(m) // takes its turn as an ordinary queue, in line now
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

// memberTree is the settled queues of a group by key, a B-tree: O(log n)
// insert, remove and successor. The zero value is an empty tree. A member's
// key is copied in when it is inserted; it must not change while it is in.
type memberTree struct{ t *btree.BTreeG[member] }

type member struct {
	key lineKey
	qs  *queueState
}

func memberLess(a, b member) bool { return a.key.less(b.key) }

// memberDegree is the B-tree's degree: groups are mostly small.
const memberDegree = 8

func (t *memberTree) insert(qs *queueState) {
	if t.t == nil {
		t.t = btree.NewG(memberDegree, memberLess)
	}
	t.t.ReplaceOrInsert(member{qs.key, qs})
}

func (t *memberTree) remove(k lineKey) {
	if t.t != nil {
		t.t.Delete(member{key: k})
	}
}

// empty says whether the tree has no member.
func (t *memberTree) empty() bool { return t.t == nil || t.t.Len() == 0 }

// after is the member with the smallest key above k (the first if k is nil).
func (t *memberTree) after(k *lineKey) *queueState {
	if t.t == nil {
		return nil
	}
	var best *queueState
	find := func(m member) bool {
		if k != nil && !k.less(m.key) {
			return true // m's key is k itself: the next one
		}
		best = m.qs
		return false
	}
	if k == nil {
		t.t.Ascend(find)
	} else {
		t.t.AscendGreaterOrEqual(member{key: *k}, find)
	}
	return best
}

// each calls fn for every member in key order.
func (t *memberTree) each(fn func(*queueState)) {
	if t.t != nil {
		t.t.Ascend(func(m member) bool { fn(m.qs); return true })
	}
}
