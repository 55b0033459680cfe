package quota

import (
	"sort"
)

// ReclaimVictims picks whom to evict so that request fits in quota, when the
// quota is owed it: quota's usage plus the request stays within its min for
// every resource asked, and the request does not fit only because quotas
// elsewhere borrowed. Victims come from other quotas of quota's tree (never
// from another quota tree, nor quota's ancestors or descendants) that borrow
// when the victim is taken, Kueue's rule: the victim's quota, and each of its
// ancestors below the common ancestor, uses more than its min of a short
// resource the victim holds. A unit larger than
// what its quota borrows may be taken (its quota then drops below its min,
// and is owed that back), but a unit of a quota within its min never is.
// Holds (Charge.Hold) are never taken, and borrowing is judged without
// them: a quota whose admitted units are within its min lends nothing,
// whatever it reserves for a unit still waiting.
// This cannot loop: the victim's quota was above its min, so the victim is
// not owed to it, and the reclaiming quota stays within its min, so nothing
// is reclaimed from it. Candidates are taken lowest priority first, then
// most recently admitted, and only as many as needed: after the greedy
// pass, each victim that turns out unnecessary is spared.
//
// canEvict filters candidates (the scheduler excludes units already being
// evicted). ok is false when the quota is not owed the request or no set of
// victims makes it fit; then nothing is chosen.
func (e *Engine) ReclaimVictims(quota string, request Vector, canEvict func(key string) bool) (victims []string, ok bool) {
	e.settle()
	n, found := e.nodes[quota]
	if !found || n.err != nil {
		return nil, false
	}
	if !e.WithinMin(quota, request) {
		return nil, false
	}
	short := e.short(n, request)
	if len(short) == 0 {
		return nil, false
	}
	var cands []*Charge
	// held is what the holds charged to each quota and its descendants
	// hold: not taken, and not counted as borrowing.
	var held map[*node]Vector
	for _, c := range e.charges {
		m := e.nodes[c.Quota]
		if c.Hold {
			if held == nil {
				held = map[*node]Vector{}
			}
			for a := m; a != nil; a = a.parent {
				h := held[a]
				if h == nil {
					h = make(Vector, len(e.names))
					held[a] = h
				}
				for i, r := range c.Request {
					if i < len(h) {
						h[i] += r
					}
				}
			}
			continue
		}
		if m == n || m.top != n.top || isAncestor(m, n) || isAncestor(n, m) || !uses(c.Request, short) || !canEvict(c.Key) {
			continue
		}
		cands = append(cands, c)
	}
	// borrowing is judged on what the admitted units left by the victims
	// already taken hold: a hold is a unit still waiting, not borrowing, and
	// a quota whose admitted units are within its min lends nothing.
	borrowing := func(c *Charge) bool {
		m := e.nodes[c.Quota]
		top := commonAncestor(m, n)
		for a := m; a != top && a != nil; a = a.parent {
			above := false
			h := held[a]
			for _, s := range short {
				if s < len(c.Request) && c.Request[s] > 0 && a.used[s]-at(h, s) > a.min[s] {
					above = true
					break
				}
			}
			if !above {
				return false
			}
		}
		return true
	}
	return e.selectVictims(n, request, short, cands, borrowing)
}

// LowerPriorityVictims picks units of the quota itself with priority below
// priority to evict so that request fits: lowest priority first, then most
// recently admitted, only as many as needed. canEvict filters candidates (the
// scheduler uses it to spare running units unless the queue allows it).
func (e *Engine) LowerPriorityVictims(quota string, request Vector, priority int32, canEvict func(key string) bool) (victims []string, ok bool) {
	e.settle()
	n, found := e.nodes[quota]
	if !found || n.err != nil {
		return nil, false
	}
	short := e.short(n, request)
	if len(short) == 0 {
		return nil, false
	}
	var cands []*Charge
	for _, c := range n.charges {
		if c.Priority < priority && uses(c.Request, short) && canEvict(c.Key) {
			cands = append(cands, c)
		}
	}
	return e.selectVictims(n, request, short, cands, func(*Charge) bool { return true })
}

// short lists the resources request asks for beyond n's headroom.
func (e *Engine) short(n *node, request Vector) []int {
	free := make(Vector, len(e.names))
	e.headroom(n, free)
	var out []int
	for i, r := range request {
		if r > 0 && r > free[i] {
			out = append(out, i)
		}
	}
	return out
}

// selectVictims evicts candidates on paper, in victim order, until request
// fits, then spares those not needed. The engine's usage is restored before
// it returns: victims are released only when they are really gone.
func (e *Engine) selectVictims(n *node, request Vector, short []int, cands []*Charge, allowed func(*Charge) bool) ([]string, bool) {
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if !a.AdmitTime.Equal(b.AdmitTime) {
			return a.AdmitTime.After(b.AdmitTime)
		}
		return a.Key < b.Key
	})
	free := make(Vector, len(e.names))
	before := make(Vector, len(e.names))
	e.headroom(n, free)
	var chosen []*Charge
	fits := false
	for _, c := range cands {
		if !allowed(c) {
			continue
		}
		copy(before, free)
		e.apply(e.nodes[c.Quota], c.Request, -1)
		e.headroom(n, free)
		if !improves(short, before, free) {
			e.apply(e.nodes[c.Quota], c.Request, 1)
			copy(free, before)
			continue
		}
		chosen = append(chosen, c)
		if Fits(request, free) {
			fits = true
			break
		}
	}
	if !fits {
		for _, c := range chosen {
			e.apply(e.nodes[c.Quota], c.Request, 1)
		}
		return nil, false
	}
	// Spare, most valuable first, every victim the request fits without.
	needed := make([]bool, len(chosen))
	needed[len(chosen)-1] = true
	for i := len(chosen) - 2; i >= 0; i-- {
		c := chosen[i]
		e.apply(e.nodes[c.Quota], c.Request, 1)
		e.headroom(n, free)
		if !Fits(request, free) {
			e.apply(e.nodes[c.Quota], c.Request, -1)
			needed[i] = true
		}
	}
	var victims []string
	for i, c := range chosen {
		if needed[i] {
			e.apply(e.nodes[c.Quota], c.Request, 1)
			victims = append(victims, c.Key)
		}
	}
	return victims, true
}

func improves(short []int, before, after Vector) bool {
	for _, s := range short {
		if after[s] > before[s] {
			return true
		}
	}
	return false
}

func uses(request Vector, resources []int) bool {
	for _, s := range resources {
		if s < len(request) && request[s] > 0 {
			return true
		}
	}
	return false
}

// isAncestor reports whether a is a strict ancestor of n.
func isAncestor(a, n *node) bool {
	for p := n.parent; p != nil; p = p.parent {
		if p == a {
			return true
		}
	}
	return false
}

func commonAncestor(a, b *node) *node {
	for a.depth > b.depth {
		a = a.parent
	}
	for b.depth > a.depth {
		b = b.parent
	}
	for a != b {
		a, b = a.parent, b.parent
	}
	return a
}
