package quota

import (
	"cmp"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
)

// Errors a quota can be in. Engine.Err wraps them with the details, so check
// them with errors.Is.
var (
	// ErrUnknownQuota: units name a quota that has no ElasticQuota.
	ErrUnknownQuota = errors.New("no such ElasticQuota")
	// ErrMissingParent: the parent label names a quota that does not exist.
	ErrMissingParent = errors.New("parent quota does not exist")
	// ErrCycle: following parents leads back to the quota.
	ErrCycle = errors.New("quota parents form a cycle")
	// ErrNegative: a min or max is negative (Koordinator's webhook refuses it).
	ErrNegative = errors.New("min and max must not be negative")
	// ErrNegativeWeight: the shared-weight annotation names a negative
	// amount (Koordinator's webhook refuses it).
	ErrNegativeWeight = errors.New("the " + elasticquotav1alpha1.AnnotationSharedWeight + " annotation must not be negative")
	// ErrMinAboveMax: min is above max for some resource.
	ErrMinAboveMax = errors.New("min is above max")
	// ErrMinNotInMax: min names a resource that max does not (Koordinator's
	// webhook refuses it: such a min would guarantee what nothing bounds).
	ErrMinNotInMax = errors.New("every resource in min must also be in max")
	// ErrParentNotMarked: the parent quota is not labelled
	// quota.scheduling.koordinator.sh/is-parent: "true".
	ErrParentNotMarked = errors.New(`parent quota is not labelled ` + elasticquotav1alpha1.LabelQuotaIsParent + `: "true"`)
	// ErrMinNotInParent: a child's min names a resource its parent's min
	// does not.
	ErrMinNotInParent = errors.New("every resource in a child's min must also be in its parent's min")
	// ErrChildrenMinAboveMin: the children's mins add up to more than the parent's min.
	ErrChildrenMinAboveMin = errors.New("children's mins add up to more than the parent's min")
	// ErrInvalidAncestor: an ancestor is in error, so this quota cannot be used.
	ErrInvalidAncestor = errors.New("an ancestor quota is invalid")
	// ErrTreeMismatch: the quota's tree id (label tree-id) is not its
	// parent's; only a quota hanging from koordinator-root-quota may differ.
	ErrTreeMismatch = errors.New("a quota's tree-id must be its parent's: quotas never cross quota trees")
	// ErrTreeCapacity: a tree's root has no valid total-resource annotation
	// (missing, malformed, or naming a negative amount), so the tree's
	// capacity is unknown and the tree admits nothing.
	ErrTreeCapacity = errors.New(`the root of a quota tree needs a valid ` + elasticquotav1alpha1.AnnotationTotalResource + ` annotation, its capacity`)
	// ErrNotTreeRoot: a quota with a tree id hangs from koordinator-root-quota
	// without being labelled its tree's root.
	ErrNotTreeRoot = errors.New(`a quota with a tree-id that hangs from ` + elasticquotav1alpha1.RootQuotaName +
		` must be its tree's root (` + elasticquotav1alpha1.LabelQuotaIsRoot + `: "true")`)
	// ErrDuplicateTreeRoot: another quota (the first by name) is already the
	// root of this quota's tree.
	ErrDuplicateTreeRoot = errors.New("another quota is the root of this quota tree")
	// ErrTreeRootParent: a quota labelled the root of a tree does not hang
	// from koordinator-root-quota.
	ErrTreeRootParent = errors.New("the root of a quota tree must hang from " + elasticquotav1alpha1.RootQuotaName)
	// ErrAlreadyCharged: the unit already holds quota.
	ErrAlreadyCharged = errors.New("unit already holds quota")
	// ErrNotCharged: the unit holds no quota.
	ErrNotCharged = errors.New("unit holds no quota")
)

// Charge is the quota an admitted unit holds.
type Charge struct {
	// Key identifies the unit (namespace/name).
	Key string
	// Quota is the quota charged, and so every ancestor of it.
	Quota string
	// Request is what the unit holds.
	Request Vector
	// Priority and AdmitTime order victims: lowest priority first, then
	// the most recently admitted.
	Priority  int32
	AdmitTime time.Time
	// Namespace, when set, is the unit's namespace: the charge also counts
	// in what that namespace holds (NamespaceUsed), whatever its quota.
	Namespace string
	// Hold marks a reservation: what a waiting unit holds of its quota
	// before it is admitted (a preemptor's, or a head's waiting out its
	// preemption delay). It counts in usage like any charge, but reclaim
	// never takes it, and judges whether a quota borrows on what its
	// admitted units hold, without holds (ReclaimVictims).
	Hold bool
}

