package quota

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Charge records that an admitted unit holds c.Request in c.Quota and every
// ancestor, until Release. It never refuses for lack of room: the caller
// checks Headroom first, and units restored after a restart must be counted
// whatever they hold. A quota the engine does not know is created, in error,
// so that its usage still counts against the cluster.
func (e *Engine) Charge(c Charge) error {
	e.settle()
	if _, ok := e.charges[c.Key]; ok {
		return fmt.Errorf("unit %q: %w", c.Key, ErrAlreadyCharged)
	}
	if err := e.checkNotNegative(c.Key, c.Request); err != nil {
		return err
	}
	n := e.nodeFor(c.Quota)
	n.placeholder = false // charged: kept while it is (KeepInTree)
	c.Request = append(Vector(nil), c.Request...)
	e.charges[c.Key] = &c
	n.charges[c.Key] = &c
	e.apply(n, c.Request, 1)
	e.tally(c.Namespace, c.Request, 1)
	e.runtimeStale = true
	return nil
}

// Admit charges a unit that was counted as pending in the same quota (by
// AddPending): its request moves from pending to used. Demand, and so every
// runtime, is unchanged, which keeps an admission O(depth × resources)
// (but in koordinator-default-quota or koordinator-system-quota, whose
// usage is taken off their siblings' share).
func (e *Engine) Admit(c Charge) error {
	e.settle()
	if _, ok := e.charges[c.Key]; ok {
		return fmt.Errorf("unit %q: %w", c.Key, ErrAlreadyCharged)
	}
	if err := e.checkNotNegative(c.Key, c.Request); err != nil {
		return err
	}
	n, ok := e.nodes[c.Quota]
	if !ok {
		return e.Charge(c)
	}
	stale := e.runtimeStale
	for i, a := range c.Request {
		n.pending[i] -= a
	}
	err := e.Charge(c)
	if !n.outside { // what an outside quota holds is taken off its siblings' share
		e.runtimeStale = stale
	}
	return err
}

// Resize changes what a charged unit holds to request, in the same quota,
// keeping its priority and admit time: an admitted job was resized, or a
// preemptor's reservation grew. Like Charge, it never refuses for lack of
// room. It fails only if the unit holds nothing (ErrNotCharged).
func (e *Engine) Resize(key string, request Vector) error {
	e.settle()
	c, ok := e.charges[key]
	if !ok {
		return fmt.Errorf("unit %q: %w", key, ErrNotCharged)
	}
	if err := e.checkNotNegative(key, request); err != nil {
		return err
	}
	n := e.nodes[c.Quota]
	e.apply(n, c.Request, -1)
	e.tally(c.Namespace, c.Request, -1)
	// A new slice: a Charge returned by Charged keeps the old request.
	c.Request = append(Vector(nil), request...)
	e.apply(n, c.Request, 1)
	e.tally(c.Namespace, c.Request, 1)
	e.runtimeStale = true
	return nil
}

// checkNotNegative refuses a request below zero in any resource
// (ErrNegativeRequest): callers check requests before they reach the
// engine (CheckRequest), and the engine charges none whatever they do.
func (e *Engine) checkNotNegative(key string, request Vector) error {
	for i, a := range request {
		if a < 0 {
			name := corev1.ResourceName(fmt.Sprint(i))
			if i < len(e.names) {
				name = e.names[i]
			}
			return fmt.Errorf("unit %q asks %s %s: %w", key, name, format(name, a), ErrNegativeRequest)
		}
	}
	return nil
}

// WithinMin reports whether the quota's usage plus request stays within its
// min for every resource the request asks for: the quota is owed it, so it
// may reclaim what others borrowed.
func (e *Engine) WithinMin(quota string, request Vector) bool {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok || n.err != nil {
		return false
	}
	for i, r := range request {
		if r > 0 && n.used[i]+r > n.min[i] {
			return false
		}
	}
	return true
}

// Borrowing reports whether the quota uses more than its min of some
// resource, and so may be asked to give it back.
func (e *Engine) Borrowing(quota string) bool {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok {
		return false
	}
	for i, u := range n.used {
		if u > n.min[i] {
			return true
		}
	}
	return false
}

// Release gives back what the unit holds; false if it holds nothing. Call it
// only when the unit is really gone (finished, failed, deleted, or evicted
// and its pods gone), so nothing is counted twice or freed early.
func (e *Engine) Release(key string) bool {
	e.settle()
	c, ok := e.charges[key]
	if !ok {
		return false
	}
	n := e.nodes[c.Quota]
	delete(e.charges, key)
	delete(n.charges, key)
	e.apply(n, c.Request, -1)
	e.tally(c.Namespace, c.Request, -1)
	e.runtimeStale = true
	if n.spec == nil && n != e.root && len(n.charges) == 0 && isZero(n.pending) {
		e.rebuild() // drop the placeholder of an unknown quota
	}
	return true
}

