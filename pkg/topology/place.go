package topology

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// PodSet is what one pod set of a unit asks for.
type PodSet struct {
	Name  string
	Count int32
	// PerPod is what each pod asks for (resources.PodRequests).
	PerPod corev1.ResourceList
	// Amounts is PerPod as AmountsOf says it, for a caller that places
	// the pod set many times: each placement then reads no map. Nil:
	// PerPod is read at each placement.
	Amounts []Amount
	Ask     Ask
	// Nodes are the nodes its pods can use (SelectionOf its template).
	Nodes Selection
	// MaxDomains, when positive, is the most domains its pods can be
	// kept within once released: koord-queue-controllers writes one
	// required node affinity term per domain and term of the template,
	// and at most pool.MaxPlacementTerms (pool.Placement.MaxDomains).
	// 0: as many as a status records (MaxTopologyDomains).
	MaxDomains int
}

// Amount is an amount of a resource, in the units a snapshot counts
// (milli-cores for cpu, whole units for the rest).
type Amount struct {
	Name  corev1.ResourceName
	Value int64
}

// AmountsOf is l's amounts, ordered by name.
func AmountsOf(l corev1.ResourceList) []Amount {
	out := make([]Amount, 0, len(l))
	for name, q := range l {
		out = append(out, Amount{Name: name, Value: amount(name, q)})
	}
	slices.SortFunc(out, func(a, b Amount) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out
}

// Domain is a domain a placement chose and how many pods it gets there.
type Domain struct {
	// Values are the level labels' values from the top level down to the
	// placement's level. They are the snapshot's: do not change them.
	Values []string
	Pods   int32
}

// Placement is where one pod set goes.
type Placement struct {
	PodSet string
	// Level is the index of the level of Domains; -1 for a pod set that
	// asks for no level (it has no Domains).
	Level int
	// Domains: one for a required level, one or more for a preferred one,
	// ordered by their values.
	Domains []Domain
}

// Result is where the pod sets of a unit go, or why they do not fit.
type Result struct {
	// Placements holds one Placement per pod set, in order, when all fit.
	Placements []Placement
	// Shortfall is the first pod set that does not fit and why; the zero
	// Shortfall when all fit.
	Shortfall Shortfall
}

// Fits reports whether every pod set found room.
func (r Result) Fits() bool { return r.Shortfall.Level == "" }

// Reason says why the unit does not fit, "" when it does.
func (r Result) Reason() string {
	if r.Fits() {
		return ""
	}
	return r.Shortfall.String()
}

// Unrecordable says why r, the placement of sets, cannot be recorded on
// the unit's status or kept to by its pods (a pod set spread over more
// domains than status.topologyAssignments holds, or than its MaxDomains),
// "" when it can: such a unit waits as one that does not fit.
func (r Result) Unrecordable(levels Levels, sets []PodSet) string {
	for i, p := range r.Placements {
		if len(p.Domains) > schedulingv1alpha1.MaxTopologyDomains {
			return fmt.Sprintf("pod set %s would be spread over %d domains of `%s`; at most %d can be recorded",
				p.PodSet, len(p.Domains), levels.Labels[p.Level], schedulingv1alpha1.MaxTopologyDomains)
		}
		if i < len(sets) && sets[i].MaxDomains > 0 && len(p.Domains) > sets[i].MaxDomains {
			return fmt.Sprintf("pod set %s would be spread over %d domains of `%s`; its pods' required node affinity can keep to at most %d",
				p.PodSet, len(p.Domains), levels.Labels[p.Level], sets[i].MaxDomains)
		}
	}
	return ""
}

// Shortfall is why a pod set does not fit, counted in its pods. It is
// rendered only when asked (String), so that a cycle that tries many
// units that do not fit does not format a message for each.
type Shortfall struct {
	PodSet string
	Pods   int32
	// Resource is the resource of the request the fewest pods find room
	// for, PerPod what each pod asks of it; "" for a request of nothing
	// the nodes count.
	Resource corev1.ResourceName
	PerPod   resource.Quantity
	// Level is the node label of the level asked for, Required whether
	// it was required.
	Level    string
	Required bool
	// Selective: some schedulable nodes are not counted, since the pods
	// cannot use them (their node selection or taints).
	Selective bool
	// Room is how many of the pods the largest domain of the level has
	// room for (required), or all of them together (preferred); -1 when
	// no schedulable node has the level's label.
	Room int64
}

// String says it in the user's words: "needs 8 × 1 nvidia.com/gpu within
// one `rack`; the largest free one has 6" (with "of the nodes its pods can
// use" after the level when Selective).
func (f Shortfall) String() string {
	asks, of := f.asks(), f.of()
	switch {
	case f.Room < 0:
		return fmt.Sprintf("needs %s within one `%s`; no schedulable node has that label", asks, f.Level)
	case f.Required:
		return fmt.Sprintf("needs %s within one `%s`%s; the largest free one has %d", asks, f.Level, of, f.Room)
	default:
		return fmt.Sprintf("needs %s within as few `%s` as hold them%s; all of them together have %d", asks, f.Level, of, f.Room)
	}
}

// Unfreed says it for a placement as if some pods were gone
// (PlaceWithout), to follow "evicting them would free": "no `rack` with
// room for 8 × 1 nvidia.com/gpu (the largest would have room for 6)".
func (f Shortfall) Unfreed() string {
	asks, of := f.asks(), f.of()
	switch {
	case f.Room < 0:
		return fmt.Sprintf("no `%s` for %s: no schedulable node has that label", f.Level, asks)
	case f.Required:
		return fmt.Sprintf("no `%s`%s with room for %s (the largest would have room for %d)", f.Level, of, asks, f.Room)
	default:
		return fmt.Sprintf("no room for %s in `%s` domains%s (all of them together would have room for %d)", asks, f.Level, of, f.Room)
	}
}

// of narrows the domains' room to the nodes the pods can use, when some
// are not counted (Selective): " of the nodes its pods can use".
func (f Shortfall) of() string {
	if f.Selective {
		return " of the nodes its pods can use"
	}
	return ""
}

// asks is what the pod set asks for: "8 × 1 nvidia.com/gpu".
func (f Shortfall) asks() string {
	if f.Resource == "" {
		return fmt.Sprintf("%d pods", f.Pods)
	}
	return fmt.Sprintf("%d × %s %s", f.Pods, f.PerPod.String(), f.Resource)
}

// Place finds where each pod set of a unit that asks for a level goes,
// one after another, each seeing the room the previous ones took. When
// all fit, their room is taken from the snapshot; when one does not,
// nothing is taken. The error is for an ask the topology cannot answer
// (a level it does not have), which no change of the cluster mends.
//
// A required level gets the domain of that level that has room for all
// the pods with the least room to spare, ties going to the first by its
// values (Kueue's BestFit). A preferred level gets the same when one
// domain has room; else, from the level above upwards, the first domain
// whose domains of the asked level have room together (again the one with
// the least to spare), or failing any, as few top-level domains as have
// it; and from there down to the asked level, at each level as few
// domains as hold the pods, the roomiest first and the last the tightest
// that holds what remains (Kueue's order). Inside a chosen domain the pods
// go, the same way, to as few domains and nodes as hold them.
func (s *Snapshot) Place(sets []PodSet) (Result, error) { return s.PlaceFor("", sets) }

// PlaceFor is Place, and remembers the room taken as owner's (none for
// ""), for PlaceWithout. A placement that fits but cannot be recorded
// (Unrecordable) takes nothing: its unit waits, and the room is for the
// units tried after it.
func (s *Snapshot) PlaceFor(owner string, sets []PodSet) (Result, error) {
	mark := len(s.taken)
	res, err := s.try(sets)
	if err == nil && res.Fits() {
		if res.Unrecordable(s.levels, sets) != "" {
			s.undo(mark)
		} else {
			s.own(owner, mark)
		}
	}
	s.taken = s.taken[:mark]
	return res, err
}

// PlaceWithout says where sets would go were some pods gone: those whose
// room owners took (PlaceFor, Assume; each owner once), and those bound
// to nodes that hold held (per node name; a node the snapshot lacks is
// passed over). It takes nothing: the snapshot is as it was after it.
func (s *Snapshot) PlaceWithout(sets []PodSet, owners []string, held map[string]corev1.ResourceList) (Result, error) {
	mark := len(s.taken)
	defer s.undo(mark)
	for _, run := range s.ownedBy {
		if slices.Contains(owners, run.owner) {
			s.giveBack(s.owned[run.from:run.to])
		}
	}
	for name, list := range held {
		n, ok := s.nodeNamed(name)
		if !ok {
			continue
		}
		req := make([]int64, len(s.names))
		for r, q := range list {
			if j, ok := s.resource(r); ok {
				req[j] = amount(r, q)
			}
		}
		s.adjust(n, req, 1)
		s.taken = append(s.taken, taking{node: n, pods: -1, shape: req})
	}
	return s.try(sets)
}

// try is Place, leaving the room taken in s.taken past its start (to
// commit or undo); nothing is taken when the unit does not fit.
func (s *Snapshot) try(sets []PodSet) (Result, error) {
	// A unit has at most MaxPodSets pod sets (its CRD says so); more
	// could make one unit's shapes crowd out one another before it is
	// placed whole.
	if len(sets) > schedulingv1alpha1.MaxPodSets {
		return Result{}, fmt.Errorf("%d pod sets: a unit has at most %d", len(sets), schedulingv1alpha1.MaxPodSets)
	}
	var room [schedulingv1alpha1.MaxPodSets]int
	levels := room[:0]
	for i := range sets {
		ps := &sets[i] // a PodSet is large: not copied
		levels = append(levels, -1)
		if ps.Ask.IsZero() {
			continue
		}
		level, err := s.levels.Resolve(ps.Ask)
		if err != nil {
			return Result{}, fmt.Errorf("pod set %q: %w", ps.Name, err)
		}
		levels[i] = level
	}
	mark := len(s.taken)
	out := Result{Placements: make([]Placement, len(sets))}
	for i := range sets {
		ps := &sets[i]
		out.Placements[i] = Placement{PodSet: ps.Name, Level: levels[i]}
		if levels[i] < 0 || ps.Count <= 0 {
			continue
		}
		sh := s.shapeOf(ps)
		var chosen []item
		if ps.Ask.Required {
			chosen = s.required(sh, levels[i], int64(ps.Count))
		} else {
			chosen = s.preferred(sh, levels[i], int64(ps.Count))
		}
		if chosen == nil {
			s.undo(mark)
			return Result{Shortfall: s.shortfall(sh, *ps, levels[i])}, nil
		}
		domains := make([]Domain, len(chosen))
		for j, it := range chosen {
			s.spread(sh, it.idx, it.count)
			domains[j] = Domain{Values: s.domains[it.idx].values, Pods: int32(it.count)}
		}
		out.Placements[i].Domains = domains
	}
	return out, nil
}

// Assume takes the room of pods admitted to domains (a Placement's
// Domains, of level level) but not placed on nodes yet, so that they are
// not given twice, and remembers it as owner's (none for ""), for
// PlaceWithout. It returns how many of them found room: fewer when the
// domains no longer have it, or no longer exist.
func (s *Snapshot) Assume(owner string, ps PodSet, domains []Domain) int32 {
	mark := len(s.taken)
	placed := s.assume(ps, domains)
	s.own(owner, mark)
	s.taken = s.taken[:mark]
	return placed
}

// assume is Assume, leaving in s.taken, past where it was, what it took.
func (s *Snapshot) assume(ps PodSet, domains []Domain) int32 {
	sh := s.shapeOf(&ps)
	var placed int64
	for _, d := range domains {
		dom := s.find(d.Values)
		if dom < 0 || d.Pods <= 0 {
			continue
		}
		s.sync(sh)
		placed += s.spread(sh, dom, min(int64(d.Pods), sh.sums[dom]))
	}
	return int32(min(placed, maxPods))
}

// required is the domain of level with room for n pods and the least to
// spare, with n as its count; nil if none.
func (s *Snapshot) required(sh *shape, level int, n int64) []item {
	s.sync(sh)
	best := bestFit(s.byLevel[level], sh.sums, n)
	if best < 0 {
		return nil
	}
	return []item{{count: n, idx: best}}
}

// bestFit is the first of ds whose count is the least at or above n, -1
// if none. The first with exactly n is that one: no later one is tighter.
func bestFit(ds []int32, counts []int64, n int64) int32 {
	best := int32(-1)
	for _, d := range ds {
		if c := counts[d]; c >= n && (best < 0 || c < counts[best]) {
			best = d
			if c == n {
				break
			}
		}
	}
	return best
}

// preferred places n pods at level, in one domain if one has room, else
// in as few as have it (see Place), each with its pods as its count,
// ordered by their values; nil if all of them together have not.
func (s *Snapshot) preferred(sh *shape, level int, n int64) []item {
	if one := s.required(sh, level, n); one != nil {
		return one
	}
	start := len(s.items)
	defer func() { s.items = s.items[:start] }()
	s.aggregate(sh, level)
	// The narrowest domain above the level whose domains of the level
	// hold the pods together, with the least to spare; else as few
	// domains of the top level as hold them.
	from := -1
	for up := level - 1; up >= 0 && from < 0; up-- {
		if best := bestFit(s.byLevel[up], s.agg, n); best >= 0 {
			s.items = append(s.items, item{count: s.agg[best], idx: best})
			from = up
		}
	}
	if from < 0 {
		for _, d := range s.byLevel[0] {
			if c := s.room(sh, d, level); c > 0 {
				s.items = append(s.items, item{count: c, idx: d})
			}
		}
		if s.fewest(start, n) == 0 {
			return nil
		}
		from = 0
	}
	// Then down to the level, as few domains at each as hold the pods
	// among the children of those chosen above (Kueue's way: the fewest
	// racks, then the fewest hosts in them).
	for lv := from; lv < level; lv++ {
		hi := len(s.items)
		for i := start; i < hi; i++ {
			for _, c := range s.domains[s.items[i].idx].children {
				if r := s.room(sh, c, level); r > 0 {
					s.items = append(s.items, item{count: r, idx: c})
				}
			}
		}
		k := s.fewest(hi, n)
		copy(s.items[start:], s.items[hi:hi+k])
		s.items = s.items[:start+k]
	}
	out := slices.Clone(s.items[start:])
	slices.SortFunc(out, func(a, b item) int { return s.compare(a.idx, b.idx) })
	return out
}

// room is how many pods of sh the domains of level in d hold: d's own
// count at that level, aggregate's above it.
func (s *Snapshot) room(sh *shape, d int32, level int) int64 {
	if int(s.domains[d].level) == level {
		return sh.sums[d]
	}
	return s.agg[d]
}

// aggregate sets s.agg of each domain above level to what its domains of
// that level have room for together (nodes that belong to no domain of
// the level do not count: the pods must go to domains of the level).
func (s *Snapshot) aggregate(sh *shape, level int) {
	for up := range level {
		for _, d := range s.byLevel[up] {
			s.agg[d] = 0
		}
	}
	for _, d := range s.byLevel[level] {
		if c := sh.sums[d]; c > 0 {
			for a := s.domains[d].parent; a >= 0; a = s.domains[a].parent {
				s.agg[a] += c
			}
		}
	}
}

// fewest picks from the domains s.items[start:] as few as hold n pods:
// the roomiest first, and for the last the one that holds what remains
// with the least to spare. It leaves them in s.items[start:start+k], each
// with the pods it gets as its count, and returns k: 0 if all of them
// together do not hold n.
func (s *Snapshot) fewest(start int, n int64) int {
	cands := s.items[start:]
	var total int64
	for _, it := range cands {
		total += it.count
	}
	if total < n {
		s.items = s.items[:start]
		return 0
	}
	slices.SortFunc(cands, func(a, b item) int {
		if a.count != b.count {
			return cmpDesc(a.count, b.count)
		}
		return s.compare(a.idx, b.idx)
	})
	k := 0
	remaining := n
	for i := 0; remaining > 0 && i < len(cands); i++ {
		pick, pods := i, cands[i].count
		if pods >= remaining {
			pick, pods = i+lastFit(cands[i:], remaining), remaining
		}
		// Picks are written at or before where they are read.
		cands[k] = item{count: pods, idx: cands[pick].idx}
		k++
		remaining -= pods
	}
	s.items = s.items[:start+k]
	return k
}

// lastFit is, among items ordered roomiest first, the index of the first
// with the least room at or above n (items[0] has at least n).
func lastFit(items []item, n int64) int {
	j := 0
	for k := 1; k < len(items) && items[k].count >= n; k++ {
		if items[k].count != items[j].count {
			j = k
		}
	}
	return j
}

func cmpDesc(a, b int64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// item is a domain (node false) or a node (node true) and how many pods
// it has room for; rank is its place among its domain's members, when
// spread lists them.
type item struct {
	count int64
	idx   int32
	rank  int32
	node  bool
}

// spread takes, inside domain d, the room of n pods of sh, level by level
// on as few domains and nodes as hold them (the roomiest first, the last
// one the tightest that holds what remains). It returns how many found
// room.
func (s *Snapshot) spread(sh *shape, d int32, n int64) int64 {
	if d < 0 || n <= 0 {
		return 0
	}
	s.sync(sh)
	start := len(s.items)
	fit := -1 // the first of the tightest members that hold all n
	for rank, m := range s.domains[d].members {
		var c int64
		if m.node {
			c = int64(sh.counts[m.idx])
		} else {
			c = sh.sums[m.idx]
		}
		if c > 0 {
			s.items = append(s.items, item{count: c, idx: m.idx, node: m.node, rank: int32(rank)})
			if c >= n && (fit < 0 || c < s.items[fit].count) {
				fit = len(s.items) - 1
			}
		}
	}
	end := len(s.items)
	if fit >= 0 {
		// One member holds them all: the one the order below would pick,
		// found without ordering them.
		it := s.items[fit]
		s.items = s.items[:start]
		if it.node {
			s.take(sh, it.idx, n)
			return n
		}
		return s.spread(sh, it.idx, n)
	}
	slices.SortFunc(s.items[start:end], func(a, b item) int {
		if a.count != b.count {
			return cmpDesc(a.count, b.count)
		}
		return cmp.Compare(a.rank, b.rank)
	})
	remaining := n
	for i := start; remaining > 0 && i < end; i++ {
		pick, pods := i, s.items[i].count
		if pods >= remaining {
			pick, pods = i+lastFit(s.items[i:end], remaining), remaining
		}
		// Read the item before going down: spreading below grows s.items.
		it := s.items[pick]
		if it.node {
			s.take(sh, it.idx, pods)
		} else {
			pods = s.spread(sh, it.idx, pods)
		}
		remaining -= pods
	}
	s.items = s.items[:start]
	return n - remaining
}

// taking records a take so that a unit that does not fit whole can give
// its room back.
type taking struct {
	node  int32
	pods  int64
	shape []int64
}

// take takes the room of pods pods asking sh.req on node n.
func (s *Snapshot) take(sh *shape, n int32, pods int64) {
	s.adjust(n, sh.req, -pods)
	s.taken = append(s.taken, taking{node: n, pods: pods, shape: sh.req})
}

// own remembers what was taken since mark as owner's ("": nobody's).
// A taking keeps its shape's request, which is never changed.
func (s *Snapshot) own(owner string, mark int) {
	if owner == "" || len(s.taken) == mark {
		return
	}
	from := len(s.owned)
	s.owned = append(s.owned, s.taken[mark:]...)
	if n := len(s.ownedBy); n > 0 && s.ownedBy[n-1].owner == owner && s.ownedBy[n-1].to == from {
		s.ownedBy[n-1].to = len(s.owned)
		return
	}
	s.ownedBy = append(s.ownedBy, ownedRun{owner: owner, from: from, to: len(s.owned)})
}

// ownedRun is a run of Snapshot.owned taken for owner.
type ownedRun struct {
	owner    string
	from, to int
}

// giveBack gives back the room of ts, recorded in s.taken as takings
// of fewer pods, so that undo takes it again.
func (s *Snapshot) giveBack(ts []taking) {
	for _, t := range ts {
		s.adjust(t.node, t.shape, t.pods)
		s.taken = append(s.taken, taking{node: t.node, pods: -t.pods, shape: t.shape})
	}
}

// undo gives back what was taken since mark.
func (s *Snapshot) undo(mark int) {
	for i := len(s.taken) - 1; i >= mark; i-- {
		t := s.taken[i]
		s.adjust(t.node, t.shape, t.pods)
	}
	s.taken = s.taken[:mark]
}

func (s *Snapshot) adjust(n int32, req []int64, pods int64) {
	free := s.free[int(n)*len(s.names):]
	for r, q := range req {
		free[r] += pods * q
		s.total[r] += pods * q
	}
	s.changed = append(s.changed, n)
}

// shortfall says why ps does not fit at level.
func (s *Snapshot) shortfall(sh *shape, ps PodSet, level int) Shortfall {
	s.sync(sh)
	f := Shortfall{PodSet: ps.Name, Pods: ps.Count, Level: s.levels.Labels[level], Required: ps.Ask.Required, Room: -1, Selective: sh.usable != nil}
	f.Resource = s.scarcest(sh)
	if f.Resource != "" {
		f.PerPod = ps.PerPod[f.Resource]
	}
	for _, d := range s.byLevel[level] {
		if f.Required {
			f.Room = max(f.Room, sh.sums[d])
		} else {
			f.Room = max(f.Room, 0) + sh.sums[d]
		}
	}
	return f
}

// scarcest is the resource of sh the fewest pods find room for, over the
// whole snapshot: the one no node has, if any.
func (s *Snapshot) scarcest(sh *shape) corev1.ResourceName {
	if sh.missing != "" {
		return sh.missing
	}
	var scarce corev1.ResourceName
	var best float64
	for r, q := range sh.req {
		if q <= 0 {
			continue
		}
		// Pods of this resource the whole snapshot has room for, as if no
		// node's remainder were lost: cheap, and enough to name it.
		if pods := float64(max(s.total[r], 0)) / float64(q); scarce == "" || pods < best {
			best, scarce = pods, s.names[r]
		}
	}
	return scarce
}
