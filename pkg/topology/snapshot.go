package topology

import (
	"iter"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/koord-queue/koord-queue/pkg/watched"
)

// Node is what a snapshot needs of a node.
type Node struct {
	Name        string
	Labels      map[string]string
	Allocatable corev1.ResourceList
	// Amounts is Allocatable as AmountsOf says it, read once as the node
	// changes (FromNode) rather than at every tree built; nil: the tree
	// reads Allocatable.
	Amounts []Amount
	// Schedulable: Ready and not cordoned. Other nodes are left out.
	Schedulable bool
	// Taints are the node's NoSchedule and NoExecute taints: a pod set
	// that does not tolerate one of them has no room on the node.
	Taints []corev1.Taint
}

// FromNode is what a snapshot needs of n: schedulable while it is Ready,
// not cordoned and not being deleted (watched.NodeCapacity's rule, the
// one the cluster's capacity follows); its labels, which levels and pod
// sets' node selections read; its taints that keep pods off.
func FromNode(n *corev1.Node) Node {
	return Node{Name: n.Name, Labels: n.Labels, Allocatable: n.Status.Allocatable, Amounts: AmountsOf(n.Status.Allocatable),
		Schedulable: watched.NodeCapacity(n) != nil, Taints: schedulingTaints(n.Spec.Taints)}
}

// Tree is the domain tree of one Topology over the schedulable nodes,
// and what each node has: built when the nodes or the Topology change
// (NewTree), and shared, read only, by the snapshots of the cycles until
// then (Tree.Snapshot), so that a cycle pays for what its pods hold, not
// for the tree.
type Tree struct {
	levels Levels

	// names are the resources some node has, ordered by name: their
	// positions in each node's amounts (resource).
	names []corev1.ResourceName

	// has counts, per resource of names, the nodes that name it.
	has []int32

	nodes []node
	// byName finds a node's position in nodes (nodeNamed: an empty one is
	// no node).
	byName map[string]int32
	// tainted: some node has a taint that keeps pods off.
	tainted bool
	// empty counts the positions in nodes a node left and detached the
	// domains left with no node, both kept by Changed for one that comes
	// back.
	empty, detached int
	// allocatable is each node's: len(names) amounts per node, node after
	// node.
	allocatable []int64

	domains []domain
	// byLevel holds the domains of each level, ordered by their values
	// from the top (so that ties go to the first by name).
	byLevel [][]int32
	// lookup finds a domain by its parent and its value.
	lookup map[domainKey]int32
}

// Snapshot is a Tree with what each node has free. It is built once per
// admission cycle (Tree.Snapshot, NewSnapshot) and then changed only by
// Place and Assume, which take the room of what they place (PlaceWithout
// only looks). It is not safe for concurrent use.
type Snapshot struct {
	*Tree

	// free is each node's allocatable less what its pods hold and what
	// was taken: len(names) amounts per node, node after node. held, laid
	// out the same, is what each node's pods hold, for Domains.
	free []int64
	held []int64
	// total is the free amounts of every node, summed per resource.
	total []int64

	// changed lists the nodes whose free amounts changed, in order; each
	// shape counts its pods again on those it has not seen.
	changed []int32
	shapes  []*shape
	uses    uint64
	// taken records what Place took for the unit it places, to give it
	// back when a later pod set of the unit does not fit.
	taken []taking
	// owned is what PlaceFor and Assume took for owners named, in
	// order, and ownedBy whose each run of it is: only PlaceWithout
	// (preemption) looks an owner up, so a placement keeps no map.
	owned   []taking
	ownedBy []ownedRun

	// Scratch space reused from one placement to the next.
	items []item
	agg   []int64
	req   []int64
}

type node struct {
	name    string
	labels  map[string]string
	taints  []corev1.Taint
	amounts []Amount
	// domain is the narrowest domain the node belongs to, -1 for none.
	domain int32
	// empty: a position kept for a node that left (Changed); it has no
	// labels, amounts or domain.
	empty bool
}

