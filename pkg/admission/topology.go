package admission

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/pool"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	"github.com/koord-queue/koord-queue/pkg/topology"
)

// A unit whose pod sets ask for a topology level (pkg/topology's
// annotations on their templates) is admitted only when the nodes have
// room for it as asked, besides its quota: the core asks the Cache, its
// Placer, before it admits such a unit. The Topology in force is the one
// the unit's quota names (schedulingv1alpha1.AnnotationTopology), or its
// nearest ancestor's, or else the ElasticQuotaProfile of its quota tree's
// root. A pod set's pods can use the nodes its template selects and
// tolerates and, of those, the ones koord-queue-controllers will let them
// onto at release: its tree's node pool, or, in the classic tree, nodes
// outside the pools (pool.PlacementOf). What each node has free is its allocatable less what
// the pod ledger says its pods hold, less the pods admitted to a domain
// (status.topologyAssignments, or a decision not yet written) that are not
// on a node yet. The snapshot of each Topology is built once per cycle, at
// its first use, and dropped at the cycle's end, from the Topology's domain
// tree, which is kept until the Topology changes and changed as the nodes
// do (topology.Tree.Changed); a restarted
// koord-queue rebuilds both from the same facts: the nodes, the pods and
// the units' status.

// unitAsk is what a unit's pod sets ask of a topology.
type unitAsk struct {
	// topology is the Topology in force ("" when none is named).
	topology string
	// podSets are the unit's pod sets as a snapshot places them, all
	// their pods: read once as the unit changes, not at each placement.
	podSets []topology.PodSet
	// pooled are podSets on the nodes of the unit's node pool
	// (pooledPodSets), as the pools were when poolsRead was
	// topologies.poolsRead.
	pooled    []topology.PodSet
	poolsRead uint64
}

// topologies is the Cache's part that places units on the nodes.
type topologies struct {
	mu    *sync.Mutex            // the Cache's
	units map[string]*unitRecord // the Cache's records
	core  *scheduler.Scheduler
	// quotaObjects are the Cache's quotas in use, whose annotations name
	// the Topology in force.
	quotaObjects map[string]*elasticquotav1alpha1.ElasticQuota
	// profiles are the ElasticQuotaProfiles by namespace/name (the
	// treeCapacities' map): the node pools, and the Topology a tree's
	// root's profile names.
	profiles map[string]*quotav1alpha1.ElasticQuotaProfile
	// poolNodes are, by quota name, where its units' pods must run for
	// their node pool (poolPlacementOf), kept until a quota or a profile
	// changes.
	poolNodes map[string]poolPlacement
	// poolsRead counts the times the pools may have changed.
	poolsRead uint64
	// pods say what the nodes' pods hold, and each unit's.
	pods *podCharges
	wake wakeup // the Cache's
	// placer places an asker again once the Topology in force for it may
	// have changed: the Cache.
	placer askerPlacer
	// byName are the Topologies.
	byName map[string]*schedulingv1alpha1.Topology
	// nodeFacts are what a snapshot reads of every node, by name.
	nodeFacts map[string]topology.Node
	// trees are the domain trees of the Topologies in use, by name, built
	// at their first use after a Topology changed and changed since as
	// nodes did.
	trees map[string]keptTree
	// nodeLog names the nodes changed, in order, since the trees last saw
	// every change.
	nodeLog []string
	// occupancies are what the nodes' pods hold, by Topology name, kept
	// for its snapshots while its tree is.
	occupancies map[string]occupancy
	// askers are the units some pod set of which asks for a level (what
	// they ask is unitRecord.ask).
	askers map[*unitRecord]struct{}
	// placedAskers holds every asker that may have pods admitted to
	// domains and not on nodes yet (assumedOf), and some that no longer
	// have: a snapshot reads these, not the thousands that wait, and
	// drops those it finds with none (markPlaced adds them back).
	placedAskers map[*unitRecord]struct{}

	// During a cycle: the snapshots built, by Topology name; the
	// placements decided, by unit key.
	snaps   map[string]*topology.Snapshot
	decided map[string][]schedulingv1alpha1.PodSetTopologyAssignment
}

var _ scheduler.Placer = (*topologies)(nil)

