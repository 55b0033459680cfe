// Package podledger keeps what the pods of a cluster hold, grouped by what
// they belong to: the QueueUnit the release named on their template, else
// their controller. What holds a node is a pod, so koord-queue's books
// follow the pods: a unit holds its quota until the last of its pods is
// gone, whatever its phase says, and the pods nothing queued are charged
// where koord-scheduler charges them.
//
// It is pure accounting, like pkg/quota: no client, no clock, no
// goroutine. koord-queue feeds it from a pod informer (Upsert, Delete) and
// reads, for each group that changed (Drain), what its pods hold (Tally),
// and on which nodes (HeldOnNodes). It keeps a few words per pod: the
// pod's name, its group, its pod set and node (shared strings), its
// request as a shape shared by every pod that asks the same (the pods of
// one job do), and, on a node, its place in its group's list of them.
package podledger

import (
	"iter"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Group is what a pod belongs to. A pod whose template the release
// annotated (schedulingv1alpha1.AnnotationRelatedQueueUnit) belongs to that
// unit; any other to its controller, and a pod without one to its
// namespace alone.
type Group struct {
	Namespace string
	// Unit is the QueueUnit, in Namespace, the release named on the pod.
	Unit string
	// OwnerKind ("Job.batch") and OwnerName are the pod's controller,
	// when Unit is empty.
	OwnerKind, OwnerName string
}

// Pod is what the ledger keeps of a pod (FromPod).
type Pod struct {
	Namespace, Name string
	Group           Group
	// Quota is the pod's quota label (the quota koord-scheduler charges it
	// to), "" if none.
	Quota string
	// PodSet is the pod set the release named on the pod, "" if none.
	PodSet string
	// Node is where the pod is bound, "" while it is not.
	Node string
	// Gated: the pod waits at a scheduling gate, so it holds nothing and
	// is not scheduled. Done: Succeeded or Failed, so it holds nothing.
	// A pod being deleted holds its node until it is gone.
	Gated, Done bool
	// Scheduled: the pod counts as running for its unit (Scheduled).
	Scheduled bool
	// Controller is the pod's controller (ControllerKey), "" if none.
	Controller string
	// Requests is what the pod asks for, as the scheduler counts it
	// (resources.PodRequests).
	Requests corev1.ResourceList
}

// Holds reports whether the pod holds, or will hold, room on a node: it is
// neither finished nor held at a scheduling gate.
func (p Pod) Holds() bool { return !p.Gated && !p.Done }

// Tally is what the pods of a group hold.
type Tally struct {
	// Quota is the quota label of the group's pod seen last.
	Quota string
	// Pods that hold room (Pod.Holds), and how many of them are bound.
	Pods, Bound int
	// Requests of the pods that hold room, and of those bound.
	Requests, BoundRequests corev1.ResourceList
	// PodSets tallies the pods that hold room by the pod set the release
	// named on them ("" for none).
	PodSets map[string]PodSetTally
}

// PodSetTally is what the pods of one pod set of a group hold.
type PodSetTally struct {
	Pods int32
	// Bound is how many of those pods are on a node.
	Bound int32
	// Largest is, per resource, the most one of its pods asks for.
	Largest corev1.ResourceList
}

// IsZero reports whether no pod of the group holds anything.
func (t Tally) IsZero() bool { return t.Pods == 0 }

// record is one pod as the ledger keeps it: 48 bytes and its name.
type record struct {
	group  *group
	podSet *string // interned
	node   *string // interned
	// controller is interned, kept only for a pod counted as scheduled.
	controller *string
	shape      *shape
	flags      uint8
	// at is its index in its group's onNodes, while it holds room on a
	// node.
	at int32
}

const (
	flagGated uint8 = 1 << iota
	flagDone
	flagScheduled
)

func (r *record) holds() bool { return r.flags&(flagGated|flagDone) == 0 }

// shape is a request shared by every pod that asks the same.
type shape struct {
	key  string
	refs int
	// amounts by the ledger's resource index (Ledger.names).
	amounts []int64
}

// group is a Group's running totals.
type group struct {
	key Group
	// members counts its pods, holding room or not; pods and bound those
	// that hold room (Pod.Holds), and of them those on a node.
	members, pods, bound int
	quota                *string
	requests, boundReqs  []int64
	podSets              map[*string]*podSetTotals
	// onNodes are its pods that hold room on a node (HeldOnNodes).
	onNodes []*record
	// scheduled counts, by pod set and controller, its pods that count as
	// running (Pod.Scheduled), finished ones included (ScheduledPods).
	scheduled []podSetCount
	changed   bool
}

type podSetCount struct {
	podSet, controller *string
	n                  int32
}

type podSetTotals struct {
	pods, bound int32
	// shapes of the set's pods that hold room, by how many use each, for
	// the largest.
	shapes map[*shape]int32
}

// Ledger is the pods' books. The zero value is not usable; call New.
type Ledger struct {
	pods    map[podKey]*record
	groups  map[Group]*group
	shapes  map[string]*shape
	strs    map[string]*string
	names   []corev1.ResourceName
	index   map[corev1.ResourceName]int
	changed []*group
	// nodes sums, per node (interned name), what the pods bound to it
	// that hold room ask for, by the ledger's resource index.
	nodes map[*string][]int64
	// nodeLog lists the nodes whose sums changed, in order, the first
	// being change number logBase (HeldChangedSince).
	nodeLog []*string
	logBase uint64
}

type podKey struct{ namespace, name string }

// New returns an empty Ledger.
func New() *Ledger {
	return &Ledger{pods: map[podKey]*record{}, groups: map[Group]*group{}, shapes: map[string]*shape{},
		strs: map[string]*string{}, index: map[corev1.ResourceName]int{}, nodes: map[*string][]int64{}}
}

// Len is the number of pods kept.
func (l *Ledger) Len() int { return len(l.pods) }

// Upsert records a pod as it is now.
func (l *Ledger) Upsert(p Pod) {
	key := podKey{p.Namespace, p.Name}
	if old, ok := l.pods[key]; ok {
		l.remove(old)
		l.release(old)
	} else {
		key.namespace, key.name = *l.intern(p.Namespace), strings.Clone(p.Name)
	}
	r := &record{group: l.group(p.Group), podSet: l.intern(p.PodSet), node: l.intern(p.Node), shape: l.shape(p.Requests)}
	r.group.quota = l.intern(p.Quota)
	if p.Gated {
		r.flags |= flagGated
	}
	if p.Done {
		r.flags |= flagDone
	}
	if p.Scheduled {
		r.flags |= flagScheduled
		r.controller = l.intern(p.Controller)
	}
	l.pods[key] = r
	l.add(r)
}

// Delete forgets a pod: it is gone from the API server.
func (l *Ledger) Delete(namespace, name string) {
	key := podKey{namespace, name}
	if r, ok := l.pods[key]; ok {
		l.remove(r)
		delete(l.pods, key)
		l.release(r)
	}
}

// Drain returns the groups whose tallies changed since the last call.
func (l *Ledger) Drain() []Group {
	out := make([]Group, 0, len(l.changed))
	for _, g := range l.changed {
		g.changed = false
		out = append(out, g.key)
		if g.members == 0 {
			delete(l.groups, g.key)
		}
	}
	l.changed = l.changed[:0]
	return out
}

// Tally is what the pods of g hold now; the zero Tally if none does.
func (l *Ledger) Tally(g Group) Tally {
	gr, ok := l.groups[g]
	if !ok || gr.pods == 0 {
		return Tally{}
	}
	t := Tally{Quota: *gr.quota, Pods: gr.pods, Bound: gr.bound, Requests: l.list(gr.requests), BoundRequests: l.list(gr.boundReqs),
		PodSets: make(map[string]PodSetTally, len(gr.podSets))}
	for name, ps := range gr.podSets {
		largest := make([]int64, len(l.names))
		for s := range ps.shapes {
			for i, v := range s.amounts {
				largest[i] = max(largest[i], v)
			}
		}
		t.PodSets[*name] = PodSetTally{Pods: ps.pods, Bound: ps.bound, Largest: l.list(largest)}
	}
	return t
}

// Groups calls fn with every group some pod holding room belongs to.
func (l *Ledger) Groups(fn func(Group)) {
	for key, g := range l.groups {
		if g.pods > 0 {
			fn(key)
		}
	}
}

func (l *Ledger) group(key Group) *group {
	key.Namespace = *l.intern(key.Namespace)
	key.Unit, key.OwnerKind, key.OwnerName = *l.intern(key.Unit), *l.intern(key.OwnerKind), *l.intern(key.OwnerName)
	g, ok := l.groups[key]
	if !ok {
		g = &group{key: key, podSets: map[*string]*podSetTotals{}}
		l.groups[key] = g
	}
	return g
}

// add counts r in its group.
func (l *Ledger) add(r *record) {
	g := r.group
	g.members++
	if r.flags&flagScheduled != 0 {
		g.countScheduled(r.podSet, r.controller, 1)
	}
	if !r.holds() {
		l.touch(g)
		return
	}
	g.pods++
	g.requests = addInto(g.requests, r.shape.amounts, 1)
	ps := g.podSets[r.podSet]
	if ps == nil {
		ps = &podSetTotals{shapes: map[*shape]int32{}}
		g.podSets[r.podSet] = ps
	}
	if *r.node != "" {
		g.bound++
		g.boundReqs = addInto(g.boundReqs, r.shape.amounts, 1)
		r.at = int32(len(g.onNodes))
		g.onNodes = append(g.onNodes, r)
		l.nodes[r.node] = addInto(l.nodes[r.node], r.shape.amounts, 1)
		l.logNode(r.node)
		ps.bound++
	}
	ps.pods++
	ps.shapes[r.shape]++
	l.touch(g)
}

// remove takes r out of its group's totals (release drops its shape).
func (l *Ledger) remove(r *record) {
	g := r.group
	g.members--
	if r.flags&flagScheduled != 0 {
		g.countScheduled(r.podSet, r.controller, -1)
	}
	if r.holds() {
		g.pods--
		g.requests = addInto(g.requests, r.shape.amounts, -1)
		bound := *r.node != ""
		if bound {
			g.bound--
			g.boundReqs = addInto(g.boundReqs, r.shape.amounts, -1)
			l.unbind(r)
		}
		if ps := g.podSets[r.podSet]; ps != nil {
			ps.pods--
			if bound {
				ps.bound--
			}
			if ps.shapes[r.shape]--; ps.shapes[r.shape] == 0 {
				delete(ps.shapes, r.shape)
			}
			if ps.pods == 0 {
				delete(g.podSets, r.podSet)
			}
		}
	}
	l.touch(g)
}

// countScheduled adds delta to the pods of podSet, controlled by
// controller, that count as running.
func (g *group) countScheduled(podSet, controller *string, delta int32) {
	for i := range g.scheduled {
		if c := &g.scheduled[i]; c.podSet == podSet && c.controller == controller {
			if c.n += delta; c.n == 0 {
				g.scheduled = slices.Delete(g.scheduled, i, i+1)
			}
			return
		}
	}
	g.scheduled = append(g.scheduled, podSetCount{podSet: podSet, controller: controller, n: delta})
}

// ScheduledPods is how many pods of g's pod set podSet ("" for pods the
// release named no pod set on) that controller controls (ControllerKey)
// count as running (Pod.Scheduled), those that succeeded included:
// admissions[].running as the extensions count it (only the job's own pods:
// a tenant's other pods naming the unit do not make it run), known here as
// soon as the pods change rather than once that count is written.
func (l *Ledger) ScheduledPods(g Group, podSet, controller string) int32 {
	gr, ok := l.groups[g]
	if !ok {
		return 0
	}
	for _, c := range gr.scheduled {
		if *c.podSet == podSet && *c.controller == controller {
			return c.n
		}
	}
	return 0
}

// unbind takes what r asks for off its node's sum, and r out of its
// group's pods on nodes; a node left with nothing is forgotten.
func (l *Ledger) unbind(r *record) {
	on := r.group.onNodes
	last := on[len(on)-1]
	on[r.at], last.at = last, r.at
	on[len(on)-1] = nil
	r.group.onNodes = on[:len(on)-1]
	l.logNode(r.node)
	sums := addInto(l.nodes[r.node], r.shape.amounts, -1)
	for _, v := range sums {
		if v != 0 {
			l.nodes[r.node] = sums
			return
		}
	}
	delete(l.nodes, r.node)
}

// HeldAmountsByNode is, per node name, what the pods bound to it that hold
// room (Pod.Holds) ask for, as the kube-scheduler counts it on the node:
// amounts of resources, milli-cores for cpu and whole units for the rest,
// as the ledger sums them, so that a reader of every node makes no list
// per node. The amounts are the
// ledger's own: read them, and the sequence, before the ledger changes.
func (l *Ledger) HeldAmountsByNode() (resources []corev1.ResourceName, byNode iter.Seq2[string, []int64]) {
	return l.names, func(yield func(string, []int64) bool) {
		for node, sums := range l.nodes {
			if !yield(*node, sums) {
				return
			}
		}
	}
}

// HeldMark is the ledger's place in its log of the nodes whose sums
// (HeldAmountsByNode) changed, for HeldChangedSince.
func (l *Ledger) HeldMark() uint64 { return l.logBase + uint64(len(l.nodeLog)) }

// HeldChangedSince is the nodes whose sums (HeldAmountsByNode) changed
// since mark (HeldMark), some of them more than once, so that a reader
// that keeps every node's sum reads again only theirs (HeldAmountsOn).
// It reports false, and no nodes, once the log no longer reaches back to
// mark: read every node again.
func (l *Ledger) HeldChangedSince(mark uint64) (iter.Seq[string], bool) {
	if mark < l.logBase || mark > l.HeldMark() {
		return nil, false
	}
	changed := l.nodeLog[mark-l.logBase:]
	return func(yield func(string) bool) {
		for _, n := range changed {
			if !yield(*n) {
				return
			}
		}
	}, true
}

// HeldAmountsOn is node's sum, as HeldAmountsByNode says it; nil when no
// pod that holds room is bound to it. It is the ledger's own: read it
// before the ledger changes.
func (l *Ledger) HeldAmountsOn(node string) []int64 {
	n, ok := l.strs[node]
	if !ok {
		return nil
	}
	return l.nodes[n]
}

// logNode notes that n's sum changed. The log is cut once it is twice as
// long as there are nodes: a reader behind it reads every node again,
// which costs no more than reading the log.
func (l *Ledger) logNode(n *string) {
	if len(l.nodeLog) >= max(2*len(l.nodes), 64) {
		l.logBase += uint64(len(l.nodeLog))
		l.nodeLog = l.nodeLog[:0]
	}
	l.nodeLog = append(l.nodeLog, n)
}

// HeldOnNodes adds into, per node name, what the pods of g bound to it
// that hold room ask for, as HeldAmountsByNode counts them: what g's leaving
// would free on each node. O(its pods on nodes).
func (l *Ledger) HeldOnNodes(g Group, into map[string]corev1.ResourceList) {
	gr, ok := l.groups[g]
	if !ok || len(gr.onNodes) == 0 {
		return
	}
	sums := map[*string][]int64{}
	for _, r := range gr.onNodes {
		sums[r.node] = addInto(sums[r.node], r.shape.amounts, 1)
	}
	for node, amounts := range sums {
		held := l.list(amounts)
		if have, ok := into[*node]; ok {
			held = sum(have, held)
		}
		into[*node] = held
	}
}

// OnNodes is what the pods bound to nodes that hold room (Pod.Holds) ask
// for, by group and node: HeldAmountsByNode, by group (Ledger.EveryHeldOnNodes).
type OnNodes struct {
	// Names are the resources of every Amounts, by index.
	Names []corev1.ResourceName
	Sums  []GroupOnNode
}

// GroupOnNode is what the pods of one group ask for on one node, by
// OnNodes.Names, as the kube-scheduler counts it (milli-cores for cpu,
// whole units for the rest).
type GroupOnNode struct {
	Group   Group
	Node    string
	Amounts []int64
}

// EveryHeldOnNodes is HeldOnNodes for every group at once: what each
// group's pods that hold room ask for on each node. It walks the groups'
// pods on nodes and allocates a handful of slices, not a list per sum: it
// is for a caller that needs it seldom and holds a lock meanwhile, the
// forecast, when some waiting unit asks for a topology level
// (BenchmarkEveryHeldOnNodes).
func (l *Ledger) EveryHeldOnNodes() OnNodes {
	width := len(l.names)
	var sums []GroupOnNode
	var flat []int64
	index := map[*string]int{}
	for _, g := range l.groups {
		if len(g.onNodes) == 0 {
			continue
		}
		clear(index)
		for _, r := range g.onNodes {
			i, ok := index[r.node]
			if !ok {
				i = len(sums)
				index[r.node] = i
				sums = append(sums, GroupOnNode{Group: g.key, Node: *r.node})
				flat = append(flat, make([]int64, width)...)
			}
			sum := flat[i*width:]
			for j, v := range r.shape.amounts {
				sum[j] += v
			}
		}
	}
	for i := range sums {
		sums[i].Amounts = flat[i*width : (i+1)*width : (i+1)*width]
	}
	return OnNodes{Names: slices.Clone(l.names), Sums: sums}
}

func (l *Ledger) touch(g *group) {
	if !g.changed {
		g.changed = true
		l.changed = append(l.changed, g)
	}
}

// release drops r's reference to its shape.
func (l *Ledger) release(r *record) {
	if r.shape == nil {
		return
	}
	if r.shape.refs--; r.shape.refs == 0 {
		delete(l.shapes, r.shape.key)
	}
}

// shape interns a request.
func (l *Ledger) shape(req corev1.ResourceList) *shape {
	names := make([]corev1.ResourceName, 0, len(req))
	for name := range req {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		q := req[name]
		b.WriteString(string(name))
		b.WriteByte('=')
		b.WriteString(q.String())
		b.WriteByte(',')
	}
	key := b.String()
	if s, ok := l.shapes[key]; ok {
		s.refs++
		return s
	}
	s := &shape{key: key, refs: 1}
	for _, name := range names {
		i, ok := l.index[name]
		if !ok {
			i = len(l.names)
			l.names = append(l.names, name)
			l.index[name] = i
		}
		if len(s.amounts) <= i {
			s.amounts = append(s.amounts, make([]int64, i+1-len(s.amounts))...)
		}
		q := req[name]
		s.amounts[i] = scaled(name, q)
	}
	l.shapes[key] = s
	return s
}

// intern shares one copy of each string the ledger keeps many times.
func (l *Ledger) intern(s string) *string {
	if p, ok := l.strs[s]; ok {
		return p
	}
	c := strings.Clone(s)
	l.strs[c] = &c
	return &c
}

// list is amounts as a ResourceList, zero amounts left out.
func (l *Ledger) list(amounts []int64) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, v := range amounts {
		if v == 0 {
			continue
		}
		name := l.names[i]
		if name == corev1.ResourceCPU {
			out[name] = *resource.NewMilliQuantity(v, resource.DecimalSI)
		} else {
			out[name] = *resource.NewQuantity(v, resource.BinarySI)
		}
	}
	return out
}