type node struct {
	name string
	spec *Spec
	// parent is the accounting parent: the root of its tree for detached
	// quotas, nil for a root (the classic one or a quota tree's).
	parent *node
	// top is the root of n's tree: the classic root, or a quota tree's
	// root quota (see trees in doc.go).
	top *node
	// total is a quota tree root's capacity (Spec.TreeTotal), nil for
	// every other node. It also caps max.
	total   Vector
	kids    []*node
	depth   int
	err     error
	charges map[string]*Charge
	// placeholder: created for a quota without a spec, kept across the
	// rebuild that attaches it until it holds usage.
	placeholder bool
	// gone is the spec of a quota deleted while units still hold it: they
	// keep counting where it hung (its parent, its tree) until released.
	gone *Spec
	// outside: koordinator-default-quota or koordinator-system-quota, which
	// koord-scheduler keeps out of the fair shares: their runtime is their
	// max, and what their own units hold is taken off their parent's
	// runtime before their siblings share it (see share).
	outside bool

	min, max, weight, floor Vector
	// direct is what units charged to this very quota hold; used adds the
	// descendants'. eff is what the subtree occupies as seen from above:
	// max(floor, direct + sum of the children's eff), where floor is the
	// min of a quota that does not lend (its idle min stays reserved).
	direct, used, kidsEff, eff Vector
	// pending is what this quota's waiting units ask for.
	pending         Vector
	demand, runtime Vector
	// dp is direct+pending as of the last runtime computation; runtime
	// depends on usage only through it.
	dp Vector
	// changed: the node's usage (direct, or its descendants') changed
	// since the owner last drained the list (Engine.DrainChanged);
	// dpTouched: direct or pending changed since the last runtime
	// computation.
	changed, dpTouched bool
	// was is the node's room as the previous rebuild left it, for
	// Engine.Shrinks.
	was room
}

// room is what bounds the decisions made in a quota: where it hangs, its
// limits, and whether it admits at all.
type room struct {
	built      bool // the node was in the tree before this rebuild
	parent     *node
	max, floor Vector
	valid      bool
}

// Engine is the quota tree with its usage. The zero value is not usable;
// call NewEngine.
type Engine struct {
	names []corev1.ResourceName
	index map[corev1.ResourceName]int

	specs map[string]Spec
	// roots are the roots of the forest: the classic root first, then each
	// quota tree's root, by name.
	roots       []*node
	capacity    corev1.ResourceList
	capacitySet bool

	nodes   map[string]*node
	root    *node
	order   []*node // children before parents
	charges map[string]*Charge
	// nsUsed is what the charges of each namespace hold (Charge.Namespace);
	// a namespace whose charges hold nothing has no entry.
	nsUsed map[string]Vector

	// stale: a spec, the capacity or the resource list changed since the
	// tree was last built (settle).
	stale        bool
	runtimeStale bool
	// runtimeTree: the tree changed, so the next refresh recomputes every
	// runtime; otherwise it does only if some dpTouched node's direct+pending
	// differs from dp. runtimeGen counts the refreshes that recomputed.
	runtimeTree bool
	runtimeGen  int
	// shrinks counts the rebuilds that shrank some quota's room (Shrinks).
	shrinks uint64
	// hist is each quota's history of changes, for the children's-mins
	// rule (changes.go); seq numbers the changes seen once live.
	hist      map[string]*quotaHistory
	seq       uint64
	live      bool
	dpTouched []*node
	changed   []*node
	// scratch vectors for the hot paths, so they do not allocate.
	sumBase, maxFloor, delta Vector
	bind                     []*node
	claims                   []claim
}

// NewEngine returns an empty tree: only the root, with unknown (unlimited)
// capacity until SetClusterCapacity is called.
func NewEngine() *Engine {
	e := &Engine{
		index:   map[corev1.ResourceName]int{},
		specs:   map[string]Spec{},
		nodes:   map[string]*node{},
		charges: map[string]*Charge{},
		nsUsed:  map[string]Vector{},
		hist:    map[string]*quotaHistory{},
	}
	e.rebuild()
	return e
}

