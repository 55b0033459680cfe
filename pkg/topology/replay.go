package topology

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Cluster is what the nodes hold, and for which unit, and what the units
// ask of them: what a replay of the admissions to come (pkg/forecast)
// starts from. A Replay reads it and never changes it, so that one Cluster
// serves any number of replays, each with the same result.
type Cluster struct {
	// Topologies are the levels of the Topologies units ask for, by name.
	Topologies map[string]Levels
	Nodes      []Node
	// Resources name the amounts of every Holding, by index.
	Resources []corev1.ResourceName
	// Held is what the pods that belong to no unit of Units hold: they
	// keep it throughout.
	Held []Holding
	// Units are the units that ask for a level, or whose pods hold room
	// on the nodes, by key.
	Units map[string]Unit
}

// Holding is what pods hold on one node, by Cluster.Resources, as the
// kube-scheduler counts it: milli-cores for cpu, whole units for the rest
// (pkg/podledger's sums, taken as they are). A node may have several.
type Holding struct {
	Node    string
	Amounts []int64
}

// Unit is what one unit asks of the nodes and holds on them.
type Unit struct {
	// Topology is the Topology in force for the unit ("" when none of its
	// pod sets asks for a level); PodSets are its pod sets, whole.
	Topology string
	PodSets  []PodSet
	// Held is what its pods hold on the nodes.
	Held []Holding
	// Assumed are its pods admitted to domains and not on a node yet.
	Assumed []Assumed
}

// Assumed are the pods of a pod set admitted to domains of a Topology and
// not on a node yet (Snapshot.Assume).
type Assumed struct {
	Topology string
	PodSet   PodSet
	Domains  []Domain
}

// Replay is a Cluster as admissions and ends change it: one Snapshot per
// Topology of the Cluster, in which each unit takes room as it is placed
// and, as it ends, gives back all it holds (its pods', its assumed pods',
// its placement's). The snapshots are over the same nodes, so what a unit
// takes in one is taken in all. It is the decision core's Placer
// (pkg/scheduler) for a replay, which tells it what the core decided with
// Admit, EndCycle and End. It is not safe for concurrent use.
type Replay struct {
	cluster *Cluster
	// snaps are the Topologies' snapshots, by their names' order; byName
	// finds them.
	snaps  []*Snapshot
	byName map[string]*Snapshot
	// nodes finds a node's index, the same in every snapshot; resources
	// are the index in the snapshots of each of Cluster.Resources, -1 for
	// one no node has.
	nodes     *Tree
	resources []int
	// held is what each unit holds, by key; placed, for each unit placed
	// in the current cycle, where its placement starts in held.
	held   map[string][]taking
	placed map[string]int
	// floors are, by Topology, snapshots of the nodes with only
	// Cluster.Held taken, built at their first use by Never.
	floors map[string]*Snapshot
}

// NewReplay starts a replay of c in which the units present says are
// there hold what c says they hold; the room of the others' pods is free.
func NewReplay(c *Cluster, present func(key string) bool) *Replay {
	r := &Replay{cluster: c, byName: make(map[string]*Snapshot, len(c.Topologies)), held: map[string][]taking{}, placed: map[string]int{}}
	for _, name := range slices.Sorted(maps.Keys(c.Topologies)) {
		s := NewSnapshot(c.Topologies[name], c.Nodes, nil)
		r.snaps = append(r.snaps, s)
		r.byName[name] = s
	}
	if len(r.snaps) == 0 {
		return r
	}
	r.index(r.snaps[0])
	for _, h := range c.Held {
		if t, ok := r.taking(h); ok {
			r.apply(t, -1, nil)
		}
	}
	// In the order of their keys, so that the same Cluster gives the same
	// replay; the pods on nodes first, then those admitted and not on one
	// (as a live snapshot takes them).
	keys := make([]string, 0, len(c.Units))
	for key := range c.Units {
		if present(key) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		for _, h := range c.Units[key].Held {
			if t, ok := r.taking(h); ok {
				r.apply(t, -1, nil)
				r.held[key] = append(r.held[key], t)
			}
		}
	}
	for _, key := range keys {
		for _, a := range c.Units[key].Assumed {
			if s := r.byName[a.Topology]; s != nil {
				mark := len(s.taken)
				s.assume(a.PodSet, a.Domains)
				r.keep(key, s, mark)
			}
		}
	}
	return r
}

// Place is the Placer of the replay's core: it places the unit key's pod
// sets (with the pods partial says) in the snapshot of its Topology and
// takes their room, as the live Placer does. A unit that asks for no
// level, or for one of a Topology the Cluster does not have, is placed as
// its quota admits it.
func (r *Replay) Place(key string, partial map[string]int32) (why string, ok bool) {
	u, s := r.asker(key)
	if s == nil {
		return "", true
	}
	mark := len(s.taken)
	sets := WithCounts(u.PodSets, partial)
	res, err := s.try(sets)
	if err != nil {
		return err.Error(), false
	}
	if !res.Fits() {
		return res.Reason(), false
	}
	if why := res.Unrecordable(s.levels, sets); why != "" {
		s.undo(mark)
		return why, false
	}
	if _, ok := r.placed[key]; !ok {
		r.placed[key] = len(r.held[key])
	}
	r.keep(key, s, mark)
	return "", true
}

