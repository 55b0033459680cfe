package quota

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Runtime is the quota's fair share now: its min (up to its demand) plus a
// part of what its parent has left, in proportion to its shared weight,
// capped by its max and by its demand (what it holds plus what its waiting
// units ask for). A quota that does not lend demands at least its min. As
// koord-scheduler shows it, only the resources the quota's max names are
// given, and koordinator-default-quota's and koordinator-system-quota's is
// their max (see share). A root's is its capacity.
func (e *Engine) Runtime(quota string) corev1.ResourceList {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok {
		return corev1.ResourceList{}
	}
	e.refreshRuntime()
	out := corev1.ResourceList{}
	for i, a := range n.runtime {
		if a == 0 || a == Unlimited || i >= len(e.names) {
			continue
		}
		if n.parent != nil && n.spec != nil {
			if _, named := n.spec.Max[e.names[i]]; !named {
				continue
			}
		}
		out[e.names[i]] = quantity(e.names[i], a)
	}
	return out
}

// DominantShare is the largest, over resources, of used / runtime: how far
// the quota is into its fair share. Queues furthest below theirs (smallest
// share) are served first. A quota using a resource it has no share of
// counts as infinitely far in.
func (e *Engine) DominantShare(quota string) float64 {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok {
		return 0
	}
	e.refreshRuntime()
	share := 0.0
	for i, u := range n.used {
		if u <= 0 {
			continue
		}
		rt := n.runtime[i]
		if rt <= 0 {
			return math.Inf(1)
		}
		share = max(share, float64(u)/float64(rt))
	}
	return share
}

// RuntimeStale reports whether the next Runtime or DominantShare call may
// recompute every share (because usage, demand or the tree changed).
func (e *Engine) RuntimeStale() bool {
	e.settle()
	return e.runtimeStale
}

// RuntimeGeneration changes whenever runtimes (and so dominant shares of
// quotas whose usage did not change) may have changed.
func (e *Engine) RuntimeGeneration() int {
	e.settle()
	e.refreshRuntime()
	return e.runtimeGen
}

// refreshRuntime recomputes demand bottom-up and runtime top-down. It is
// O(quotas × resources × log siblings) and runs at most once per change
// batch: admitting a waiting unit moves its request from pending to used and
// leaves demand, and so every runtime, unchanged.
func (e *Engine) refreshRuntime() {
	if !e.runtimeStale {
		return
	}
	e.runtimeStale = false
	if !e.runtimeTree && e.sameDemand() {
		return // a unit finished and another arrived in its quota, say
	}
	e.runtimeTree = false
	e.runtimeGen++
	for _, n := range e.order {
		n.dp = grow(n.dp, len(n.direct))
		for i := range n.dp {
			n.dp[i] = n.direct[i] + n.pending[i]
		}
		n.dpTouched = false
	}
	e.dpTouched = e.dpTouched[:0]
	for _, n := range e.order { // children first
		for i := range n.demand {
			d := n.direct[i] + n.pending[i]
			for _, k := range n.kids {
				d += k.demand[i]
			}
			if n.spec != nil && n.spec.DisallowLending {
				d = max(d, n.min[i])
			}
			n.demand[i] = min(d, n.max[i])
		}
	}
	for _, root := range e.roots { // each tree shares its own capacity
		for i := range root.runtime {
			if root.max[i] == Unlimited {
				root.runtime[i] = root.demand[i]
			} else {
				root.runtime[i] = root.max[i]
			}
		}
	}
	for j := len(e.order) - 1; j >= 0; j-- { // parents first
		p := e.order[j]
		if len(p.kids) > 0 {
			for i := range p.runtime {
				e.share(p, i)
			}
		}
	}
}

// sameDemand reports whether every quota's direct usage plus pending demand,
// all that runtime depends on besides the tree, is as at the last
// computation, and forgets which quotas were touched. O(touched quotas).
// A touched outside quota (koordinator-default-quota) always counts as a
// change: what it holds, not its demand, is taken off its siblings' share.
func (e *Engine) sameDemand() bool {
	same := true
	for _, n := range e.dpTouched {
		n.dpTouched = false
		if !same || n.outside || len(n.dp) != len(n.direct) {
			same = false
			continue
		}
		for i := range n.dp {
			if n.dp[i] != n.direct[i]+n.pending[i] {
				same = false
				break
			}
		}
	}
	e.dpTouched = e.dpTouched[:0]
	return same
}

// claim is one child's part in a split of its parent's runtime of one
// resource (share).
type claim struct {
	n *node
	// min is the child's min, scaled down when its siblings' mins exceed
	// what there is; request is its demand; weight its shared weight.
	min, request, weight int64
	// delta is its part of one round's remainder, rem what the round's
	// division left over (for the largest remainders).
	delta int64
	rem   uint64
}