// UpsertTopology records a Topology and decides again the units that ask
// for levels.
func (c *topologies) UpsertTopology(t *schedulingv1alpha1.Topology) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byName[t.Name]; ok && equality.Semantic.DeepEqual(old.Spec, t.Spec) {
		c.byName[t.Name] = t
		return
	}
	c.byName[t.Name] = t
	c.topologiesChanged()
}

// DeleteTopology forgets a Topology.
func (c *topologies) DeleteTopology(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byName, name)
	c.topologiesChanged()
}

// topologiesChanged places again every unit that asks for a level, with
// c.mu held: the Topology in force, or its levels, may have changed.
func (c *topologies) topologiesChanged() {
	clear(c.trees)
	c.nodeLog = c.nodeLog[:0]
	clear(c.occupancies)
	for r := range c.askers {
		c.placer.placeAsker(r)
	}
	c.core.WakeUnplaced()
	c.wake.notify()
}

// namingChanged places again, with c.mu held, the units asking for a
// level for which another Topology is now in force: a quota's naming of
// one, or its parent, changed. Only those are, so that a start feeding
// thousands of quotas that name a Topology, one at a time, does not place
// every unit again for each.
func (c *topologies) namingChanged() {
	moved := false
	named := map[string]string{} // by quota: its askers share it
	for r := range c.askers {
		name, ok := named[r.queue]
		if !ok {
			name, _ = c.topologyOf(r.queue)
			named[r.queue] = name
		}
		if name != r.ask.topology {
			c.placer.placeAsker(r)
			moved = true
		}
	}
	if moved {
		c.core.WakeUnplaced()
		c.wake.notify()
	}
}

// profileChanged notes a profile's change from old to p (nil: none), with
// c.mu held: the pools, and the Topology a tree's root's profile names,
// may have changed, so units that ask for levels are placed again. A
// change of neither its spec nor its Topology annotation (its status,
// say) changes nothing.
func (c *topologies) profileChanged(old, p *quotav1alpha1.ElasticQuotaProfile) {
	if old != nil && p != nil && equality.Semantic.DeepEqual(old.Spec, p.Spec) &&
		old.Annotations[schedulingv1alpha1.AnnotationTopology] == p.Annotations[schedulingv1alpha1.AnnotationTopology] {
		return
	}
	c.poolsChanged()
	c.topologiesChanged()
}

// quotasChanged forgets the pools' node selectors of quotas, with c.mu
// held: a quota's tree, its root's labels or the quota in use of a name
// may have changed. The core wakes its queues for a quota's change.
func (c *topologies) quotasChanged() { c.poolsChanged() }

// poolsChanged forgets the pools' node selectors, and so the askers' pod
// sets narrowed to them (pooledPodSets), with c.mu held.
func (c *topologies) poolsChanged() {
	clear(c.poolNodes)
	c.poolsRead++
}

// pooledPodSets are r's pod sets as a snapshot places them (ask's, all
// their pods) on the nodes of its node pool: narrowed again only once the
// pools may have changed since they last were, with c.mu held.
func (c *topologies) pooledPodSets(r *unitRecord) []topology.PodSet {
	ask := r.ask
	if ask.poolsRead == c.poolsRead && ask.pooled != nil {
		return ask.pooled
	}
	p := c.poolPlacementOf(r.queue)
	ask.pooled = ask.podSets
	if len(p.selectors) > 0 {
		ask.pooled = slices.Clone(ask.podSets)
		for i := range ask.pooled {
			ps := &ask.pooled[i]
			ps.Nodes = ps.Nodes.Within(p.selectors)
			if len(p.placement.Avoid) > 0 && i < len(r.unit.Spec.PodSets) {
				// Each term is split to keep off the pools (a pool's own
				// requirements split none). pooled[i] is the unit's pod
				// set i (podSetsOf).
				ps.MaxDomains = p.placement.MaxDomains(requiredTerms(&r.unit.Spec.PodSets[i].Template.Spec))
			}
		}
	}
	ask.poolsRead = c.poolsRead
	return ask.pooled
}

