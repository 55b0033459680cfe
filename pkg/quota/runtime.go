package quota

import (
	"math"
	"math/bits"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Runtime is the quota's fair share now: its min (up to its demand) plus a
// part of what its parent has left, in proportion to its shared weight,
// capped by its max and by its demand (what it holds plus what its waiting
// units ask for). A quota that does not lend demands at least its min.
func (e *Engine) Runtime(quota string) corev1.ResourceList {
	e.settle()
	n, ok := e.nodes[quota]
	if !ok {
		return corev1.ResourceList{}
	}
	e.refreshRuntime()
	return e.ResourceList(n.runtime)
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
func (e *Engine) sameDemand() bool {
	same := true
	for _, n := range e.dpTouched {
		n.dpTouched = false
		if !same || len(n.dp) != len(n.direct) {
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

type claim struct {
	n            *node
	need, weight int64
}

// share splits p's runtime of resource i among its children: each gets its
// min (up to its demand); the rest is water-filled by weight, nobody getting
// more than its demand.
func (e *Engine) share(p *node, i int) {
	avail := p.runtime[i] - min(p.runtime[i], max(0, p.direct[i]+p.pending[i]))
	var sumGuaranteed int64
	for _, k := range p.kids {
		k.runtime[i] = max(0, min(k.min[i], k.demand[i]))
		sumGuaranteed += k.runtime[i]
	}
	if sumGuaranteed > avail {
		// Mins above what the parent has (the cluster shrank): scale down.
		for _, k := range p.kids {
			k.runtime[i] = mulDiv(k.runtime[i], max(avail, 0), sumGuaranteed)
		}
		return
	}
	rest := avail - sumGuaranteed
	claims := e.claims[:0]
	var sumWeight int64
	for _, k := range p.kids {
		need := k.demand[i] - k.runtime[i]
		w := k.weight[i]
		if w == Unlimited {
			w = avail
		}
		if need <= 0 || w <= 0 {
			continue
		}
		claims = append(claims, claim{n: k, need: need, weight: w})
		sumWeight += w
	}
	// Serve the smallest need per weight first: once one claim exceeds its
	// proportional part, so do all after it, and each gets that part.
	sort.Slice(claims, func(a, b int) bool {
		ra := float64(claims[a].need) / float64(claims[a].weight)
		rb := float64(claims[b].need) / float64(claims[b].weight)
		if ra != rb {
			return ra < rb
		}
		return claims[a].n.name < claims[b].n.name
	})
	for _, c := range claims {
		if rest <= 0 || sumWeight <= 0 {
			break
		}
		give := min(c.need, mulDiv(rest, c.weight, sumWeight))
		c.n.runtime[i] += give
		rest -= give
		sumWeight -= c.weight
	}
	e.claims = claims[:0] // keep the buffer for the next parent
}

// mulDiv is a*b/c rounded down without overflow, for 0 <= b <= c.
func mulDiv(a, b, c int64) int64 {
	if a <= 0 || b <= 0 || c <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}