// SetClusterCapacity sets the root's capacity: the sum of allocatable over
// Ready, schedulable nodes. A resource it does not name has capacity zero
// if a quota names it; one that nothing names is not counted (Vector).
// An ElasticQuota named koordinator-root-quota with a max overrides it.
func (e *Engine) SetClusterCapacity(capacity corev1.ResourceList) {
	e.capacity = capacity.DeepCopy()
	e.capacitySet = true
	e.intern(capacity)
	e.treeChanged()
}

// UpsertQuota adds or replaces a quota. Problems with the tree are not
// returned here: they are reported per quota by Err, because they often
// involve several quotas and heal when another quota changes.
func (e *Engine) UpsertQuota(s Spec) { e.UpsertQuotas([]Spec{s}) }

// UpsertQuotas is UpsertQuota for many quotas.
func (e *Engine) UpsertQuotas(specs []Spec) {
	for _, s := range specs {
		own := s // every field, and copies of the lists the caller may reuse
		own.Min, own.Max, own.SharedWeight = s.Min.DeepCopy(), s.Max.DeepCopy(), s.SharedWeight.DeepCopy()
		own.TreeTotal = s.TreeTotal.DeepCopy()
		e.specs[s.Name] = own
	}
	for _, s := range specs {
		e.intern(s.Min)
		e.intern(s.Max)
		e.intern(s.SharedWeight)
		e.intern(s.TreeTotal)
	}
	for _, s := range specs {
		e.noteChange(s)
	}
	e.treeChanged()
}

// DeleteQuota removes a quota. Units still charged to it keep counting
// against the cluster until released.
func (e *Engine) DeleteQuota(name string) {
	if _, ok := e.specs[name]; !ok {
		return
	}
	if n, ok := e.nodes[name]; ok {
		s := e.specs[name]
		n.gone = &s
	}
	delete(e.specs, name)
	delete(e.hist, name)
	e.treeChanged()
}

// Vector converts a ResourceList into the engine's scaled amounts. Only the
// resources some quota's min, max or shared weight, or the cluster's
// capacity, names are kept: what nothing names is not limited (as
// koord-scheduler masks a request to the names in the quota's max), so a
// tenant's made-up names neither widen the engine nor hold the unit back.
//
// Quotas naming a new resource widen the engine (Len grows): vectors made
// before stay valid, zero in the new resource, so a caller that keeps them
// converts the requests again to count what they ask of it.
func (e *Engine) Vector(list corev1.ResourceList) Vector {
	v := make(Vector, len(e.names))
	for name, q := range list {
		if i, ok := e.index[name]; ok {
			v[i] = scaled(name, q)
		}
	}
	return v
}

// ResourceList converts a Vector back, leaving out zero amounts.
func (e *Engine) ResourceList(v Vector) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, a := range v {
		if a != 0 && i < len(e.names) {
			out[e.names[i]] = quantity(e.names[i], a)
		}
	}
	return out
}

// Len is how many resources the engine knows (those quotas and the cluster's
// capacity name); vectors it returns have this length. It only grows.
func (e *Engine) Len() int { return len(e.names) }

// intern learns the resources list names; its callers then mark the tree
// changed (treeChanged), as the nodes' vectors may be too short.
func (e *Engine) intern(list corev1.ResourceList) {
	for _, name := range sortedNames(list) {
		if _, ok := e.index[name]; !ok {
			e.index[name] = len(e.names)
			e.names = append(e.names, name)
		}
	}
}

// checkKeys applies the webhook's rules on resource names: min names only
// resources max names, and a child's min only resources its parent's min
// names (the root has no min of its own, so its children are exempt).
func (e *Engine) checkKeys(n *node) error {
	for _, r := range sortedNames(n.spec.Min) {
		if _, ok := n.spec.Max[r]; !ok {
			return fmt.Errorf("quota %q: min names %s, max does not: %w", n.name, r, ErrMinNotInMax)
		}
	}
	if n.parent == nil || n.parent == e.root || n.parent.spec == nil {
		return nil
	}
	for _, r := range sortedNames(n.spec.Min) {
		if _, ok := n.parent.spec.Min[r]; !ok {
			return fmt.Errorf("quota %q: min names %s, the min of its parent %q does not: %w", n.name, r, n.parent.name, ErrMinNotInParent)
		}
	}
	return nil
}