// Charged returns the unit's charge, if it holds one.
func (e *Engine) Charged(key string) (Charge, bool) {
	e.settle()
	c, ok := e.charges[key]
	if !ok {
		return Charge{}, false
	}
	return *c, true
}

// SetPriority updates the priority a charge is ordered by as a victim.
func (e *Engine) SetPriority(key string, priority int32) {
	e.settle()
	if c, ok := e.charges[key]; ok {
		c.Priority = priority
	}
}

// AddPending counts a waiting unit's request in its quota's demand, which
// the runtime (fair share) computation caps shares by.
func (e *Engine) AddPending(quota string, request Vector) {
	e.settle()
	n := e.nodeFor(quota)
	for i, a := range request {
		n.pending[i] += a
	}
	e.touchDP(n)
}

// RemovePending undoes AddPending.
func (e *Engine) RemovePending(quota string, request Vector) {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok {
		return
	}
	for i, a := range request {
		n.pending[i] -= a
	}
	e.touchDP(n)
	if n.spec == nil && n != e.root && len(n.charges) == 0 && isZero(n.pending) {
		e.rebuild()
	}
}

// touchDP records that n's direct usage or pending demand changed.
func (e *Engine) touchDP(n *node) {
	e.runtimeStale = true
	if !n.dpTouched {
		n.dpTouched = true
		e.dpTouched = append(e.dpTouched, n)
	}
}

// DrainChanged appends to buf each quota whose usage changed since the last
// call, and forgets them: the quota a unit is charged to and every
// ancestor. With ChainState of its parent, a quota's usage is all that its
// units' headroom (Headroom) and whether it is owed a request (WithinMin)
// depend on.
func (e *Engine) DrainChanged(buf []string) []string {
	e.settle()
	for _, n := range e.changed {
		n.changed = false
		buf = append(buf, n.name)
	}
	e.changed = e.changed[:0]
	return buf
}

// ChainState appends to buf what Headroom, for a child of quota whose own
// usage did not change, reads of quota and its ancestors. Two equal results
// mean such a child's headroom (and binding) is the same.
func (e *Engine) ChainState(quota string, buf []byte) []byte {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok {
		return buf
	}
	for ; n != nil; n = n.parent {
		for _, v := range [...]Vector{n.direct, n.kidsEff, n.eff} {
			for _, a := range v {
				buf = binary.LittleEndian.AppendUint64(buf, uint64(a))
			}
		}
	}
	return buf
}

func (e *Engine) nodeFor(quota string) *node {
	if n, ok := e.nodes[quota]; ok {
		return n
	}
	n := newNode(quota)
	n.placeholder = true
	e.nodes[quota] = n
	e.rebuild()
	n.placeholder = false
	return n
}

// apply adds sign*req to n's direct usage and updates used and eff up the
// chain: O(depth × resources), no allocation.
func (e *Engine) apply(n *node, req Vector, sign int64) {
	e.touchDP(n)
	if !n.changed {
		n.changed = true
		e.changed = append(e.changed, n)
	}
	d := e.delta
	for i := range d {
		var a int64
		if i < len(req) {
			a = sign * req[i]
		}
		n.direct[i] += a
		n.used[i] += a
		eff := max(n.floor[i], n.direct[i]+n.kidsEff[i])
		d[i] = eff - n.eff[i]
		n.eff[i] = eff
	}
	for p := n.parent; p != nil; p = p.parent {
		if !p.changed {
			p.changed = true
			e.changed = append(e.changed, p)
		}
		for i := range d {
			if i < len(req) {
				p.used[i] += sign * req[i]
			}
			p.kidsEff[i] += d[i]
			eff := max(p.floor[i], p.direct[i]+p.kidsEff[i])
			d[i] = eff - p.eff[i]
			p.eff[i] = eff
		}
	}
}

// tally adds sign*req to what namespace holds, and forgets a namespace that
// holds nothing: O(resources), no allocation but for a namespace's first
// charge.
func (e *Engine) tally(namespace string, req Vector, sign int64) {
	if namespace == "" {
		return
	}
	v := grow(e.nsUsed[namespace], max(len(req), len(e.nsUsed[namespace])))
	for i, a := range req {
		v[i] += sign * a
	}
	if isZero(v) {
		delete(e.nsUsed, namespace)
		return
	}
	e.nsUsed[namespace] = v
}