// poolPlacementOf is where the pods of a unit of quota must run for its
// node pool, and the node selectors they must meet each of
// (pool.Placement.NodeSelectors), the way koord-queue-controllers will
// place them at release: of the quotas in use and the profiles
// koord-queue knows, the same choice by the same function. None without
// profiles (no ElasticQuotaProfile CRD). With c.mu held.
func (c *topologies) poolPlacementOf(quota string) poolPlacement {
	if len(c.profiles) == 0 {
		return poolPlacement{}
	}
	if p, ok := c.poolNodes[quota]; ok {
		return p
	}
	p, _ := pool.PlacementOf(quota, c.quotaInUse, c.profileList()) // a map's lookup fails never
	out := poolPlacement{placement: p, selectors: p.NodeSelectors()}
	if c.poolNodes == nil {
		c.poolNodes = map[string]poolPlacement{}
	}
	c.poolNodes[quota] = out
	return out
}

// poolPlacement is a quota's pool.Placement (nil: none) and its node
// selectors.
type poolPlacement struct {
	placement *pool.Placement
	selectors []*corev1.NodeSelector
}

// requiredTerms is how many required node affinity terms a pod
// template's spec has.
func requiredTerms(spec *corev1.PodSpec) int {
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		return len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
	}
	return 0
}

// quotaInUse is the quota in use called name (pool.QuotaLookup).
func (c *topologies) quotaInUse(name string) (*elasticquotav1alpha1.ElasticQuota, error) {
	return c.quotaObjects[name], nil
}

// profileList is every profile (pool.ProfileOf orders those it chooses
// among, so the map's order does not matter).
func (c *topologies) profileList() []*quotav1alpha1.ElasticQuotaProfile {
	return slices.Collect(maps.Values(c.profiles))
}

// upsertTopologyNode records what a snapshot reads of n, with c.mu held,
// and reports whether it changed.
func (c *topologies) upsertTopologyNode(n *corev1.Node) bool {
	slim := topology.FromNode(n)
	if old, ok := c.nodeFacts[n.Name]; ok && old.Schedulable == slim.Schedulable &&
		equality.Semantic.DeepEqual(old.Labels, slim.Labels) && equality.Semantic.DeepEqual(old.Allocatable, slim.Allocatable) &&
		equality.Semantic.DeepEqual(old.Taints, slim.Taints) {
		return false
	}
	c.nodeFacts[n.Name] = slim
	c.nodeChanged(n.Name)
	c.core.WakeUnplaced()
	return true
}

// deleteTopologyNode forgets a node, with c.mu held.
func (c *topologies) deleteTopologyNode(name string) {
	delete(c.nodeFacts, name)
	c.nodeChanged(name)
	c.core.WakeUnplaced()
}

// nodeChanged logs, with c.mu held, that what a snapshot reads of the node
// name changed, for the trees to change as it did at their next use. A
// log grown past a quarter of the nodes is dropped with the trees: built
// afresh costs less than so many changes.
func (c *topologies) nodeChanged(name string) {
	if len(c.trees) == 0 {
		return
	}
	if len(c.nodeLog) >= max(64, len(c.nodeFacts)/4) {
		clear(c.trees)
		c.nodeLog = c.nodeLog[:0]
		return
	}
	c.nodeLog = append(c.nodeLog, name)
}

// keptTree is a Topology's domain tree and how much of the node log it
// has seen.
type keptTree struct {
	tree *topology.Tree
	seen int
}

// tree is the domain tree of the Topology t, with c.mu held: the one kept,
// changed as the nodes did since, or one built afresh.
func (c *topologies) tree(t *schedulingv1alpha1.Topology) *topology.Tree {
	kept, ok := c.trees[t.Name]
	if ok && kept.seen < len(c.nodeLog) {
		names := slices.Compact(slices.Sorted(slices.Values(c.nodeLog[kept.seen:])))
		changed := kept.tree.Changed(names, func(name string) (topology.Node, bool) {
			n, ok := c.nodeFacts[name]
			return n, ok && n.Schedulable
		})
		if changed != nil {
			c.occupancyChanged(t.Name, kept.tree, changed, names)
		}
		kept, ok = keptTree{tree: changed, seen: len(c.nodeLog)}, changed != nil
	}
	if !ok {
		nodes := make([]topology.Node, 0, len(c.nodeFacts))
		for _, n := range c.nodeFacts {
			nodes = append(nodes, n)
		}
		kept = keptTree{tree: topology.NewTree(topology.LevelsOf(t), nodes), seen: len(c.nodeLog)}
	}
	if c.trees == nil {
		c.trees = map[string]keptTree{}
	}
	c.trees[t.Name] = kept
	// Once every tree has seen the whole log, it is not needed.
	for _, k := range c.trees {
		if k.seen < len(c.nodeLog) {
			return kept.tree
		}
	}
	c.nodeLog = c.nodeLog[:0]
	for name, k := range c.trees {
		k.seen = 0
		c.trees[name] = k
	}
	return kept.tree
}