// share splits p's runtime of resource i among its children as
// koord-scheduler's runtime quota calculator does (redistribution in
// runtime_quota_calculator.go, with min scaling on, its default), so the
// runtimes agree with its figures to the unit:
//
//   - koordinator-default-quota and koordinator-system-quota take no
//     share: their runtime is their max, and what their own units hold is
//     taken off what the others share;
//   - when the children's mins add up to more than there is, each min is
//     scaled down in proportion (rounded down, as koord-scheduler does);
//   - a child asking for no more than its (scaled) min gets what it asks
//     for (its min if it does not lend); the others get their min, and
//     what is left is split in proportion to their shared weights, by the
//     largest remainder, in rounds: a child given more than it asks for
//     keeps what it asks for and the rest goes round again among the
//     others.
//
// Only the children whose max names the resource take part, as
// koord-scheduler counts a quota's pods only in the resources its max
// names. The others (not limited by their max in it) share the same
// runtime among themselves, in equal parts, for ordering queues only: their
// runtime of it is not shown (Runtime).
func (e *Engine) share(p *node, i int) {
	total := p.runtime[i] - min(p.runtime[i], max(0, p.direct[i]+p.pending[i]))
	for _, k := range p.kids {
		if k.outside {
			total -= min(total, max(0, k.direct[i]))
			k.runtime[i] = k.max[i]
		}
	}
	e.apportion(p, i, total, true)
	e.apportion(p, i, total, false)
}

// apportion splits total among the children of p whose max names resource
// i (limited) or does not, as share says.
func (e *Engine) apportion(p *node, i int, total int64, limited bool) {
	claims := e.claims[:0]
	var sumMin int64
	for _, k := range p.kids {
		if k.outside || (k.max[i] != Unlimited) != limited {
			continue
		}
		c := claim{n: k, min: max(0, k.min[i]), request: max(0, k.demand[i]), weight: 1}
		if limited {
			c.weight = max(0, k.weight[i])
		}
		claims = append(claims, c)
		sumMin = addCapped(sumMin, c.min)
	}
	if total < sumMin {
		// koord-scheduler's own arithmetic (getScaledMinQuota), in
		// float64 and truncated, so that the scaled mins agree with its
		// to the unit; kept within [0, min] whatever float64 rounding
		// does near the int64 limit.
		for j := range claims {
			c := &claims[j]
			c.min = min(c.min, max(0, int64(float64(total)*float64(c.min)/float64(sumMin))))
		}
	}
	rest := total
	needy := claims[:0]
	for _, c := range claims {
		k := c.n
		switch {
		case c.request > c.min:
			k.runtime[i] = c.min
			needy = append(needy, c)
		case k.spec != nil && k.spec.DisallowLending:
			k.runtime[i] = c.min
		default:
			k.runtime[i] = c.request
		}
		rest -= k.runtime[i]
	}
	for rest > 0 && len(needy) > 0 {
		sumWeight := fitWeights(needy)
		if sumWeight <= 0 {
			break
		}
		largestRemainder(rest, sumWeight, needy)
		rest = 0
		still := needy[:0]
		for _, c := range needy {
			k := c.n
			k.runtime[i] += c.delta
			if k.runtime[i] < c.request {
				still = append(still, c)
				continue
			}
			rest += k.runtime[i] - c.request
			k.runtime[i] = c.request
		}
		needy = still
	}
	e.claims = claims[:0] // keep the buffer for the next parent
}

// largestRemainder splits total among claims in proportion to their weights
// (sumWeight in all, at least each weight) by the largest remainder method,
// into each claim's delta, as koord-scheduler's computeHamiltonDeltas: each
// gets the whole part of its share, then one more unit each goes to the
// largest remainders, the first by name on a tie, until total is given.
func largestRemainder(total, sumWeight int64, claims []claim) {
	given := int64(0)
	for j := range claims {
		c := &claims[j]
		c.delta, c.rem = 0, 0
		if c.weight <= 0 {
			continue
		}
		hi, lo := bits.Mul64(uint64(c.weight), uint64(total))
		q, r := bits.Div64(hi, lo, uint64(sumWeight))
		c.delta, c.rem = int64(q), r
		given += c.delta
	}
	residual := total - given
	if residual <= 0 {
		return
	}
	slices.SortFunc(claims, func(a, b claim) int {
		if (a.weight > 0) != (b.weight > 0) {
			if a.weight > 0 {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.rem, a.rem); c != 0 {
			return c
		}
		return strings.Compare(a.n.name, b.n.name)
	})
	for j := 0; j < len(claims) && residual > 0 && claims[j].weight > 0; j++ {
		claims[j].delta++
		residual--
	}
}

// fitWeights returns the sum of the claims' weights, halving every weight
// (rounding down) until the sum fits in an int64: only weights near the
// int64 limit, which no quota has, are ever changed.
func fitWeights(claims []claim) int64 {
	for {
		var sum uint64
		overflow := false
		for _, c := range claims {
			var carry uint64
			sum, carry = bits.Add64(sum, uint64(c.weight), 0)
			overflow = overflow || carry != 0
		}
		if !overflow && sum <= math.MaxInt64 {
			return int64(sum)
		}
		for j := range claims {
			claims[j].weight >>= 1
		}
	}
}

// addCapped is a+b for non-negative a and b, at most math.MaxInt64.
func addCapped(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