type domain struct {
	level  int32
	parent int32 // -1 at the top level
	// values are the level labels' values from the top level down to
	// this domain's.
	values   []string
	children []int32
	// nodes whose narrowest domain this is (they lack the next level's
	// label, or this is the last level), ordered by name.
	nodes []int32
	// members are children and nodes together, ordered by name (the
	// last value of a child's; a node first when the two are the same),
	// so that a placement's ties among them compare positions, not names.
	members []member
	// detached: no node is in it, and it is in no list (Changed).
	detached bool
}

// member is a child domain (node false) or a node of a domain.
type member struct {
	idx  int32
	node bool
}

type domainKey struct {
	parent int32
	value  string
}

// NewSnapshot is NewTree(levels, nodes).Snapshot(held).
func NewSnapshot(levels Levels, nodes []Node, held map[string]corev1.ResourceList) *Snapshot {
	return NewTree(levels, nodes).Snapshot(held)
}

// NewTree builds the domain tree of levels over the schedulable nodes. A
// node lacking a level's label, or whose value for it is empty, belongs to
// no domain at that level or below.
func NewTree(levels Levels, nodes []Node) *Tree {
	t := &Tree{levels: levels, byLevel: make([][]int32, len(levels.Labels)),
		lookup: make(map[domainKey]int32, len(nodes))}
	order := make([]int, 0, len(nodes))
	amounts := make([][]Amount, len(nodes))
	named := map[corev1.ResourceName]bool{}
	for i := range nodes {
		if !nodes[i].Schedulable {
			continue
		}
		order = append(order, i)
		amounts[i] = nodes[i].Amounts
		if amounts[i] == nil {
			amounts[i] = AmountsOf(nodes[i].Allocatable)
		}
		for _, a := range amounts[i] {
			if !named[a.Name] {
				named[a.Name] = true
				t.names = append(t.names, a.Name)
			}
		}
	}
	// Resources by name, so that a message's choice among equals is stable.
	slices.Sort(t.names)
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(nodes[a].Name, nodes[b].Name) })
	r := len(t.names)
	t.has = make([]int32, r)
	t.nodes = make([]node, 0, len(order))
	t.byName = make(map[string]int32, len(order))
	t.allocatable = make([]int64, len(order)*r)
	recent := slices.Repeat([]int32{-1}, len(levels.Labels))
	for _, i := range order {
		n := &nodes[i]
		idx := int32(len(t.nodes))
		t.nodes = append(t.nodes, node{name: n.Name, labels: n.Labels, taints: n.Taints, amounts: amounts[i], domain: t.place(n.Labels, recent)})
		t.byName[n.Name] = idx
		t.tainted = t.tainted || len(n.Taints) > 0
		if t.nodes[idx].domain >= 0 {
			d := &t.domains[t.nodes[idx].domain]
			d.nodes = append(d.nodes, idx)
		}
		alloc := t.allocatable[int(idx)*r : int(idx+1)*r]
		for _, a := range amounts[i] {
			j, _ := t.resource(a.Name)
			alloc[j] = a.Value
			t.has[j]++
		}
	}
	for level := range t.byLevel {
		slices.SortFunc(t.byLevel[level], t.compare)
	}
	for i := range t.domains {
		slices.SortFunc(t.domains[i].children, t.compare)
		t.domains[i].members = t.membersOf(&t.domains[i])
	}
	return t
}

// membersOf merges d's children and nodes, each already ordered by name
// (nodes are indexed in their names' order).
func (t *Tree) membersOf(d *domain) []member {
	out := make([]member, 0, len(d.children)+len(d.nodes))
	cs, ns := d.children, d.nodes
	for len(cs) > 0 || len(ns) > 0 {
		if len(ns) == 0 || len(cs) > 0 && t.lastValue(cs[0]) < t.nodes[ns[0]].name {
			out = append(out, member{idx: cs[0]})
			cs = cs[1:]
		} else {
			out = append(out, member{idx: ns[0], node: true})
			ns = ns[1:]
		}
	}
	return out
}

// resource is name's position in each node's amounts; false for a
// resource no node has. A binary search of the few names costs less than
// a map's hash on the placement path.
func (t *Tree) resource(name corev1.ResourceName) (int, bool) {
	return slices.BinarySearch(t.names, name)
}