// checkTopology reads what r's pod sets ask of a topology, with c.mu held
// and r.queue resolved, and keeps r among the askers if any does. An error
// is an ask no change of the cluster's nodes mends (a malformed
// annotation, a level the Topology in force lacks, no Topology named):
// the unit cannot be queued until it or its quota is fixed.
func (c *topologies) checkTopology(r *unitRecord) (asks bool, err error) {
	u := r.unit
	if queueunit.Finished(u.EffectivePhase()) {
		c.forgetAsker(r) // holds nothing, asks nothing
		return false, nil
	}
	for i := range u.Spec.PodSets {
		ps := &u.Spec.PodSets[i]
		ask, perr := topology.ParseAsk(ps.Template.Annotations)
		if perr != nil {
			err = fmt.Errorf("pod set %s: %w", ps.Name, perr)
			asks = true
			break
		}
		if ask.IsZero() {
			continue
		}
		asks = true
		if err == nil {
			err = c.resolveAsk(r, ps.Name, ask)
		}
		if serr := topology.CheckSelection(&ps.Template.Spec); err == nil && serr != nil {
			err = fmt.Errorf("pod set %s: %w", ps.Name, serr)
		}
	}
	if !asks {
		delete(c.askers, r)
		r.ask = nil
		return false, nil
	}
	name, _ := c.topologyOf(r.queue)
	r.ask = &unitAsk{topology: name, podSets: podSetsOf(u)}
	c.askers[r] = struct{}{}
	if len(u.Status.TopologyAssignments) > 0 {
		c.markPlaced(r)
	}
	return true, err
}

// markPlaced notes, with c.mu held, that asker r may have pods admitted
// to domains: its admission or its status names some.
func (c *topologies) markPlaced(r *unitRecord) {
	if c.placedAskers == nil {
		c.placedAskers = map[*unitRecord]struct{}{}
	}
	c.placedAskers[r] = struct{}{}
}

// admittedTo is what r's pods are admitted to: its admission's domains, or
// while it holds quota those its status names.
func admittedTo(r *unitRecord) []schedulingv1alpha1.PodSetTopologyAssignment {
	switch {
	case r.admission != nil:
		return r.admission.topology
	case len(r.unit.Status.TopologyAssignments) > 0 && queueunit.HoldsQuota(r.unit):
		return r.unit.Status.TopologyAssignments
	}
	return nil
}

// resolveAsk checks that the Topology in force for r has the level ask
// names.
func (c *topologies) resolveAsk(r *unitRecord, podSet string, ask topology.Ask) error {
	name, by := c.topologyOf(r.queue)
	if name == "" {
		where := "it, or an ancestor,"
		if p := c.profileOfTree(r.queue); p != nil {
			where = fmt.Sprintf("it, an ancestor, or its tree's ElasticQuotaProfile %s/%s,", p.Namespace, p.Name)
		}
		return fmt.Errorf("pod set %s asks for topology level %s, and quota %s names no Topology: annotate %s %s=<topology>",
			podSet, ask.Level, r.queue, where, schedulingv1alpha1.AnnotationTopology)
	}
	t, ok := c.byName[name]
	if !ok {
		return fmt.Errorf("pod set %s asks for topology level %s, and Topology %q, which %s names, does not exist",
			podSet, ask.Level, name, by)
	}
	if _, err := topology.LevelsOf(t).Resolve(ask); err != nil {
		return fmt.Errorf("pod set %s: %w", podSet, err)
	}
	return nil
}

// maxQuotaDepth bounds the walk up a quota's ancestors for its Topology.
const maxQuotaDepth = 64