// Err is why units of the quota cannot be admitted, or nil.
func (e *Engine) Err(quota string) error {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok {
		if quota == elasticquotav1alpha1.RootQuotaName {
			return nil
		}
		return fmt.Errorf("quota %q: %w", quota, ErrUnknownQuota)
	}
	return n.err
}

// QuotaError is one quota's error.
type QuotaError struct {
	Quota string
	Err   error
}

// Errors lists every quota in error, by name.
func (e *Engine) Errors() []QuotaError {
	e.settle()
	var out []QuotaError
	for _, n := range e.order {
		if n.err != nil {
			out = append(out, QuotaError{Quota: n.name, Err: n.err})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Quota < out[j].Quota })
	return out
}

// Parent is the quota's parent in the tree as the engine uses it (the root
// of its tree for quotas whose parent is missing or in a cycle), "" for a
// root (the classic root or a quota tree's) or an unknown quota.
func (e *Engine) Parent(quota string) string {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok || n.parent == nil {
		return ""
	}
	return n.parent.name
}

// TreeID is the tree id of a quota's quota tree (a node pool's), "" for
// the classic tree or an unknown quota.
func (e *Engine) TreeID(quota string) string {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok || n.top == nil || n.top == e.root || n.top.spec == nil {
		return ""
	}
	return n.top.spec.TreeID
}

// KeepInTree says that units admitted in quota, which the engine does not
// know (deleted while they ran, before this process saw it), were
// admitted in the quota tree tree: they count under its root, as they
// would had the engine seen the quota deleted (DeleteQuota), never in the
// classic tree.
func (e *Engine) KeepInTree(quota, tree string) {
	if _, known := e.specs[quota]; known || tree == "" {
		return
	}
	n, ok := e.nodes[quota]
	if ok && n.gone != nil {
		return
	}
	if !ok {
		n = newNode(quota)
		n.placeholder = true // kept until it is charged
		e.nodes[quota] = n
	}
	n.gone = &Spec{Name: quota, TreeID: tree}
	e.treeChanged()
}

// TreeRoot is the root of the quota's tree as the engine counts it:
// koordinator-root-quota for the classic tree, a quota tree's root quota;
// "" for a quota it does not know.
func (e *Engine) TreeRoot(quota string) string {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok || n.top == nil {
		return ""
	}
	return n.top.name
}

// Capacity is a root's capacity, what its whole tree may use: for
// koordinator-root-quota, its max or else the cluster's capacity less the
// quota trees' (SetClusterCapacity); for a quota tree's root, its
// total-resource capped by its max. Resources without a limit are left out;
// nil for any other quota.
func (e *Engine) Capacity(quota string) corev1.ResourceList {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok || n.parent != nil || n != e.root && n.total == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for i, a := range n.max {
		if a != Unlimited {
			out[e.names[i]] = quantity(e.names[i], a)
		}
	}
	return out
}

// Ancestors calls fn for the quota and each ancestor up to the root of its
// tree.
func (e *Engine) Ancestors(quota string, fn func(name string)) {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok {
		return
	}
	for ; n != nil; n = n.parent {
		fn(n.name)
	}
}

// Used is what admitted units hold in the quota and its descendants.
// koordinator-root-quota's is the classic tree's: a quota tree's usage is
// its root's.
func (e *Engine) Used(quota string) corev1.ResourceList {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok {
		return corev1.ResourceList{}
	}
	return e.ResourceList(n.used)
}

// NamespaceUsed calls fn with each namespace whose charges hold something
// (Charge.Namespace) and what they hold, whatever their quotas, in no
// particular order.
func (e *Engine) NamespaceUsed(fn func(namespace string, used corev1.ResourceList)) {
	e.settle()
	for ns, v := range e.nsUsed {
		fn(ns, e.ResourceList(v))
	}
}

// UsedVector is Used as a Vector; callers must not modify it.
func (e *Engine) UsedVector(quota string) Vector {
	e.settle()
	if n, ok := e.nodes[quota]; ok {
		return n.used
	}
	return nil
}

// treeChanged is called when a quota, the capacity or the resource list
// changed. While loading (before MarkLoaded) it only marks the tree stale,
// so a start's thousands of quotas, fed one at a time, build it once: what
// a build decides then follows from the specs alone. Once live, the tree is
// built at once, because the children's-mins rule weighs each change
// against what its quotas were last valid with, which each build records.
func (e *Engine) treeChanged() {
	e.stale = true
	if e.live {
		e.rebuild()
	}
}