// nodeNamed is the position of the node name; false for a node the tree
// lacks.
func (t *Tree) nodeNamed(name string) (int32, bool) {
	n, ok := t.byName[name]
	return n, ok && !t.nodes[n].empty
}

func (t *Tree) lastValue(d int32) string {
	v := t.domains[d].values
	return v[len(v)-1]
}

// Snapshot is the tree with what each node has free: its allocatable less
// held, per node name, what the pods on it hold (pkg/podledger keeps what
// pods hold by the group they belong to, not by node: the caller sums its
// pods' requests per node). Nodes held names that the tree lacks are
// ignored.
func (t *Tree) Snapshot(held map[string]corev1.ResourceList) *Snapshot {
	return t.SnapshotHolding(t.names, func(yield func(string, []int64) bool) {
		amounts := make([]int64, len(t.names))
		for name, l := range held {
			clear(amounts)
			for res, q := range l {
				if j, ok := t.resource(res); ok {
					amounts[j] = amount(res, q)
				}
			}
			if !yield(name, amounts) {
				return
			}
		}
	})
}

// SnapshotHolding is Snapshot of what the pods hold given as amounts of
// resources, by node name, in amount's units (pkg/podledger's sums, as a
// Holding says them): no list is made per node, as a cycle's snapshot of
// thousands of nodes would otherwise make. A node may come more than once.
func (t *Tree) SnapshotHolding(resources []corev1.ResourceName, held iter.Seq2[string, []int64]) *Snapshot {
	return t.snapshotOf(t.Occupancy(resources, held).held)
}

// Occupancy is what the pods on a tree's nodes hold, kept from one cycle
// to the next and changed only on the nodes whose pods changed (Update),
// so that a cycle's snapshot copies it (Snapshot) rather than reading
// every node's pods.
type Occupancy struct {
	tree *Tree
	// held is what each node's pods hold, laid out as Snapshot.held.
	held []int64
}

// Occupancy is what held says the pods on t's nodes hold, as
// SnapshotHolding reads it.
func (t *Tree) Occupancy(resources []corev1.ResourceName, held iter.Seq2[string, []int64]) *Occupancy {
	o := &Occupancy{tree: t, held: make([]int64, len(t.allocatable))}
	to := t.resourceIndexes(resources)
	for name, amounts := range held {
		if n, ok := t.nodeNamed(name); ok {
			t.addHeld(o.held, to, n, amounts)
		}
	}
	return o
}

// Update makes each node changed names hold, now, the amounts it gives
// (nil: nothing), of resources as SnapshotHolding reads them; a node the
// tree lacks is passed over.
func (o *Occupancy) Update(resources []corev1.ResourceName, changed iter.Seq2[string, []int64]) {
	t := o.tree
	to := t.resourceIndexes(resources)
	r := len(t.names)
	for name, amounts := range changed {
		n, ok := t.byName[name] // an empty position's amounts count nowhere
		if !ok {
			continue
		}
		clear(o.held[int(n)*r : int(n+1)*r])
		t.addHeld(o.held, to, n, amounts)
	}
}

// On is o on t, a tree Changed from o's: each node keeps what its pods
// held in o, one that came holds nothing, until Update says what they
// hold: the caller updates every node the change named.
func (o *Occupancy) On(t *Tree) *Occupancy {
	held := make([]int64, len(t.allocatable))
	copy(held, o.held)
	return &Occupancy{tree: t, held: held}
}

// Snapshot is the tree with what o says its nodes' pods hold.
func (o *Occupancy) Snapshot() *Snapshot { return o.tree.snapshotOf(slices.Clone(o.held)) }

// resourceIndexes maps resources' indexes to the tree's, -1 for a
// resource no node has.
func (t *Tree) resourceIndexes(resources []corev1.ResourceName) []int {
	to := make([]int, len(resources))
	for i, name := range resources {
		to[i] = -1
		if j, ok := t.resource(name); ok {
			to[i] = j
		}
	}
	return to
}