// topologyOf is the Topology the quota, or its nearest ancestor, names,
// else the one the ElasticQuotaProfile of its quota tree's root names
// (pool.TreeRootOf, pool.ProfileOfRoot: the profile whose pool the tree's
// pods go to); "" if none does. by says who named it, for messages:
// "quota team", "ElasticQuotaProfile kube-system/a100".
func (c *topologies) topologyOf(quotaName string) (name, by string) {
	e := c.core.Quotas()
	for q, depth := quotaName, 0; q != "" && depth < maxQuotaDepth; q, depth = e.Parent(q), depth+1 {
		if eq := c.quotaObjects[q]; eq != nil {
			if name := eq.Annotations[schedulingv1alpha1.AnnotationTopology]; name != "" {
				return name, "quota " + quotaName
			}
		}
	}
	if p := c.profileOfTree(quotaName); p != nil {
		if name := p.Annotations[schedulingv1alpha1.AnnotationTopology]; name != "" {
			return name, "ElasticQuotaProfile " + p.Namespace + "/" + p.Name
		}
	}
	return "", ""
}

// profileOfTree is the ElasticQuotaProfile of the root of quotaName's
// tree, nil for none (the classic tree, or no profiles), with c.mu held.
func (c *topologies) profileOfTree(quotaName string) *quotav1alpha1.ElasticQuotaProfile {
	if len(c.profiles) == 0 {
		return nil
	}
	root, _ := pool.TreeRootOf(quotaName, c.quotaInUse)
	if root == nil {
		return nil
	}
	return pool.ProfileOfRoot(root, c.profileList())
}

// topologyNamingChanged reports whether a quota's change from old to eq
// (nil: none) may change the Topology in force for units: its annotation
// naming one, the parent it inherits one from, or, for a quota tree's
// root, whose ElasticQuotaProfile may name one, its coming or going or
// the labels that make it a root or choose its profile. A new quota
// naming none and not a tree's root changes nothing, so that a start's
// thousands of quotas do not place every unit again for each.
func topologyNamingChanged(old, eq *elasticquotav1alpha1.ElasticQuota) bool {
	named := func(q *elasticquotav1alpha1.ElasticQuota) string {
		if q == nil {
			return ""
		}
		return q.Annotations[schedulingv1alpha1.AnnotationTopology]
	}
	if named(old) != named(eq) {
		return true
	}
	if old == nil || eq == nil {
		q := old
		if q == nil {
			q = eq
		}
		return q != nil && pool.IsTreeRoot(q)
	}
	for _, label := range []string{elasticquotav1alpha1.LabelQuotaParent, elasticquotav1alpha1.LabelQuotaTreeID,
		elasticquotav1alpha1.LabelQuotaIsRoot, elasticquotav1alpha1.LabelQuotaProfile} {
		if old.Labels[label] != eq.Labels[label] {
			return true
		}
	}
	return false
}

// forgetAsker drops r from the askers, with c.mu held.
func (c *topologies) forgetAsker(r *unitRecord) {
	delete(c.askers, r)
	r.ask = nil
	delete(c.placedAskers, r)
}

// beginPlacement readies the Placer for a cycle, with c.mu held.
func (c *topologies) beginPlacement() {
	c.snaps, c.decided = nil, nil
}

// endPlacement records, on each admission the cycle decided, where its
// pod sets go, and drops the cycle's snapshots, with c.mu held. The core
// asks the Placer before every admission; a unit admitted without a
// decision of it (none is known) is placed now if it fits, otherwise
// admitted with no domain.
func (c *topologies) endPlacement(admissions []scheduler.Admission) {
	for _, a := range admissions {
		r := c.units[a.Unit]
		if r == nil || r.admission == nil {
			continue
		}
		if r.ask == nil {
			continue
		}
		placed, ok := c.decided[a.Unit]
		if !ok {
			if _, fits := c.Place(a.Unit, a.Partial); fits {
				placed = c.decided[a.Unit]
			}
		}
		r.admission.topology = placed
		if len(placed) > 0 {
			c.markPlaced(r)
		}
	}
	c.snaps, c.decided = nil, nil
}