// settle builds the tree if it is stale. Every method that reads or charges
// the tree calls it first.
func (e *Engine) settle() {
	if e.stale {
		e.rebuild()
	}
}

// rebuild recomputes the tree from the specs. Usage (direct, pending and the
// charges) is kept; everything derived is recomputed. It is O(quotas). Its
// phases, in order: the nodes (resetNodes), the parents each quota declares
// and the tree roots (declareParents), the tree they make (link), the
// capacities and checks of each quota and of siblings, the trees' own
// capacities (boundTrees), what children inherit (inherit) and the sums
// up the tree (sumUp).
func (e *Engine) rebuild() {
	e.stale = false
	r := len(e.names)
	names := e.resetNodes(r)
	declared, treeRoots := e.declareParents(names)
	e.link(names, declared, treeRoots)
	e.setRootCapacity()
	e.checkQuotas(names)
	// Then the rule that weighs siblings against each other, among those
	// valid on their own.
	e.checkChildrenMins(names)
	e.keepRefusedMins()
	e.boundTrees(r)
	pre := e.preorder()
	e.inherit(pre)
	e.sumUp(pre)
	e.sumBase, e.maxFloor, e.delta = make(Vector, r), make(Vector, r), make(Vector, r)
	e.bind = make([]*node, r)
	e.runtimeStale, e.runtimeTree = true, true
	if e.shrank() {
		e.shrinks++
	}
}

// resetNodes keeps the nodes that have a spec, the root and the nodes still
// holding usage, makes those missing, and clears what each derives (its
// last room kept in was), sized for r resources. It returns their names,
// sorted.
func (e *Engine) resetNodes(r int) []string {
	// Keep nodes that have a spec, the root, and nodes still holding usage.
	for name, n := range e.nodes {
		if _, ok := e.specs[name]; !ok && name != elasticquotav1alpha1.RootQuotaName && !n.placeholder && len(n.charges) == 0 && isZero(n.pending) {
			delete(e.nodes, name)
		}
	}
	for name := range e.specs {
		if _, ok := e.nodes[name]; !ok {
			e.nodes[name] = newNode(name)
		}
	}
	if _, ok := e.nodes[elasticquotav1alpha1.RootQuotaName]; !ok {
		e.nodes[elasticquotav1alpha1.RootQuotaName] = newNode(elasticquotav1alpha1.RootQuotaName)
	}
	e.root = e.nodes[elasticquotav1alpha1.RootQuotaName]

	names := make([]string, 0, len(e.nodes))
	for name, n := range e.nodes {
		names = append(names, name)
		n.was = room{built: n.max != nil, parent: n.parent, max: n.max, floor: n.floor, valid: n.err == nil}
		n.parent, n.kids, n.err, n.spec, n.top, n.total = nil, nil, nil, nil, nil, nil
		if s, ok := e.specs[name]; ok {
			s := s
			n.spec, n.gone = &s, nil
		}
		n.min, n.max, n.weight, n.floor = grow(nil, r), grow(nil, r), grow(nil, r), grow(nil, r)
		n.direct, n.pending = grow(n.direct, r), grow(n.pending, r)
		n.used, n.kidsEff, n.eff = grow(nil, r), grow(nil, r), grow(nil, r)
		n.demand, n.runtime = grow(nil, r), grow(nil, r)
		for i := range n.max {
			n.max[i] = Unlimited
		}
		if n.spec != nil {
			e.fill(n.min, n.spec.Min, 0)
			e.fill(n.max, n.spec.Max, Unlimited)
		}
	}
	sort.Strings(names)
	return names
}