// Headroom is how much more the quota may admit now, per resource: the
// largest request that keeps every quota on the chain within its max (the
// root within the cluster's capacity), counting the idle min of quotas that
// do not lend as taken. Unlimited where nothing limits. binding gets, per
// resource, the quota whose limit is the tightest ("" if none); a release
// elsewhere cannot raise that resource's headroom.
//
// free and binding are reused if large enough, so a caller on a hot path
// can avoid allocating.
func (e *Engine) Headroom(quota string, free Vector, binding []string) (Vector, []string, error) {
	e.settle()
	free = grow(free[:0], len(e.names))
	binding = growStrings(binding[:0], len(e.names))
	n, ok := e.nodes[quota]
	if !ok {
		return free, binding, e.Err(quota)
	}
	if n.err != nil {
		return free, binding, n.err
	}
	e.headroom(n, free)
	for i, b := range e.bind {
		if b != nil {
			binding[i] = b.name
		}
	}
	return free, binding, nil
}

// headroom fills free (length len(e.names)) and e.bind for n.
//
// Adding x to n's direct usage gives eff'(a) = max(floor(a), base(a) +
// eff'(child)) at each ancestor a, where base(a) is what a holds besides the
// child on the path. So eff'(a) <= cap(a) iff M(a) <= cap(a) and P(a) + x <=
// cap(a), with P the sum of bases from n up to a and M(a) = max(floor(a),
// base(a) + M(child)), M(n) = floor(n). Both are accumulated on the way up.
func (e *Engine) headroom(n *node, free Vector) {
	p, m := e.sumBase, e.maxFloor
	for i := range free {
		free[i] = Unlimited
		e.bind[i] = nil
	}
	var child *node
	for a := n; a != nil; a = a.parent {
		for i := range free {
			base := a.direct[i] + a.kidsEff[i]
			if child == nil {
				p[i], m[i] = base, a.floor[i]
			} else {
				base -= child.eff[i]
				p[i] += base
				m[i] = max(a.floor[i], base+m[i])
			}
			c := a.max[i]
			if c == Unlimited {
				continue
			}
			room := c - p[i]
			if m[i] > c {
				room = -1 // already over: nothing that asks for it fits
			}
			if room < free[i] {
				free[i] = room
				e.bind[i] = a
			}
		}
		child = a
	}
}

// Explain says why request does not fit in the quota, in words for the
// unit's status ("team-a: cpu 4 used of max 4, request 4"), or "" if it fits.
// It names the lowest quota on the chain that is short.
func (e *Engine) Explain(quota string, request Vector) string {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok || n.err != nil {
		if err := e.Err(quota); err != nil {
			return err.Error()
		}
	}
	free := make(Vector, len(e.names))
	e.headroom(n, free)
	if Fits(request, free) {
		return ""
	}
	if never := e.neverFits(n, request); never != "" {
		return never
	}
	// Walk up again and report at the first quota where the request fails.
	p, m := make(Vector, len(free)), make(Vector, len(free))
	var child *node
	for a := n; a != nil; a = a.parent {
		var parts []string
		for i := range free {
			base := a.direct[i] + a.kidsEff[i]
			if child == nil {
				p[i], m[i] = base, a.floor[i]
			} else {
				base -= child.eff[i]
				p[i] += base
				m[i] = max(a.floor[i], base+m[i])
			}
			c := a.max[i]
			if c == Unlimited || i >= len(request) || request[i] <= 0 {
				continue
			}
			if p[i]+request[i] <= c && m[i] <= c {
				continue
			}
			name := e.names[i]
			taken := max(p[i], m[i])
			reserved := taken - a.used[i]
			limit := "max"
			if e.isCluster(a) || a.total != nil && c == a.total[i] {
				limit = "capacity"
			}
			msg := fmt.Sprintf("%s %s used", name, format(name, a.used[i]))
			if reserved > 0 {
				msg += fmt.Sprintf(" (+%s kept for quotas that do not lend)", format(name, reserved))
			}
			msg += fmt.Sprintf(" of %s %s, request %s", limit, format(name, c), format(name, request[i]))
			parts = append(parts, msg)
		}
		if len(parts) > 0 {
			sort.Strings(parts)
			who := a.name
			switch {
			case e.isCluster(a):
				who = "cluster"
			case a.total != nil:
				who = fmt.Sprintf("%s (root of quota tree %s%s)", a.name, a.spec.TreeID, poolNote(a.spec, ", pool %s"))
			}
			return who + ": " + strings.Join(parts, "; ")
		}
		child = a
	}
	return "does not fit" // unreachable: headroom and this walk agree
}