// Place is the core's Placer: it finds where the unit key's pod sets go,
// with the pods partial says, in the snapshot of its Topology, and takes
// their room. It is called by the core in a cycle, with c.mu held.
func (c *topologies) Place(key string, partial map[string]int32) (string, bool) {
	r, snap, err := c.askerSnapshot(key)
	if err != nil {
		return err.Error(), false
	}
	if snap == nil {
		return "", true
	}
	sets := topology.WithCounts(c.pooledPodSets(r), partial)
	res, err := snap.PlaceFor(key, sets)
	if err != nil {
		return err.Error(), false
	}
	if !res.Fits() {
		return res.Reason(), false
	}
	if why := res.Unrecordable(snap.Levels(), sets); why != "" {
		return why, false
	}
	placed := assignmentsOf(snap.Levels(), res)
	if c.decided == nil {
		c.decided = map[string][]schedulingv1alpha1.PodSetTopologyAssignment{}
	}
	c.decided[key] = placed
	return "", true
}

// PlaceWithout is the core's Placer's other question: would the unit
// key's pod sets, all their pods, fit in the snapshot of its Topology
// were the units victims gone? Their room is given back as the pod ledger
// says their pods hold it on each node, and as the snapshot assumed or
// placed it for them (admitted, not on a node yet). It takes nothing. A
// unit that asks for no level fits at once, with no snapshot built.
func (c *topologies) PlaceWithout(key string, victims []string) (string, bool) {
	r, snap, err := c.askerSnapshot(key)
	if err != nil {
		return "nothing it can use: " + err.Error(), false
	}
	if snap == nil {
		return "", true
	}
	held := map[string]corev1.ResourceList{}
	owners := make([]string, 0, len(victims))
	for _, v := range victims {
		if vr := c.units[v]; vr != nil {
			owners = append(owners, vr.key)
			c.pods.heldOnNodes(vr, held)
		}
	}
	res, err := snap.PlaceWithout(c.pooledPodSets(r), owners, held)
	if err != nil {
		return "nothing it can use: " + err.Error(), false
	}
	if !res.Fits() {
		return res.Shortfall.Unfreed(), false
	}
	return "", true
}

// askerSnapshot is the unit key's record and the cycle's snapshot of the
// Topology in force for it; no snapshot when it asks for no level (or is
// not known).
func (c *topologies) askerSnapshot(key string) (*unitRecord, *topology.Snapshot, error) {
	r := c.units[key]
	if r == nil || r.ask == nil {
		return r, nil, nil
	}
	snap, err := c.snapshot(r.ask.topology)
	return r, snap, err
}

// snapshot is the cycle's snapshot of the Topology name, built at its
// first use: the nodes, less what their pods hold, less the pods admitted
// to its domains that are not on a node yet.
func (c *topologies) snapshot(name string) (*topology.Snapshot, error) {
	if s, ok := c.snaps[name]; ok {
		return s, nil
	}
	in, err := c.snapshotInputs(name)
	if err != nil {
		return nil, err
	}
	s := in.build()
	if c.snaps == nil {
		c.snaps = map[string]*topology.Snapshot{}
	}
	c.snaps[name] = s
	return s, nil
}

// snapshotInputs are what a snapshot of a Topology is built from, apart
// from the Cache: the snapshot of what the nodes' pods hold, and the pods
// admitted to its domains that are not on a node yet.
type snapshotInputs struct {
	// base is the Topology's domain tree with what its nodes' pods hold:
	// the caller's own.
	base    *topology.Snapshot
	assumed []assumption
}

// assumption is pods of a pod set of the unit owner admitted to domains
// and not on a node yet.
type assumption struct {
	owner string
	topology.Assumed
}

// build is the snapshot of in. It reads nothing of the Cache.
func (in snapshotInputs) build() *topology.Snapshot {
	for _, a := range in.assumed {
		in.base.Assume(a.owner, a.PodSet, a.Domains)
	}
	return in.base
}

