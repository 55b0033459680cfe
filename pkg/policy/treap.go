package policy

import (
	"math"
	"time"

	"github.com/koord-queue/koord-queue/pkg/ordered"
)

// orderKey is a unit's place: priority descending, then enqueue time, then key.
type orderKey struct {
	priority int32
	enqueued int64 // UnixNano, clamped
	key      string
}

func (a orderKey) less(b orderKey) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.enqueued != b.enqueued {
		return a.enqueued < b.enqueued
	}
	return a.key < b.key
}

var (
	minNanoTime = time.Unix(0, math.MinInt64)
	maxNanoTime = time.Unix(0, math.MaxInt64)
)

// nanos is t as UnixNano, clamped so that the zero time sorts first instead
// of overflowing.
func nanos(t time.Time) int64 {
	switch {
	case t.Before(minNanoTime):
		return math.MinInt64
	case t.After(maxNanoTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// unit is a waiting unit in the queue's tree, with what its subtree asks
// for: if minReq does not fit, no request in the subtree does; maxReq is
// the element-wise maximum.
//
// Of the Item it was given it keeps the order key and the request: the key,
// priority and enqueue time are the order key's (48 bytes a unit fewer, in
// the live core and again in each forecast's replay).
type unit struct {
	k              orderKey
	request        []int64
	minReq, maxReq []int64
	// age is the index in the low band's age heap, -1 when not in it.
	age int
}

// tnode is a unit in the queue's tree. The tree's heap priority hashes the
// unit's key, so its shape, and everything derived from it, is the same for
// the same input.
type tnode = ordered.Node[unit]

func newUnitTree() ordered.Tree[unit] { return ordered.New(lessUnit, fixUnit) }

func lessUnit(a, b *unit) bool { return a.k.less(b.k) }

func newTNode(it Item) *tnode {
	return ordered.NewNode(unit{
		k:       orderKey{priority: it.Priority, enqueued: nanos(it.EnqueueTime), key: it.Key},
		request: it.Request,
		age:     -1,
	}, ordered.Hash(it.Key))
}

// item is the Item the unit was given, its enqueue time read back from the
// order key: the same instant, in the local zone (and clamped as nanos
// clamps it, 1678 to 2262).
func (u *unit) item() Item {
	return Item{Key: u.k.key, Priority: u.k.priority, EnqueueTime: time.Unix(0, u.k.enqueued), Request: u.request}
}

// fixUnit recomputes n's minReq and maxReq from its request and children's.
func fixUnit(n *tnode) {
	u, left, right := &n.Item, n.Left(), n.Right()
	l := len(u.request)
	if left != nil {
		l = max(l, len(left.Item.minReq))
	}
	if right != nil {
		l = max(l, len(right.Item.minReq))
	}
	if cap(u.minReq) < l {
		u.minReq, u.maxReq = make([]int64, l), make([]int64, l)
	}
	u.minReq, u.maxReq = u.minReq[:l], u.maxReq[:l]
	for i := range u.minReq {
		lo := at(u.request, i)
		hi := lo
		if left != nil {
			lo, hi = min(lo, at(left.Item.minReq, i)), max(hi, at(left.Item.maxReq, i))
		}
		if right != nil {
			lo, hi = min(lo, at(right.Item.minReq, i)), max(hi, at(right.Item.maxReq, i))
		}
		u.minReq[i], u.maxReq[i] = lo, hi
	}
}

func at(v []int64, i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// countAtLeast counts units with priority >= p: a prefix of the order.
func countAtLeast(t *tnode, p int32) int {
	c := 0
	for t != nil {
		if t.Item.k.priority >= p {
			c += t.Left().Size() + 1
			t = t.Right()
		} else {
			t = t.Left()
		}
	}
	return c
}

// window bounds a search: keys in (after, upTo], ranks below limit.
type window struct {
	after, upTo *orderKey
	limit       int
}

// firstFit is the first unit in order within w whose request fits free (nil
// free: any unit). Subtrees whose minimum request does not fit, or that lie
// outside w, are skipped whole.
func firstFit(t *tnode, base int, w *window, free []int64) *tnode {
	if t == nil || base >= w.limit || !fits(t.Item.minReq, free) {
		return nil
	}
	ls := t.Left().Size()
	aboveAfter := w.after == nil || w.after.less(t.Item.k)
	withinUpTo := w.upTo == nil || !w.upTo.less(t.Item.k)
	if aboveAfter {
		if n := firstFit(t.Left(), base, w, free); n != nil {
			return n
		}
		if withinUpTo && base+ls < w.limit && fits(t.Item.request, free) {
			return t
		}
	}
	if w.upTo == nil || t.Item.k.less(*w.upTo) {
		return firstFit(t.Right(), base+ls+1, w, free)
	}
	return nil
}

// Fits reports whether request fits in free, element by element; a resource
// the request does not ask for (zero) is not checked, and a nil free fits
// anything. It matches quota.Fits.
func Fits(request, free []int64) bool { return fits(request, free) }

func fits(request, free []int64) bool {
	if free == nil {
		return true
	}
	for i, r := range request {
		if r > 0 && (i >= len(free) || r > free[i]) {
			return false
		}
	}
	return true
}
