package quota

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
)

// The children's-mins rule (the children's mins add up to no more than
// their parent's min) is the one tree rule that weighs quotas against each
// other, so when it breaks, some quota must be chosen to be invalid.
// Koordinator's webhook refuses the update that would break it; here the
// update has happened, so the quota whose change broke the rule is the
// invalid one, never a sibling that did not change. For that the engine
// keeps, per quota, when its facts for the rule (parent, min,
// allow-force-update) last changed, and the facts it last was valid with.
//
// Siblings are weighed as the webhook would have seen them: first what each
// quota was last valid with under this parent (those states fitted
// together), whatever it is now (moved away, invalid on its own: the
// webhook would have kept it as it was), then each change since, in the
// order the engine saw them, a change that does not fit being refused (the
// quota is invalid, and what it was valid with still counts). A parent
// whose min changed since it was last valid is
// weighed at its change too: if its new min no longer holds its children's,
// the parent is the invalid one. A quota changed back to the facts it was
// valid with takes its old place back.
//
// The order of changes is known only from what the engine saw. Quotas fed
// before the first cycle (MarkLoaded), as after a restart, have no known
// order: each counts as changed at start, and among them the oldest (by
// creation time, then name) are weighed first, so the newest are refused.
// That fallback is what a restarted koord-queue decides, whatever order its
// informers deliver the quotas in.

// ruleFacts are what a quota contributes to the children's-mins rule.
type ruleFacts struct {
	parent string
	min    Vector
	force  bool
}

func (f ruleFacts) equal(g ruleFacts) bool {
	if f.parent != g.parent || f.force != g.force {
		return false
	}
	for i := range max(len(f.min), len(g.min)) {
		if at(f.min, i) != at(g.min, i) {
			return false
		}
	}
	return true
}

// changeKey orders changes: seq, the order the engine saw them in (0 for
// those seen before MarkLoaded), then the quota's creation time and name.
type changeKey struct {
	seq     uint64
	created time.Time
	name    string
}

func (k changeKey) compare(l changeKey) int {
	switch {
	case k.seq != l.seq:
		if k.seq < l.seq {
			return -1
		}
		return 1
	case !k.created.Equal(l.created):
		return k.created.Compare(l.created)
	}
	return strings.Compare(k.name, l.name)
}

// quotaHistory is one quota's: its facts now and since when, and the facts
// it was last valid with (nil: never, or not known while loading).
type quotaHistory struct {
	facts    ruleFacts
	key      changeKey
	valid    *ruleFacts
	validKey changeKey
}

// MarkLoaded ends the initial load: changes seen from now on are weighed in
// the order they are seen. The Scheduler calls it at every cycle; the quotas
// fed before the first one (a restart's) have no known order of change, and
// the tree is built with them all before the load ends.
func (e *Engine) MarkLoaded() {
	if !e.live {
		e.settle()
	}
	e.live = true
}

// noteChange records s's facts for the rule, with the resource names
// interned.
func (e *Engine) noteChange(s Spec) {
	if s.Name == elasticquotav1alpha1.RootQuotaName {
		return
	}
	f := ruleFacts{parent: s.Parent, min: make(Vector, len(e.names)), force: s.ForceUpdate}
	if f.parent == "" {
		f.parent = elasticquotav1alpha1.RootQuotaName
	}
	e.fill(f.min, s.Min, 0)
	h := e.hist[s.Name]
	switch {
	case h == nil:
		h = &quotaHistory{}
		e.hist[s.Name] = h
	case h.facts.equal(f):
		return
	}
	h.facts = f
	if e.live && h.valid != nil && h.valid.equal(f) {
		h.key = h.validKey // changed back: its old place
		return
	}
	h.key = changeKey{created: s.Created, name: s.Name}
	if e.live {
		e.seq++
		h.key.seq = e.seq
	}
}

// acceptValid records, after the rule is checked, the facts each quota is
// valid with (invalid through an ancestor counts as valid here: its own
// facts are fine). While loading, the order of arrival is meaningless, so
// an invalid quota forgets what it was valid with.
func (e *Engine) acceptValid() {
	for name, h := range e.hist {
		n := e.nodes[name]
		switch {
		case n == nil || n.spec == nil:
		case n.err == nil:
			f := h.facts
			h.valid, h.validKey = &f, h.key
		case !e.live:
			h.valid = nil
		}
	}
}

// minStep is one change weighed under a parent: a child's (its min replaces
// sub, what it was valid with here) or, with kid nil, the parent's own.
type minStep struct {
	key changeKey
	kid *node
	sub Vector
}

// checkChildrenMins applies the children's-mins rule under every parent
// (see the top of this file), then records what each quota is valid with.
// names are the tree's quotas, sorted.
func (e *Engine) checkChildrenMins(names []string) {
	validUnder := map[string][]*quotaHistory{}
	if e.live {
		for _, h := range e.hist {
			if h.valid != nil {
				validUnder[h.valid.parent] = append(validUnder[h.valid.parent], h)
			}
		}
	}
	for _, name := range names {
		if n := e.nodes[name]; n.spec != nil && n != e.root && (len(n.kids) > 0 || len(validUnder[name]) > 0) {
			e.checkChildrenMinsUnder(n, validUnder[name])
		}
	}
	e.acceptValid()
}