// occupancy is what the pods on the nodes of tree hold, for the Topology
// name, with c.mu held: kept from the last snapshot of the same tree and
// updated on the nodes whose pods changed since, or read afresh.
func (c *topologies) occupancy(name string, tree *topology.Tree) *topology.Occupancy {
	ledger := c.pods.pods
	o, ok := c.occupancies[name]
	if ok && o.tree == tree {
		if changed, ok := ledger.HeldChangedSince(o.mark); ok {
			resources, _ := ledger.HeldAmountsByNode()
			o.of.Update(resources, func(yield func(string, []int64) bool) {
				for node := range changed {
					if !yield(node, ledger.HeldAmountsOn(node)) {
						return
					}
				}
			})
			o.mark = ledger.HeldMark()
			c.occupancies[name] = o
			return o.of
		}
	}
	resources, byNode := ledger.HeldAmountsByNode()
	o = occupancy{of: tree.Occupancy(resources, byNode), tree: tree, mark: ledger.HeldMark()}
	if c.occupancies == nil {
		c.occupancies = map[string]occupancy{}
	}
	c.occupancies[name] = o
	return o.of
}

// occupancyChanged carries, with c.mu held, what the pods on the nodes of
// the Topology name's tree hold onto the tree changed from it as the
// nodes named did: those read again, the others' kept.
func (c *topologies) occupancyChanged(name string, from, to *topology.Tree, nodes []string) {
	o, ok := c.occupancies[name]
	if !ok || o.tree != from {
		return
	}
	ledger := c.pods.pods
	resources, _ := ledger.HeldAmountsByNode()
	o.of, o.tree = o.of.On(to), to
	o.of.Update(resources, func(yield func(string, []int64) bool) {
		for _, node := range nodes {
			if !yield(node, ledger.HeldAmountsOn(node)) {
				return
			}
		}
	})
	c.occupancies[name] = o
}

// occupancy is what the pods on the nodes of a Topology's tree hold, as
// of the pod ledger's mark.
type occupancy struct {
	of   *topology.Occupancy
	tree *topology.Tree
	mark uint64
}

// snapshotInputs gathers, with c.mu held, what a snapshot of the Topology
// name is built from.
func (c *topologies) snapshotInputs(name string) (snapshotInputs, error) {
	t, ok := c.byName[name]
	if !ok {
		return snapshotInputs{}, fmt.Errorf("the Topology %q does not exist", name)
	}
	tree := c.tree(t)
	in := snapshotInputs{base: c.occupancy(name, tree).Snapshot()}
	for r := range c.placedAskers {
		if r.ask == nil || len(admittedTo(r)) == 0 {
			delete(c.placedAskers, r)
			continue
		}
		for _, a := range c.assumedOf(r, name) {
			in.assumed = append(in.assumed, assumption{owner: r.key, Assumed: a})
		}
	}
	return in, nil
}

// assumedOf are the pods of r, an asker, admitted to domains of the
// Topology name (any, for "") and not on a node yet, of its pod sets as
// r.ask has them (read once as it changed: a snapshot assumes the pods of
// every unit admitted and not yet on nodes, in every cycle).
func (c *topologies) assumedOf(r *unitRecord, name string) []topology.Assumed {
	placed := admittedTo(r)
	if len(placed) == 0 {
		return nil
	}
	var tally map[string]int32
	var out []topology.Assumed
	sets := c.pooledPodSets(r)
	for _, a := range placed {
		if name != "" && a.Topology != name {
			continue
		}
		i := slices.IndexFunc(sets, func(ps topology.PodSet) bool { return ps.Name == a.Name })
		if i < 0 {
			continue
		}
		if tally == nil {
			tally = map[string]int32{}
			for set, t := range c.pods.heldByPods(r).PodSets {
				tally[set] = t.Bound
			}
		}
		bound := tally[a.Name]
		domains := make([]topology.Domain, 0, len(a.Domains))
		for _, d := range a.Domains {
			// Pods on nodes already count in what the nodes' pods hold:
			// only the rest is assumed, the first domains' first.
			off := min(bound, d.Count)
			bound -= off
			if d.Count-off > 0 {
				domains = append(domains, topology.Domain{Values: d.Values, Pods: d.Count - off})
			}
		}
		out = append(out, topology.Assumed{Topology: a.Topology, PodSet: topology.PodSet{Name: a.Name, PerPod: sets[i].PerPod, Amounts: sets[i].Amounts, Nodes: sets[i].Nodes},
			Domains: domains})
	}
	return out
}

