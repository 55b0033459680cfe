package scheduler

import (
	"container/heap"
	"sort"
	"time"

	"github.com/google/btree"
	"github.com/koord-queue/koord-queue/pkg/quota"
)

// parkedQueues are the queues whose head cannot be admitted until
// something changes, and what wakes them. Nothing polls: a queue whose
// turn ended without an admission is parked until an event could change
// its answer, either
//
//   - in the wake sets (park): registered at each quota whose limit binds
//     it, and woken by usage released at or below one of them; or
//   - settled: in a group of queues held back by the same quota b, keyed by
//     what b and its ancestors held when they parked
//     (quota.Engine.ChainState), sorted by their place in the line.
//
// Why settle: when capacity is contested, a release wakes every queue
// parked on the contested quota (often the cluster), and all but the one
// that takes the freed capacity would replay the turn they had last time:
// same headroom, same head, same answer. A queue whose turn can only
// depend on its own units and its headroom (settleable) is therefore
// settled. A release at b puts the whole group in the next line as one
// entry. When the entry comes first and b's state is what the group parked
// with, every member up to the next entry in line would replay its turn
// unchanged, so they are passed over in one step, O(log queues) (line.go,
// groupTurn); otherwise the first member takes a real turn. Anything else
// that concerns a member (a wake, a change of its own quota's usage, new
// fair shares) makes it an ordinary parked queue first, so the decisions
// are exactly those of giving every woken queue its turn
// (TestSettledQueuesDecideAsEveryQueueTakingItsTurn).
//
// It owns the wake sets and the settled groups; each queue's side of them
// is its parkedState. The turns decide when a queue parks or settles
// (tryHead, settleable) and wakes what parkedQueues hands back.
type parkedQueues struct {
	// at: the wake sets, queues parked because of a limit of this quota.
	at map[string]map[string]struct{}
	// groups: settled groups by the quota that holds them back, then by
	// that quota's ChainState; byQuota: settled queues by their own quota;
	// active: groups woken for the next cycle; keyedGen: the runtime
	// generation members' keys were computed in (-1: mixed).
	groups   map[string]map[string]*settledGroup
	byQuota  map[string]map[*queueState]struct{}
	active   map[*settledGroup]struct{}
	count    int
	keyedGen int
	// noSettle turns settling off (tests compare both ways).
	noSettle bool
	// buffers, kept to spare allocations.
	stateBuf   []byte
	changedBuf []string
}

// parkedState is a queue's side of parkedQueues.
type parkedState struct {
	// parkedAt: the quotas whose wake sets hold the queue.
	parkedAt []string
	// settledIn is the group the queue is settled in, with its key there,
	// the quota it was charged to and the cycle it parked in.
	settledIn    *settledGroup
	key          lineKey
	settledQuota string
	parkCycle    int
}

