package topology

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// maxShapes bounds how many request shapes a snapshot keeps counts for:
// each costs a count per node and per domain, and a tenant can make as
// many shapes as it has jobs.
const maxShapes = 16

// shape is a per-pod request and the nodes its pods can use, and, for
// them, how many pods each node and each domain has room for. Its counts
// follow the snapshot's changes lazily (sync).
type shape struct {
	// req is never changed once the shape is made (a reused shape gets a
	// new one), so that what was taken may keep it (taking.shape).
	req []int64
	sel Selection
	// usable are the nodes the pods can use; nil: every node.
	usable []bool
	// missing is a resource the request names that no node has: it fits
	// nowhere.
	missing corev1.ResourceName
	counts  []int32
	sums    []int64
	// synced is how much of the snapshot's changed list counts reflects.
	synced  int
	lastUse uint64
}

// shapeOf is the shape of ps's pods on the nodes they can use, its counts
// made or reused.
func (s *Snapshot) shapeOf(ps *PodSet) *shape {
	s.uses++
	s.compact()
	if cap(s.req) < len(s.names) {
		s.req = make([]int64, len(s.names))
	}
	req := s.req[:len(s.names)]
	clear(req)
	var missing corev1.ResourceName
	add := func(name corev1.ResourceName, a int64) {
		if a == 0 {
			return
		}
		if i, ok := s.resource(name); ok {
			req[i] = a
		} else if missing == "" || name < missing {
			missing = name
		}
	}
	if ps.Amounts != nil {
		for _, a := range ps.Amounts {
			add(a.Name, a.Value)
		}
	} else {
		for name, q := range ps.PerPod {
			add(name, amount(name, q))
		}
	}
	sel := ps.Nodes
	var victim *shape
	for _, sh := range s.shapes {
		if sh.missing == missing && sh.sel.key == sel.key && equal(sh.req, req) {
			sh.lastUse = s.uses
			return sh
		}
		if victim == nil || sh.lastUse < victim.lastUse {
			victim = sh
		}
	}
	sh := victim
	if len(s.shapes) < maxShapes {
		sh = &shape{counts: make([]int32, len(s.nodes)), sums: make([]int64, len(s.domains))}
		s.shapes = append(s.shapes, sh)
	}
	sh.req = slices.Clone(req)
	sh.missing, sh.lastUse = missing, s.uses
	sh.sel, sh.usable = sel, s.usable(&sel, sh.usable)
	s.recount(sh)
	return sh
}

// usable are the nodes sel admits, in buf's room; nil when it admits
// every node of a domain (those of none count nowhere).
func (s *Snapshot) usable(sel *Selection, buf []bool) []bool {
	if sel.IsZero() && !s.tainted {
		return nil
	}
	buf = slices.Grow(buf[:0], len(s.nodes))[:len(s.nodes)]
	var scratch corev1.Node // Match reads a node's name and labels
	all := true
	for i := range s.nodes {
		n := &s.nodes[i]
		scratch.Name, scratch.Labels = n.name, n.labels
		buf[i] = sel.admits(&scratch, n.taints)
		all = all && (buf[i] || n.domain < 0)
	}
	if all {
		return nil
	}
	return buf
}

func equal(a, b []int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// compact forgets the changes every shape has seen, so that the list of
// changes does not grow with every placement of a long cycle.
func (s *Snapshot) compact() {
	if len(s.changed) < 1024+len(s.nodes) {
		return
	}
	for _, sh := range s.shapes {
		s.sync(sh)
		sh.synced = 0
	}
	s.changed = s.changed[:0]
}

// recount counts sh's pods on every node and domain afresh.
func (s *Snapshot) recount(sh *shape) {
	clear(sh.sums)
	for n := range s.nodes {
		c := s.count(sh, n)
		sh.counts[n] = c
		for d := s.nodes[n].domain; d >= 0 && c > 0; d = s.domains[d].parent {
			sh.sums[d] += int64(c)
		}
	}
	sh.synced = len(s.changed)
}

// sync brings sh's counts up to the snapshot's changes.
func (s *Snapshot) sync(sh *shape) {
	pending := s.changed[sh.synced:]
	if len(pending) > len(s.nodes) {
		s.recount(sh)
		return
	}
	for _, n := range pending {
		c := s.count(sh, int(n))
		delta := int64(c) - int64(sh.counts[n])
		if delta == 0 {
			continue
		}
		sh.counts[n] = c
		for d := s.nodes[n].domain; d >= 0; d = s.domains[d].parent {
			sh.sums[d] += delta
		}
	}
	sh.synced = len(s.changed)
}

// count is how many pods of sh node n has room for.
func (s *Snapshot) count(sh *shape, n int) int32 {
	if sh.missing != "" || (sh.usable != nil && !sh.usable[n]) {
		return 0
	}
	pods := int64(maxPods)
	free := s.free[n*len(s.names) : (n+1)*len(s.names)]
	for r, q := range sh.req {
		if q == 0 {
			continue
		}
		if free[r] < q {
			return 0
		}
		pods = min(pods, free[r]/q)
	}
	return int32(pods)
}
