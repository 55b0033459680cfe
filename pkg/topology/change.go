package topology

import (
	"maps"
	"slices"
	"strings"
)

// Changed is t with the nodes named as now says them, made from t's
// structures rather than built again, as NewTree would build it over the
// same nodes (now's false: the node is gone, or not schedulable). A node
// that leaves keeps its position, empty, and a domain left with no node
// stays, detached, for a node that comes back to it: a cordon, a node's
// Ready flapping or a label's change costs a copy of t's lists, not the
// sorting and lookups of every node. t is not changed: snapshots of it
// may be read meanwhile.
//
// It is nil when the tree is due to be built afresh: a node names a
// resource no node of t names, or no node names one of t's anymore, or
// the empty positions or the detached domains kept are over a quarter of
// all.
func (t *Tree) Changed(names []string, now func(name string) (Node, bool)) *Tree {
	nt := t.change(names, now)
	if nt == nil || nt.empty*4 > len(nt.nodes) || nt.detached*4 > len(nt.domains) {
		return nil
	}
	return nt
}

// change is Changed, whatever the empty positions and detached domains.
func (t *Tree) change(names []string, now func(name string) (Node, bool)) *Tree {
	nt := *t
	nt.has = slices.Clone(t.has)
	nt.nodes = slices.Clone(t.nodes)
	nt.allocatable = slices.Clone(t.allocatable)
	nt.domains = slices.Clone(t.domains)
	nt.byLevel = slices.Clone(t.byLevel)
	c := &treeChange{t: &nt, ownLevel: make([]bool, len(nt.byLevel)), ownDomain: map[int32]bool{}}
	for _, name := range names {
		n, ok := now(name)
		if ok && n.Amounts == nil {
			n.Amounts = AmountsOf(n.Allocatable)
		}
		if ok && !nt.namesAll(n.Amounts) {
			return nil
		}
		idx, known := nt.byName[name]
		if known && !nt.nodes[idx].empty {
			c.leave(idx)
		}
		if !ok {
			continue
		}
		if !known {
			if !c.ownNames {
				nt.byName = maps.Clone(nt.byName)
				c.ownNames = true
			}
			idx = int32(len(nt.nodes))
			nt.byName[name] = idx
			nt.nodes = append(nt.nodes, node{name: name, domain: -1, empty: true})
			nt.allocatable = append(nt.allocatable, make([]int64, len(nt.names))...)
			nt.empty++
		}
		c.join(idx, n)
	}
	if slices.Contains(nt.has, 0) {
		return nil
	}
	nt.tainted = false
	for i := range nt.nodes {
		if len(nt.nodes[i].taints) > 0 {
			nt.tainted = true
			break
		}
	}
	return &nt
}

// namesAll: every resource of amounts is one of t's.
func (t *Tree) namesAll(amounts []Amount) bool {
	for _, a := range amounts {
		if _, ok := t.resource(a.Name); !ok {
			return false
		}
	}
	return true
}

// treeChange is a Changed tree being made: which of the lists it shares
// with the tree it is made from it owns, copied before their first change.
type treeChange struct {
	t                   *Tree
	ownNames, ownLookup bool
	ownLevel            []bool
	ownDomain           map[int32]bool
}

// domain is domain d of the new tree, its lists its own.
func (c *treeChange) domain(d int32) *domain {
	dom := &c.t.domains[d]
	if !c.ownDomain[d] {
		dom.children, dom.nodes, dom.members = slices.Clone(dom.children), slices.Clone(dom.nodes), slices.Clone(dom.members)
		c.ownDomain[d] = true
	}
	return dom
}

// level is the new tree's list of the domains of level, its own.
func (c *treeChange) level(level int32) *[]int32 {
	if !c.ownLevel[level] {
		c.t.byLevel[level] = slices.Clone(c.t.byLevel[level])
		c.ownLevel[level] = true
	}
	return &c.t.byLevel[level]
}