// addHeld adds into held, laid out as Snapshot.held, that node n's pods
// hold amounts (indexed as to maps them), each sum at most maxAmount.
func (t *Tree) addHeld(held []int64, to []int, n int32, amounts []int64) {
	row := held[int(n)*len(t.names):]
	for i, a := range amounts[:min(len(amounts), len(to))] {
		if j := to[i]; j >= 0 && a > 0 {
			row[j] += min(a, maxAmount-row[j]) // both at most maxAmount: no overflow
		}
	}
}

// snapshotOf is the tree with held (laid out as Snapshot.held, now the
// snapshot's) held by the nodes' pods.
func (t *Tree) snapshotOf(held []int64) *Snapshot {
	s := &Snapshot{Tree: t, free: make([]int64, len(held)), held: held, agg: make([]int64, len(t.domains))}
	for i, h := range held {
		s.free[i] = t.allocatable[i] - h
	}
	s.sumFree()
	return s
}

// sumFree totals what the nodes have free.
func (s *Snapshot) sumFree() {
	r := len(s.names)
	s.total = make([]int64, r)
	for n := range s.nodes {
		for j, f := range s.free[n*r : (n+1)*r] {
			// A node whose pods hold more than it has adds nothing. (Place
			// changes only amounts it asks for and had room for, so the
			// total follows by plain deltas.)
			s.total[j] += max(f, 0)
		}
	}
}

// place finds or makes the domains of a node with labels, returning the
// narrowest. recent holds, per level, the domain the node placed before
// this one found (-1: none), which nodes ordered by name often share:
// found again without a lookup.
func (s *Tree) place(labels map[string]string, recent []int32) int32 {
	parent := int32(-1)
	for level, key := range s.levels.Labels {
		value, ok := labels[key]
		if !ok || value == "" {
			break
		}
		if r := recent[level]; r >= 0 && s.domains[r].parent == parent && s.lastValue(r) == value {
			parent = r
			continue
		}
		k := domainKey{parent, value}
		d, ok := s.lookup[k]
		if !ok {
			d = int32(len(s.domains))
			values := s.valuesBelow(parent, value)
			s.domains = append(s.domains, domain{level: int32(level), parent: parent, values: values})
			s.lookup[k] = d
			s.byLevel[level] = append(s.byLevel[level], d)
			if parent >= 0 {
				s.domains[parent].children = append(s.domains[parent].children, d)
			}
		}
		recent[level] = d
		parent = d
	}
	return parent
}

// valuesBelow are the values of the domain of value under parent (-1:
// at the top level).
func (t *Tree) valuesBelow(parent int32, value string) []string {
	if parent < 0 {
		return []string{value}
	}
	return append(slices.Clip(t.domains[parent].values), value)
}

func (s *Tree) compare(a, b int32) int {
	return slices.Compare(s.domains[a].values, s.domains[b].values)
}

// find is the domain of values (from the top level down), -1 if none
// (or one detached: no node is in it).
func (s *Tree) find(values []string) int32 {
	d := int32(-1)
	for _, v := range values {
		next, ok := s.lookup[domainKey{d, v}]
		if !ok {
			return -1
		}
		d = next
	}
	if d >= 0 && s.domains[d].detached {
		return -1
	}
	return d
}

// Levels is the snapshot's topology levels.
func (s *Snapshot) Levels() Levels { return s.levels }

// maxAmount bounds an amount, so that no sum of a few of them wraps
// around: a hostile quantity counts as this much.
const maxAmount = int64(1) << 62

var (
	maxUnits = *resource.NewQuantity(maxAmount, resource.DecimalSI)
	maxMilli = *resource.NewMilliQuantity(maxAmount, resource.DecimalSI)
)

// amount is q as the kube-scheduler counts it: milli-cores for cpu, whole
// units for everything else, rounded up; negative amounts count as none.
func amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if q.Sign() <= 0 {
		return 0
	}
	if name == corev1.ResourceCPU {
		if q.Cmp(maxMilli) >= 0 {
			return maxAmount
		}
		return q.MilliValue()
	}
	if q.Cmp(maxUnits) >= 0 {
		return maxAmount
	}
	return q.Value()
}

// maxPods is the most pods one node is counted to have room for: the
// count of a pod asking for nothing the nodes have.
const maxPods = math.MaxInt32