// NeverFits says why request could not fit in quota even with nothing else
// admitted, or "" (also for a quota it does not know).
func (e *Engine) NeverFits(quota string, request Vector) string {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok {
		return ""
	}
	return e.neverFits(n, request)
}

// neverFits says why request could not fit even with nothing else admitted:
// it asks more of a resource than the max of a quota on n's chain, or than
// the cluster or the quota tree (node pool) has. "" if no such limit stands
// in its way.
func (e *Engine) neverFits(n *node, request Vector) string {
	for a := n; a != nil; a = a.parent {
		var parts []string
		grows := "" // what must grow for the request to fit, if anything can
		for i, r := range request {
			if r <= 0 || i >= len(a.max) || a.max[i] == Unlimited || r <= a.max[i] {
				continue
			}
			name := e.names[i]
			part := fmt.Sprintf("%s %s", name, format(name, r))
			switch {
			case e.isCluster(a):
				part += fmt.Sprintf(" exceeds the cluster's capacity %s", format(name, a.max[i]))
				grows = "cluster"
			case a.total != nil && a.max[i] == a.total[i]:
				part += fmt.Sprintf(" exceeds the capacity %s of quota tree %s (%sroot %s)", format(name, a.max[i]), a.spec.TreeID, poolNote(a.spec, "pool %s, "), a.name)
				grows = "pool"
			default:
				part += fmt.Sprintf(" exceeds max %s of %s", format(name, a.max[i]), a.name)
			}
			parts = append(parts, part)
		}
		if len(parts) == 0 {
			continue
		}
		sort.Strings(parts)
		if grows != "" {
			return "request " + strings.Join(parts, "; ") + ": it cannot be admitted until the " + grows + " grows"
		}
		return "request " + strings.Join(parts, "; ") + ": it can never be admitted"
	}
	return ""
}

// poolNote is the tree root's pool in format, when it has a name other
// than its tree id; "" otherwise.
func poolNote(root *Spec, format string) string {
	if root == nil || root.Pool == "" || root.Pool == root.TreeID {
		return ""
	}
	return fmt.Sprintf(format, root.Pool)
}

// isCluster reports whether n stands for the cluster itself: the root with
// no max of its own, whose limits are the nodes' capacity.
func (e *Engine) isCluster(n *node) bool {
	return n == e.root && (n.spec == nil || len(n.spec.Max) == 0)
}

func growStrings(v []string, n int) []string {
	for len(v) < n {
		v = append(v, "")
	}
	for i := range v[:n] {
		v[i] = ""
	}
	return v[:n]
}

// HeadroomAfter is Headroom in the state where the charges keyed gone are
// released and added are made (only Quota and Request are read): what the
// quota may admit that still leaves room for units that will replace the
// gone ones, a preemptor in place of its victims. It is computed on paper:
// the engine is left as it was, change tracking included, so nothing is
// woken by it. Unknown keys are skipped, as are added charges to unknown
// quotas.
func (e *Engine) HeadroomAfter(quota string, gone []string, added []Charge, free Vector) (Vector, error) {
	e.settle()
	free = grow(free[:0], len(e.names))
	n, ok := e.nodes[quota]
	if !ok {
		return free, e.Err(quota)
	}
	if n.err != nil {
		return free, n.err
	}
	undo := e.onPaper()
	var released []*Charge
	for _, k := range gone {
		c, ok := e.charges[k]
		if !ok || slices.Contains(released, c) {
			continue
		}
		released = append(released, c)
		e.apply(e.nodes[c.Quota], c.Request, -1)
	}
	var made []*node
	for i := range added {
		m, ok := e.nodes[added[i].Quota]
		if !ok {
			made = append(made, nil)
			continue
		}
		made = append(made, m)
		e.apply(m, added[i].Request, 1)
	}
	e.headroom(n, free)
	for i, m := range made {
		if m != nil {
			e.apply(m, added[i].Request, -1)
		}
	}
	for _, c := range released {
		e.apply(e.nodes[c.Quota], c.Request, 1)
	}
	undo()
	return free, nil
}

// onPaper remembers the engine's change tracking; the func it returns
// forgets what was tracked since, once usage is back as it was.
func (e *Engine) onPaper() func() {
	changed, touched, stale := len(e.changed), len(e.dpTouched), e.runtimeStale
	return func() {
		for _, n := range e.changed[changed:] {
			n.changed = false
		}
		e.changed = e.changed[:changed]
		for _, n := range e.dpTouched[touched:] {
			n.dpTouched = false
		}
		e.dpTouched = e.dpTouched[:touched]
		e.runtimeStale = stale
	}
}