// asker is the unit key and the snapshot of the Topology it asks a level
// of; no snapshot when it asks none, or one the Cluster does not have.
func (r *Replay) asker(key string) (Unit, *Snapshot) {
	u, ok := r.cluster.Units[key]
	if !ok || u.Topology == "" {
		return u, nil
	}
	return u, r.byName[u.Topology]
}

// PlaceWithout says, as the live Placer does, whether the unit key would
// fit were the room of victims (their pods and placements in the replay)
// given back. It takes nothing.
func (r *Replay) PlaceWithout(key string, victims []string) (why string, ok bool) {
	u, s := r.asker(key)
	if s == nil {
		return "", true
	}
	mark := len(s.taken)
	defer s.undo(mark)
	for _, v := range victims {
		s.giveBack(r.held[v])
	}
	res, err := s.try(u.PodSets)
	switch {
	case err != nil:
		return err.Error(), false
	case !res.Fits():
		return res.Shortfall.Unfreed(), false
	}
	return "", true
}

// Admit says that the core admitted the unit key (with the pods partial
// says): it keeps what Place took for it in this cycle, or, when the core
// admitted it without asking (a preemptor whose victims are gone), places
// it now if it fits, as the live Placer does.
func (r *Replay) Admit(key string, partial map[string]int32) {
	if _, ok := r.placed[key]; !ok {
		r.Place(key, partial)
	}
	delete(r.placed, key)
}

// EndCycle gives back what Place took in this cycle for units the core
// did not admit, and reports whether there was any.
func (r *Replay) EndCycle() bool {
	gave := false
	for key, start := range r.placed {
		held := r.held[key]
		for _, t := range held[start:] {
			r.apply(t, 1, nil)
		}
		r.held[key] = held[:start]
		gave = true
	}
	clear(r.placed)
	return gave
}

// End gives back all the unit key holds: it ended, or was evicted. It
// reports whether it held anything.
func (r *Replay) End(key string) bool {
	held, ok := r.held[key]
	for _, t := range held {
		r.apply(t, 1, nil)
	}
	delete(r.held, key)
	delete(r.placed, key)
	return ok && len(held) > 0
}

// Never says why the unit key, with the pods counts says of each pod set
// (nil: all), would not fit even were no unit's pods on the nodes, and so
// never will; false when it would, or asks for no level.
func (r *Replay) Never(key string, counts map[string]int32) (why string, never bool) {
	u, ok := r.cluster.Units[key]
	if !ok || u.Topology == "" {
		return "", false
	}
	levels, ok := r.cluster.Topologies[u.Topology]
	if !ok {
		return "", false
	}
	floor := r.floors[u.Topology]
	if floor == nil {
		floor = NewSnapshot(levels, r.cluster.Nodes, nil)
		for _, h := range r.cluster.Held {
			if t, ok := r.taking(h); ok {
				floor.adjust(t.node, t.shape, -t.pods)
			}
		}
		if r.floors == nil {
			r.floors = map[string]*Snapshot{}
		}
		r.floors[u.Topology] = floor
	}
	mark := len(floor.taken)
	res, err := floor.try(WithCounts(u.PodSets, counts))
	floor.undo(mark)
	switch {
	case err != nil:
		return err.Error(), true
	case !res.Fits():
		return res.Reason(), true
	}
	return "", false
}

// keep records for key what s took since mark, and takes it in the other
// snapshots.
func (r *Replay) keep(key string, s *Snapshot, mark int) {
	for _, t := range s.taken[mark:] {
		r.apply(t, -1, s)
		r.held[key] = append(r.held[key], t)
	}
	s.taken = s.taken[:mark]
}

// apply takes (sign -1) or gives back (1) t in every snapshot but skip.
func (r *Replay) apply(t taking, sign int64, skip *Snapshot) {
	for _, s := range r.snaps {
		if s != skip {
			s.adjust(t.node, t.shape, sign*t.pods)
		}
	}
}

// index finds the nodes and resources of the Cluster in s, as in every
// snapshot of it (the same nodes, the same resources, in the same order).
func (r *Replay) index(s *Snapshot) {
	r.nodes = s.Tree
	r.resources = make([]int, len(r.cluster.Resources))
	for i, name := range r.cluster.Resources {
		j, ok := s.resource(name)
		if !ok {
			j = -1
		}
		r.resources[i] = j
	}
}

// taking is h as the snapshots take it; false for a node in none (not
// schedulable).
func (r *Replay) taking(h Holding) (taking, bool) {
	n, ok := r.nodes.nodeNamed(h.Node)
	if !ok {
		return taking{}, false
	}
	shape := make([]int64, len(r.snaps[0].names))
	for i, v := range h.Amounts {
		if i < len(r.resources) && r.resources[i] >= 0 {
			shape[r.resources[i]] = min(max(v, 0), maxAmount)
		}
	}
	return taking{node: n, pods: 1, shape: shape}, true
}

// WithCounts is sets with the pods counts says of each (nil: sets): a
// partial admission's. sets is not changed.
func WithCounts(sets []PodSet, counts map[string]int32) []PodSet {
	if len(counts) == 0 {
		return sets
	}
	out := slices.Clone(sets)
	for i := range out {
		if n, ok := counts[out[i].Name]; ok {
			out[i].Count = n
		}
	}
	return out
}