func newParkedQueues() parkedQueues {
	return parkedQueues{
		at:      map[string]map[string]struct{}{},
		groups:  map[string]map[string]*settledGroup{},
		byQuota: map[string]map[*queueState]struct{}{},
		active:  map[*settledGroup]struct{}{},
	}
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

// park registers qs in the wake sets of the quotas binding, whose limits
// hold it back ("" entries are skipped).
func (p *parkedQueues) park(qs *queueState, binding []string) {
	for _, b := range binding {
		if b == "" || contains(qs.parkedAt, b) {
			continue
		}
		set, ok := p.at[b]
		if !ok {
			set = map[string]struct{}{}
			p.at[b] = set
		}
		set[qs.spec.Name] = struct{}{}
		qs.parkedAt = append(qs.parkedAt, b)
	}
}

// unpark takes qs out of the wake sets and out of its settled group (line
// is the running cycle's, nil between cycles: see unsettle).
func (p *parkedQueues) unpark(qs *queueState, line *queueLine) {
	p.unsettle(qs, line)
	for _, b := range qs.parkedAt {
		// Empty sets are kept: a busy quota's set would otherwise be
		// rebuilt (and regrown) on every release.
		delete(p.at[b], qs.spec.Name)
	}
	qs.parkedAt = qs.parkedAt[:0]
}

// released: usage was released at quota b (one of the chain of the quota
// that released it). The queues parked at b are woken, and its settled
// queues (wakeSettled).
func (p *parkedQueues) released(b string, line *queueLine, wake func(queue string)) {
	for q := range p.at[b] {
		wake(q)
	}
	p.wakeSettled(b, line, wake)
}

// woken says whether settled groups are woken for the next cycle.
func (p *parkedQueues) woken() bool { return len(p.active) > 0 }

// settleable says on which quota a queue that just parked can settle: its
// turn depends only on its units and its headroom (no preemption it could
// start, no gate, no time-based rule, no preemption in flight in its
// quota, no room held for one elsewhere), and one quota holds it back, its parent, so that only a change of
// its own quota's usage (which the engine reports) or of its parent's chain
// (ChainState) could change its headroom.
func (s *turns) settleable(qs *queueState, head string, preempting bool) (string, bool) {
	cfg := qs.spec.Config
	if s.parked.noSettle || preempting || s.preemption.roomHeldFor() != "" || cfg.EnablePreemption || cfg.WaitForPodsRunning || len(qs.parkedAt) > 0 {
		return "", false
	}
	if _, ok := s.unplaced[qs.spec.Name]; ok {
		// Its turn depends on the nodes too, which no quota's state says.
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
		s.preemption.preemptionInFlight(qs.quota, "") != "" {
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
func (s *turns) settle(qs *queueState, b string, now time.Time) {
	// Changes so far are in the state qs parks with: they must not evict it.
	s.evictChanged()
	s.parked.settle(qs, b, s.engine, s.cycle, now)
}

// settle puts qs in the group of quota b with b's chain state now; qs
// parks in cycle. Settled queues whose own quota's usage changed must have
// been evicted first (evictChanged).
func (p *parkedQueues) settle(qs *queueState, b string, engine *quota.Engine, cycle int, now time.Time) {
	gen := engine.RuntimeGeneration()
	if p.count == 0 {
		p.keyedGen = gen
	} else if gen != p.keyedGen {
		p.keyedGen = -1 // rekeyed by the next lineUp
	}
	prio, since := qs.headRank(now)
	qs.key = lineKey{engine.DominantShare(qs.quota), qs.spec.Priority, prio, since, qs.spec.Name}
	qs.parkCycle = cycle
	qs.settledQuota = qs.quota
	p.stateBuf = engine.ChainState(b, p.stateBuf[:0])
	groups := p.groups[b]
	if groups == nil {
		groups = map[string]*settledGroup{}
		p.groups[b] = groups
	}
	g := groups[string(p.stateBuf)]
	if g == nil {
		g = &settledGroup{quota: b, state: string(p.stateBuf)}
		groups[g.state] = g
	}
	g.members.insert(qs)
	qs.settledIn = g
	set := p.byQuota[qs.quota]
	if set == nil {
		set = map[*queueState]struct{}{}
		p.byQuota[qs.quota] = set
	}
	set[qs] = struct{}{}
	p.count++
}

// unsettle takes qs out of its group. If the running line (nil between
// cycles) holds it there, it keeps its place in the line as an ordinary
// queue.
func (p *parkedQueues) unsettle(qs *queueState, line *queueLine) {
	g := qs.settledIn
	if g == nil {
		return
	}
	g.members.remove(qs.key)
	qs.settledIn = nil
	if set := p.byQuota[qs.settledQuota]; set != nil {
		delete(set, qs)
		if len(set) == 0 {
			delete(p.byQuota, qs.settledQuota)
		}
	}
	p.count--
	if g.members.empty() {
		if p.groups[g.quota][g.state] == g {
			delete(p.groups[g.quota], g.state)
		}
		delete(p.active, g)
	}
	if e := g.entry; e != nil && line != nil && e.holds(qs) {
		qs.share, qs.headPrio, qs.headSince = qs.key.share, qs.key.headPrio, qs.key.headSince
		qs.entry = lineEntry{qs: qs}
		heap.Push(line, &qs.entry)
	}
}

// wakeSettled: quota b released usage, so its settled queues are woken.
// Between cycles (line is nil) the groups are woken whole; during one (a
// preemptor's reservation given back), every member becomes an ordinary
// queue: woken if it parked, in line if the line still holds it.
func (p *parkedQueues) wakeSettled(b string, line *queueLine, wake func(queue string)) {
	groups := p.groups[b]
	if len(groups) == 0 {
		return
	}
	if line == nil {
		for _, g := range groups {
			g.active, g.from = true, nil
			p.active[g] = struct{}{}
		}
		return
	}
	var members []*queueState
	for _, g := range groups {
		g.members.each(func(m *queueState) { members = append(members, m) })
	}
	sort.Slice(members, func(i, j int) bool { return members[i].spec.Name < members[j].spec.Name })
	for _, qs := range members {
		if e := qs.settledIn.entry; e != nil && e.holds(qs) {
			// Still to take its turn in this line, as if never parked:
			// it takes it as an ordinary queue, and nothing wakes it.
			p.unsettle(qs, line)
			continue
		}
		wake(qs.spec.Name)
	}
}

// evictChanged makes ordinary parked queues of the settled queues whose own
// quota's usage changed: their headroom no longer follows from their
// group's. It returns whether there were any.
func (s *turns) evictChanged() bool {
	return s.parked.evictChanged(s.engine, s.line, s.dirty)
}

// evictChanged is turns.evictChanged: those of a woken group are marked
// dirty, those the running line holds stay in it, the rest park at their
// group's quota.
func (p *parkedQueues) evictChanged(engine *quota.Engine, line *queueLine, dirty map[string]struct{}) bool {
	p.changedBuf = engine.DrainChanged(p.changedBuf[:0])
	var evicted []*queueState
	for _, q := range p.changedBuf {
		for m := range p.byQuota[q] {
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
		inLine := g.entry != nil && line != nil && g.entry.holds(m)
		p.unsettle(m, line)
		switch {
		case woken:
			dirty[m.spec.Name] = struct{}{}
		case !inLine:
			p.park(m, []string{g.quota})
		}
	}
	return true
}

// rekeyIfStale re-sorts the settled queues if fair shares changed since
// their keys were taken (rekey).
func (p *parkedQueues) rekeyIfStale(engine *quota.Engine, wake func(queue string)) {
	if p.count == 0 {
		return
	}
	if gen := engine.RuntimeGeneration(); gen != p.keyedGen {
		p.rekey(gen, engine, wake)
	}
}

// rekey re-sorts the settled queues by their new shares, after fair shares
// changed. Members a cut-short line left to take their turn are woken
// first, as their place was by the old shares.
func (p *parkedQueues) rekey(gen int, engine *quota.Engine, wake func(queue string)) {
	var woken []string
	for g := range p.active {
		if g.from == nil {
			continue
		}
		g.members.each(func(m *queueState) {
			if g.from.less(m.key) && m.parkCycle < g.since {
				woken = append(woken, m.spec.Name)
			}
		})
		g.active, g.from = false, nil
		delete(p.active, g)
	}
	sort.Strings(woken)
	for _, n := range woken {
		wake(n)
	}
	for _, groups := range p.groups {
		for _, g := range groups {
			var ms []*queueState
			g.members.each(func(m *queueState) { ms = append(ms, m) })
			g.members = memberTree{}
			for _, m := range ms {
				m.key.share = engine.DominantShare(m.quota)
				g.members.insert(m)
			}
		}
	}
	p.keyedGen = gen
}

// lineUpGroups appends to line an entry for each woken group that has a
// member to take its turn in the cycle starting (cycle), and wakes none
// from then on.
func (p *parkedQueues) lineUpGroups(line queueLine, cycle int) queueLine {
	for g := range p.active {
		e := &lineEntry{g: g, after: g.from, since: cycle}
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
	clear(p.active)
	return line
}

// wakeRest wakes g for the next cycle from where a limit cut its entry e
// short.
func (p *parkedQueues) wakeRest(e *lineEntry) {
	g := e.g
	g.entry = nil
	if e.next() == nil {
		return
	}
	g.active, g.from, g.since = true, e.after, e.since
	if g.from == nil {
		// Every member parked before this cycle, and none since: as a whole.
		k := lineKey{share: -1}
		g.from = &k
	}
	p.active[g] = struct{}{}
}

// asParked says whether g's quota chain is as its members parked.
func (p *parkedQueues) asParked(g *settledGroup, engine *quota.Engine) bool {
	p.stateBuf = engine.ChainState(g.quota, p.stateBuf[:0])
	return string(p.stateBuf) == g.state
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