// forecastCluster copies, for the forecast, the nodes, what the pods on
// them hold and for which unit, and what the units that ask for levels
// ask, with c.mu held. It is nil unless some waiting unit asks for a level
// of a Topology that exists, and holds only such Topologies: a forecast
// with no such unit costs nothing more. Otherwise it walks the askers, the
// nodes and every pod (podledger.Ledger.EveryHeldOnNodes). The pods of a
// unit the core holds admitted are that unit's (given back when the
// forecast ends it); all others' keep their room.
func (c *topologies) forecastCluster() *topology.Cluster {
	var levels map[string]topology.Levels
	for r := range c.askers {
		if !r.inCore || c.core.IsAdmitted(r.key) {
			continue
		}
		if _, ok := levels[r.ask.topology]; ok {
			continue
		}
		if t, ok := c.byName[r.ask.topology]; ok {
			if levels == nil {
				levels = map[string]topology.Levels{}
			}
			levels[r.ask.topology] = topology.LevelsOf(t)
		}
	}
	if levels == nil {
		return nil
	}
	cl := &topology.Cluster{Topologies: levels, Nodes: make([]topology.Node, 0, len(c.nodeFacts)),
		Units: make(map[string]topology.Unit, len(c.askers))}
	for _, n := range c.nodeFacts {
		if n.Schedulable {
			cl.Nodes = append(cl.Nodes, n)
		}
	}
	for r := range c.askers {
		if r.inCore {
			cl.Units[r.key] = topology.Unit{Topology: r.ask.topology, PodSets: c.pooledPodSets(r), Assumed: c.assumedOf(r, "")}
		}
	}
	on := c.pods.pods.EveryHeldOnNodes()
	cl.Resources = on.Names
	for _, sum := range on.Sums {
		h := topology.Holding{Node: sum.Node, Amounts: sum.Amounts}
		if r := c.pods.unitOfGroup(sum.Group); r != nil && c.core.IsAdmitted(r.key) {
			u := cl.Units[r.key]
			u.Held = append(u.Held, h) // a unit's pods, and its job's
			cl.Units[r.key] = u
			continue
		}
		cl.Held = append(cl.Held, h)
	}
	return cl
}

// noPool is the placement of a unit of no node pool.
var noPool *pool.Placement

// podSetsOf are u's pod sets as a snapshot places them, all their pods,
// within as many domains as their pods can keep to on no node pool.
func podSetsOf(u *schedulingv1alpha1.QueueUnit) []topology.PodSet {
	out := make([]topology.PodSet, 0, len(u.Spec.PodSets))
	for i := range u.Spec.PodSets {
		ps := &u.Spec.PodSets[i]
		ask, _ := topology.ParseAsk(ps.Template.Annotations) // a malformed ask is the unit's error (checkTopology)
		// Nodes even when it asks for no level: pods admitted to a domain
		// are assumed on the nodes they can use whatever the unit asks now.
		perPod := resources.PodRequests(&ps.Template.Spec)
		out = append(out, topology.PodSet{Name: ps.Name, Count: ps.Count, PerPod: perPod, Amounts: topology.AmountsOf(perPod), Ask: ask,
			Nodes: topology.SelectionOf(&ps.Template.Spec), MaxDomains: noPool.MaxDomains(requiredTerms(&ps.Template.Spec))})
	}
	return out
}

// assignmentsOf is res as the unit's status records it.
func assignmentsOf(levels topology.Levels, res topology.Result) []schedulingv1alpha1.PodSetTopologyAssignment {
	var out []schedulingv1alpha1.PodSetTopologyAssignment
	for _, p := range res.Placements {
		if p.Level < 0 || len(p.Domains) == 0 {
			continue
		}
		a := schedulingv1alpha1.PodSetTopologyAssignment{Name: p.PodSet, Topology: levels.Topology,
			Levels: slices.Clone(levels.Labels[:p.Level+1]), Domains: make([]schedulingv1alpha1.TopologyDomainAssignment, 0, len(p.Domains))}
		for _, d := range p.Domains {
			a.Domains = append(a.Domains, schedulingv1alpha1.TopologyDomainAssignment{Values: slices.Clone(d.Values), Count: d.Pods})
		}
		out = append(out, a)
	}
	return out
}