// declareParents resolves the parent each quota of names declares, refusing
// those it cannot have, and finds cycles on the declared parents. The
// first quota by name labelled the root of a quota tree, hanging from the
// root, is that tree's root (treeRoots).
func (e *Engine) declareParents(names []string) (declared map[string]string, treeRoots map[string]*node) {
	declared = map[string]string{}
	treeRoots = map[string]*node{}
	for _, name := range names {
		n := e.nodes[name]
		switch {
		case n == e.root:
		case n.spec == nil:
			n.err = fmt.Errorf("quota %q: %w", name, ErrUnknownQuota)
			if n.gone != nil {
				// Deleted, its units still running: counted under its
				// parent, if that is still there, else under its tree's
				// root (below), never in another tree.
				if _, ok := e.specs[n.gone.Parent]; ok {
					declared[name] = n.gone.Parent
				}
			}
		default:
			p := n.spec.Parent
			if p == "" {
				p = elasticquotav1alpha1.RootQuotaName
			}
			ps, ok := e.specs[p]
			tree := n.spec.TreeID
			switch {
			case p == elasticquotav1alpha1.RootQuotaName:
				declared[name] = p
				switch {
				case tree == "":
				case !n.spec.IsTreeRoot:
					n.err = fmt.Errorf("quota %q: tree-id %q: %w", name, tree, ErrNotTreeRoot)
				case treeRoots[tree] != nil:
					n.err = fmt.Errorf("quota %q: tree-id %q: %q is its root: %w", name, tree, treeRoots[tree].name, ErrDuplicateTreeRoot)
				default:
					treeRoots[tree] = n
					switch r, negative := firstNegative(n.spec.TreeTotal); {
					case n.spec.TreeTotal == nil:
						n.err = fmt.Errorf("quota %q: tree-id %q: %w", name, tree, ErrTreeCapacity)
					case negative:
						q := n.spec.TreeTotal[r]
						n.err = fmt.Errorf("quota %q: tree-id %q: %s %s %s is negative: %w", name, tree,
							elasticquotav1alpha1.AnnotationTotalResource, r, q.String(), ErrTreeCapacity)
					}
				}
			case !ok:
				n.err = fmt.Errorf("quota %q: parent %q: %w", name, p, ErrMissingParent)
			default:
				// A parent not marked as one, or of another tree, still
				// counts the child's usage (so it stays bounded), but only
				// the child is refused, as Koordinator's webhook refuses
				// the child.
				declared[name] = p
				switch {
				case !ps.IsParent:
					n.err = fmt.Errorf("quota %q: parent %q: %w", name, p, ErrParentNotMarked)
				case n.spec.IsTreeRoot && tree != "":
					n.err = fmt.Errorf("quota %q: tree-id %q, parent %q: %w", name, tree, p, ErrTreeRootParent)
				case ps.TreeID != tree:
					n.err = fmt.Errorf("quota %q: tree-id %q, its parent %q's %q: %w", name, tree, p, ps.TreeID, ErrTreeMismatch)
				}
			}
		}
	}
	for _, cycle := range findCycles(names, declared) {
		for _, name := range cycle {
			e.nodes[name].err = fmt.Errorf("quota %q: %s: %w", name, strings.Join(cycle, " -> "), ErrCycle)
			delete(declared, name)
		}
	}
	return declared, treeRoots
}

// link hangs each quota from its declared parent (the root when it has
// none it may have; its tree's root when it has a tree), and lists the
// roots: the classic root, then each tree's.
func (e *Engine) link(names []string, declared map[string]string, treeRoots map[string]*node) {
	e.roots = append(e.roots[:0], e.root)
	for _, name := range names {
		n := e.nodes[name]
		if n == e.root {
			continue
		}
		if n.spec != nil && n.spec.TreeID != "" && treeRoots[n.spec.TreeID] == n {
			e.roots = append(e.roots, n) // a root: counted in its tree only
			continue
		}
		if p, ok := declared[name]; ok {
			n.parent = e.nodes[p]
		} else {
			n.parent = e.root // detached: still counted against the cluster
		}
		if facts := cmp.Or(n.spec, n.gone); n.parent == e.root && facts != nil && treeRoots[facts.TreeID] != nil {
			// Hanging from the root with a tree id (refused above), or
			// detached: still counted against its tree.
			n.parent = treeRoots[facts.TreeID]
		}
		n.parent.kids = append(n.parent.kids, n)
	}
}