// checkChildrenMinsUnder applies the rule to n's children; valid are the
// histories of the quotas last valid under n. A child labelled
// allow-force-update is exempt, as at Koordinator's webhook, and its min
// still counts; so is such a parent's change of its own min, and a quota
// tree root's (koord-manager sets its min to its pool's total, and the
// webhook does not check it).
func (e *Engine) checkChildrenMinsUnder(n *node, valid []*quotaHistory) {
	r := len(e.names)
	sum := make(Vector, r)
	for _, h := range valid {
		addTo(sum, padded(h.valid.min, r))
	}
	var steps []minStep
	for _, k := range n.kids {
		if k.spec == nil || k.err != nil {
			continue // not a quota of its own, or invalid already: no change of it to weigh here
		}
		h := e.hist[k.name]
		if v := e.validFacts(h); v != nil && v.parent == n.name {
			if !v.equal(h.facts) {
				steps = append(steps, minStep{key: h.key, kid: k, sub: padded(v.min, r)})
			}
			continue
		}
		steps = append(steps, minStep{key: h.key, kid: k})
	}
	// The parent's min as its children's changes were made: what it was
	// valid with, or no bound before a parent that never was (created, or
	// created again, after its children); its own change is weighed in turn.
	limit := n.min
	if h := e.hist[n.name]; e.live && h != nil && !n.spec.ForceUpdate && n.parent != nil {
		switch v := h.valid; {
		case v == nil:
			limit = make(Vector, r)
			for i := range limit {
				limit[i] = Unlimited
			}
			steps = append(steps, minStep{key: h.key})
		case !v.equal(ruleFacts{parent: v.parent, min: n.min, force: v.force}):
			limit = padded(v.min, r)
			steps = append(steps, minStep{key: h.key})
		}
	}
	slices.SortFunc(steps, func(a, b minStep) int { return a.key.compare(b.key) })
	next := make(Vector, r)
	for _, s := range steps {
		if s.kid == nil {
			if i := over(sum, n.min); i >= 0 {
				if n.err == nil {
					n.err = fmt.Errorf("quota %q: its change to a %s min of %s is below its children's mins, %s, so this quota, whose change broke the rule, "+
						"is not used until its min or its children's are set so they fit: %w",
						n.name, e.names[i], format(e.names[i], n.min[i]), format(e.names[i], sum[i]), ErrChildrenMinAboveMin)
				}
				continue
			}
			limit = n.min
			continue
		}
		copy(next, sum)
		if s.sub != nil {
			for i := range next {
				next[i] -= s.sub[i]
			}
		}
		addTo(next, s.kid.min)
		i := over(next, limit)
		if i < 0 || s.kid.spec.ForceUpdate {
			copy(sum, next)
			continue
		}
		k, name := s.kid, e.names[i]
		if s.key.seq == 0 {
			k.err = fmt.Errorf("quota %q: its %s min %s takes its siblings' mins to %s, over the min %s of its parent %q; "+
				"which of them changed last is not known (they were read at start), so the newest are refused: %w",
				k.name, name, format(name, k.min[i]), format(name, next[i]), format(name, limit[i]), n.name, ErrChildrenMinAboveMin)
			continue
		}
		k.err = fmt.Errorf("quota %q: its change to a %s min of %s takes its siblings' mins to %s, over the min %s of its parent %q, "+
			"so this quota, whose change broke the rule, is not used until its min or its parent's is set so they fit: %w",
			k.name, name, format(name, k.min[i]), format(name, next[i]), format(name, limit[i]), n.name, ErrChildrenMinAboveMin)
	}
}

// keepRefusedMins gives each quota whose change the children's-mins rule
// refused a min that fits, as the webhook would have kept the quota as it
// was: a child, what its siblings' mins leave of its parent's (up to its
// own), so that its refused min neither keeps room from them (the floor
// of a quota that does not lend) nor draws the line above which they are
// reclaimed from; a parent whose min fell below its children's, theirs.
// It is worked out from the tree as it is, not from what each quota was
// last valid with, so that a restarted koord-queue, which does not know
// that, keeps the same mins. Refused siblings take what is left in the
// order of their names.
func (e *Engine) keepRefusedMins() {
	refused := func(n *node) bool { return n.spec != nil && errors.Is(n.err, ErrChildrenMinAboveMin) }
	var walk func(n *node)
	walk = func(n *node) {
		left := slices.Clone(n.min)
		var takers []*node
		for _, k := range n.kids {
			if refused(k) {
				kids := make(Vector, len(e.names))
				for _, g := range k.kids {
					if !refused(g) {
						addTo(kids, g.min)
					}
				}
				if over(kids, k.min) < 0 {
					takers = append(takers, k) // a child whose own min did not fit
					continue
				}
				for i := range k.min {
					k.min[i] = max(k.min[i], kids[i]) // a parent below its children
				}
			}
			for i := range left {
				left[i] -= at(k.min, i)
			}
		}
		slices.SortFunc(takers, func(a, b *node) int { return strings.Compare(a.name, b.name) })
		for _, k := range takers {
			for i := range k.min {
				k.min[i] = max(0, min(k.min[i], at(left, i)))
				left[i] -= k.min[i]
			}
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	for _, r := range e.roots {
		walk(r)
	}
}

// validFacts is what h's quota was last valid with, once live.
func (e *Engine) validFacts(h *quotaHistory) *ruleFacts {
	if h == nil || !e.live {
		return nil
	}
	return h.valid
}

// over is the first resource of sum above limit, or -1.
func over(sum, limit Vector) int {
	for i := range sum {
		if sum[i] > limit[i] {
			return i
		}
	}
	return -1
}

func at(v Vector, i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// padded is v with zeros for the resources learnt since it was made.
func padded(v Vector, n int) Vector {
	if len(v) >= n {
		return v[:n]
	}
	return append(slices.Clone(v), make(Vector, n-len(v))...)
}