// leave empties node n's position, and detaches the domains it leaves
// with no node.
func (c *treeChange) leave(n int32) {
	t := c.t
	nd := &t.nodes[n]
	for _, a := range nd.amounts {
		j, _ := t.resource(a.Name)
		t.has[j]--
	}
	r := len(t.names)
	clear(t.allocatable[int(n)*r : int(n+1)*r])
	d := nd.domain
	*nd = node{name: nd.name, domain: -1, empty: true}
	t.empty++
	if d < 0 {
		return
	}
	dom := c.domain(d)
	dom.nodes = slices.DeleteFunc(dom.nodes, func(x int32) bool { return x == n })
	dom.members = slices.DeleteFunc(dom.members, func(m member) bool { return m.node && m.idx == n })
	for d >= 0 && len(t.domains[d].nodes) == 0 && len(t.domains[d].children) == 0 {
		dom := &t.domains[d]
		dom.detached = true
		t.detached++
		list := c.level(dom.level)
		*list = slices.DeleteFunc(*list, func(x int32) bool { return x == d })
		if dom.parent >= 0 {
			p := c.domain(dom.parent)
			p.children = slices.DeleteFunc(p.children, func(x int32) bool { return x == d })
			p.members = slices.DeleteFunc(p.members, func(m member) bool { return !m.node && m.idx == d })
		}
		d = dom.parent
	}
}

// join puts n, as now says it, in the empty position idx.
func (c *treeChange) join(idx int32, n Node) {
	t := c.t
	r := len(t.names)
	alloc := t.allocatable[int(idx)*r : int(idx+1)*r]
	for _, a := range n.Amounts {
		j, _ := t.resource(a.Name)
		alloc[j] = a.Value
		t.has[j]++
	}
	d := c.place(n.Labels)
	t.nodes[idx] = node{name: n.Name, labels: n.Labels, taints: n.Taints, amounts: n.Amounts, domain: d}
	t.empty--
	if d < 0 {
		return
	}
	dom := c.domain(d)
	byName := func(a, b int32) int { return strings.Compare(t.nodes[a].name, t.nodes[b].name) }
	i, _ := slices.BinarySearchFunc(dom.nodes, idx, byName)
	dom.nodes = slices.Insert(dom.nodes, i, idx)
	c.insertMember(d, member{idx: idx, node: true})
}

// place is NewTree's place on the new tree: it finds or makes the domains
// of a node with labels, attaching those detached, and returns the
// narrowest.
func (c *treeChange) place(labels map[string]string) int32 {
	t := c.t
	parent := int32(-1)
	for level, key := range t.levels.Labels {
		value, ok := labels[key]
		if !ok || value == "" {
			break
		}
		k := domainKey{parent, value}
		d, ok := t.lookup[k]
		if !ok {
			if !c.ownLookup {
				t.lookup = maps.Clone(t.lookup)
				c.ownLookup = true
			}
			d = int32(len(t.domains))
			values := t.valuesBelow(parent, value)
			t.domains = append(t.domains, domain{level: int32(level), parent: parent, values: values, detached: true})
			t.detached++
			t.lookup[k] = d
			c.ownDomain[d] = true
		}
		if t.domains[d].detached {
			c.attach(d)
		}
		parent = d
	}
	return parent
}

// attach puts the detached domain d back in its level's list and its
// parent's, where NewTree would have it.
func (c *treeChange) attach(d int32) {
	t := c.t
	dom := c.domain(d)
	dom.detached = false
	t.detached--
	list := c.level(dom.level)
	i, _ := slices.BinarySearchFunc(*list, d, t.compare)
	*list = slices.Insert(*list, i, d)
	if p := dom.parent; p >= 0 {
		pd := c.domain(p)
		i, _ := slices.BinarySearchFunc(pd.children, d, t.compare)
		pd.children = slices.Insert(pd.children, i, d)
		c.insertMember(p, member{idx: d})
	}
}

// insertMember puts m among d's members where membersOf would have it.
func (c *treeChange) insertMember(d int32, m member) {
	t := c.t
	dom := c.domain(d)
	i, _ := slices.BinarySearchFunc(dom.members, m, t.compareMembers)
	dom.members = slices.Insert(dom.members, i, m)
}

// compareMembers orders a domain's members as membersOf merges them: by
// name, a node before a child domain of the same name.
func (t *Tree) compareMembers(a, b member) int {
	if c := strings.Compare(t.memberName(a), t.memberName(b)); c != 0 {
		return c
	}
	switch {
	case a.node == b.node:
		return 0
	case a.node:
		return -1
	default:
		return 1
	}
}

func (t *Tree) memberName(m member) string {
	if m.node {
		return t.nodes[m.idx].name
	}
	return t.lastValue(m.idx)
}