// checkQuotas refuses each quota whose own spec is invalid (the parent is
// resolved): its resource names, a min or max negative or min above max,
// a negative shared weight.
func (e *Engine) checkQuotas(names []string) {
	for _, name := range names {
		n := e.nodes[name]
		if n.spec == nil {
			continue
		}
		if n.err == nil {
			n.err = e.checkKeys(n)
		}
		for i := range n.min {
			if (n.min[i] < 0 || n.max[i] < 0) && n.err == nil {
				n.err = fmt.Errorf("quota %q: %s min %s, max %s: %w", name, e.names[i],
					format(e.names[i], n.min[i]), format(e.names[i], n.max[i]), ErrNegative)
			}
			if n.max[i] != Unlimited && n.min[i] > n.max[i] && n.err == nil {
				n.err = fmt.Errorf("quota %q: %s min %s, max %s: %w", name, e.names[i],
					format(e.names[i], n.min[i]), format(e.names[i], n.max[i]), ErrMinAboveMax)
			}
		}
		if r, negative := firstNegative(n.spec.SharedWeight); negative && n.err == nil {
			q := n.spec.SharedWeight[r]
			n.err = fmt.Errorf("quota %q: %s %s %s: %w", name, elasticquotav1alpha1.AnnotationSharedWeight, r, q.String(), ErrNegativeWeight)
		}
	}
}

// boundTrees bounds each quota tree's root by the tree's capacity, as the
// cluster's does the classic root (after the checks: min above it is no
// error of the quota's).
func (e *Engine) boundTrees(r int) {
	for _, t := range e.roots[1:] {
		if !validTotal(t.spec.TreeTotal) {
			continue // invalid (ErrTreeCapacity): admits nothing
		}
		t.total = grow(nil, r)
		e.fill(t.total, t.spec.TreeTotal, 0)
		for i := range t.max {
			t.max[i] = min(t.max[i], t.total[i])
		}
	}
}

// preorder lists the nodes parents before children, tree by tree, setting
// each one's depth and tree root (top).
func (e *Engine) preorder() []*node {
	pre := make([]*node, 0, len(e.nodes))
	var walk func(n, top *node, depth int)
	walk = func(n, top *node, depth int) {
		n.depth, n.top = depth, top
		pre = append(pre, n)
		for _, k := range n.kids {
			walk(k, top, depth+1)
		}
	}
	for _, root := range e.roots {
		walk(root, root, 0)
	}
	return pre
}

// inherit makes, parents before children (pre), a quota invalid under an
// invalid parent, and each quota's weight and floor.
func (e *Engine) inherit(pre []*node) {
	for _, n := range pre {
		if n.err == nil && n.parent != nil && n.parent.err != nil {
			n.err = fmt.Errorf("quota %q: ancestor %q is invalid (%v): %w", n.name, n.parent.name, n.parent.err, ErrInvalidAncestor)
		}
		n.outside = n.name == elasticquotav1alpha1.DefaultQuotaName || n.name == elasticquotav1alpha1.SystemQuotaName
		if n.spec != nil {
			// The weight is max where the shared weight does not name the
			// resource (Unlimited when max does not name it either), and
			// everywhere when the shared weight is all zero, as
			// koord-scheduler reads it (GetSharedWeight).
			for i := range n.weight {
				n.weight[i] = n.max[i]
			}
			if !allZero(n.spec.SharedWeight) {
				e.fill(n.weight, n.spec.SharedWeight, -1)
			}
			if n.spec.DisallowLending && n.parent != nil { // a root has no siblings
				copy(n.floor, n.min)
			}
		}
	}
}

// sumUp sums, children before parents (pre reversed, kept as e.order),
// what each subtree uses and takes effectively.
func (e *Engine) sumUp(pre []*node) {
	e.order = e.order[:0]
	for i := len(pre) - 1; i >= 0; i-- {
		n := pre[i]
		e.order = append(e.order, n)
		copy(n.used, n.direct)
		for _, k := range n.kids {
			addTo(n.used, k.used)
			addTo(n.kidsEff, k.eff)
		}
		for j := range n.eff {
			n.eff[j] = max(n.floor[j], n.direct[j]+n.kidsEff[j])
		}
	}
}

// shrank reports whether the rebuild shrank the room of some quota: one
// hangs elsewhere, became invalid, has a lower max (the root: a smaller
// cluster), or keeps more of its min from its siblings (a non-lending
// quota's min rose, or lending was turned off). Resources the engine learnt
// in this rebuild were asked by nobody before, so they are not compared.
func (e *Engine) shrank() bool {
	shrank := false
	for _, n := range e.nodes {
		was := n.was
		n.was = room{}
		switch {
		case shrank:
		case !was.built:
			shrank = !isZero(n.floor)
		case was.parent != n.parent, was.valid && n.err != nil:
			shrank = true
		default:
			for i := range was.max {
				if n.max[i] < was.max[i] || n.floor[i] > was.floor[i] {
					shrank = true
					break
				}
			}
		}
	}
	return shrank
}