// scaled is q in the ledger's unit: milli-cores for cpu, whole units (bytes)
// for everything else, as the kube-scheduler counts them.
func scaled(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// addInto adds sign × v to sums, growing sums as needed.
func addInto(sums, v []int64, sign int64) []int64 {
	if len(sums) < len(v) {
		sums = append(sums, make([]int64, len(v)-len(sums))...)
	}
	for i, x := range v {
		sums[i] += sign * x
	}
	return sums
}

// Plus is what the pods of t and u hold together.
func (t Tally) Plus(u Tally) Tally {
	switch {
	case u.IsZero():
		return t
	case t.IsZero():
		return u
	}
	out := Tally{Quota: t.Quota, Pods: t.Pods + u.Pods, Bound: t.Bound + u.Bound,
		Requests: sum(t.Requests, u.Requests), BoundRequests: sum(t.BoundRequests, u.BoundRequests),
		PodSets: make(map[string]PodSetTally, len(t.PodSets)+len(u.PodSets))}
	for _, sets := range []map[string]PodSetTally{t.PodSets, u.PodSets} {
		for name, ps := range sets {
			have := out.PodSets[name]
			largest := have.Largest
			if largest == nil {
				largest = corev1.ResourceList{}
			}
			for r, q := range ps.Largest {
				if cur, ok := largest[r]; !ok || q.Cmp(cur) > 0 {
					largest[r] = q
				}
			}
			out.PodSets[name] = PodSetTally{Pods: have.Pods + ps.Pods, Bound: have.Bound + ps.Bound, Largest: largest}
		}
	}
	return out
}

func sum(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range b {
		s := out[name]
		s.Add(q)
		out[name] = s
	}
	return out
}

// Replace makes the ledger hold pods and no other: a relist.
func (l *Ledger) Replace(pods []Pod) {
	listed := make(map[podKey]struct{}, len(pods))
	for _, p := range pods {
		listed[podKey{p.Namespace, p.Name}] = struct{}{}
	}
	for key, r := range l.pods {
		if _, ok := listed[key]; !ok {
			l.remove(r)
			delete(l.pods, key)
			l.release(r)
		}
	}
	for _, p := range pods {
		l.Upsert(p)
	}
}