// Shrinks counts the changes to the tree or the cluster's capacity that
// shrank the room in which some decision may have been made (see shrank).
// A caller holding decisions not yet carried out compares it with the count
// it saw when it decided them.
func (e *Engine) Shrinks() uint64 {
	e.settle()
	return e.shrinks
}

// setRootCapacity sets the classic root's capacity: its max if it has one,
// else the cluster's, less the capacity of every quota tree whose root is
// not labelled ignore-default-tree (as koord-scheduler takes it out of its
// default tree), never below zero.
func (e *Engine) setRootCapacity() {
	root := e.root
	switch {
	case root.spec != nil && len(root.spec.Max) > 0:
		// the root's max, already filled
	case e.capacitySet:
		for i := range root.max {
			root.max[i] = 0
		}
		e.fill(root.max, e.capacity, 0)
		for _, t := range e.roots[1:] {
			if t.spec.IgnoreDefaultTree || !validTotal(t.spec.TreeTotal) {
				continue // an invalid total is no capacity: nothing to take out
			}
			for name, q := range t.spec.TreeTotal {
				i := e.index[name]
				root.max[i] = max(0, root.max[i]-scaled(name, q))
			}
		}
	}
	for i := range root.min {
		root.min[i] = root.max[i]
	}
}

// validTotal reports whether a tree root's total-resource is a capacity:
// set, and nothing in it negative.
func validTotal(total corev1.ResourceList) bool {
	_, negative := firstNegative(total)
	return total != nil && !negative
}

// firstNegative names the first resource, by name, whose amount in list is
// below zero.
func firstNegative(list corev1.ResourceList) (corev1.ResourceName, bool) {
	for name, q := range list {
		if q.Sign() >= 0 {
			continue
		}
		for _, name := range sortedNames(list) { // the same one whatever the map's order
			if q := list[name]; q.Sign() < 0 {
				return name, true
			}
		}
		return name, true
	}
	return "", false
}

// allZero reports whether every amount in list is zero (so also when list
// is empty), as quotav1.IsZero does.
func allZero(list corev1.ResourceList) bool {
	for _, q := range list {
		if !q.IsZero() {
			return false
		}
	}
	return true
}

// fill writes list into v; keep is the value of resources list does not
// name, or -1 to leave v as it is.
func (e *Engine) fill(v Vector, list corev1.ResourceList, keep int64) {
	if keep >= 0 {
		for i := range v {
			v[i] = keep
		}
	}
	for name, q := range list {
		v[e.index[name]] = scaled(name, q)
	}
}

func newNode(name string) *node {
	return &node{name: name, charges: map[string]*Charge{}}
}

// findCycles returns each cycle of the parent relation, as names in parent
// order starting from the smallest, in a fixed order.
func findCycles(names []string, parent map[string]string) [][]string {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var cycles [][]string
	for _, start := range names {
		var path []string
		n := start
		closed := false
		for state[n] == unseen {
			state[n] = onPath
			path = append(path, n)
			p, ok := parent[n]
			if !ok {
				break
			}
			n = p
			closed = state[n] == onPath
		}
		if closed {
			for i, m := range path {
				if m == n {
					cycle := append([]string(nil), path[i:]...)
					cycles = append(cycles, rotateToSmallest(cycle))
					break
				}
			}
		}
		for _, m := range path {
			state[m] = done
		}
	}
	return cycles
}

func rotateToSmallest(c []string) []string {
	low := 0
	for i := range c {
		if c[i] < c[low] {
			low = i
		}
	}
	return append(append([]string{}, c[low:]...), c[:low]...)
}

func grow(v Vector, n int) Vector {
	if len(v) >= n {
		return v[:n]
	}
	return append(v, make(Vector, n-len(v))...)
}

func addTo(dst, v Vector) {
	for i, a := range v {
		dst[i] += a
	}
}

func isZero(v Vector) bool {
	for _, a := range v {
		if a != 0 {
			return false
		}
	}
	return true
}

// Pool is the node pool of the quota's tree: its root's Spec.Pool, else
// the tree's id; "" for the classic tree or a quota the engine does not
// know.
func (e *Engine) Pool(quota string) string {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok || n.top == nil || n.top == e.root || n.top.spec == nil {
		return ""
	}
	if n.top.spec.Pool != "" {
		return n.top.spec.Pool
	}
	return n.top.spec.TreeID
}
