package policy

import (
	"hash/fnv"
	"math"
	"time"
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

// tnode is one unit in the treap. The heap priority comes from a hash of the
// unit's key, so the tree's shape, and everything derived from it, is the
// same for the same input.
type tnode struct {
	k           orderKey
	item        Item
	prio        uint64
	left, right *tnode
	size        int
	// minReq is the element-wise minimum request in this subtree; if it
	// does not fit, nothing in the subtree does. maxReq is the maximum.
	minReq, maxReq []int64
	// age is the index in the low band's age heap, -1 when not in it.
	age int
}

func newTNode(it Item) *tnode {
	h := fnv.New64a()
	_, _ = h.Write([]byte(it.Key))
	n := &tnode{
		k:    orderKey{priority: it.Priority, enqueued: nanos(it.EnqueueTime), key: it.Key},
		item: it,
		prio: h.Sum64(),
		age:  -1,
	}
	n.update()
	return n
}

func size(n *tnode) int {
	if n == nil {
		return 0
	}
	return n.size
}

func (n *tnode) update() {
	n.size = 1 + size(n.left) + size(n.right)
	l := len(n.item.Request)
	if n.left != nil {
		l = max(l, len(n.left.minReq))
	}
	if n.right != nil {
		l = max(l, len(n.right.minReq))
	}
	if cap(n.minReq) < l {
		n.minReq, n.maxReq = make([]int64, l), make([]int64, l)
	}
	n.minReq, n.maxReq = n.minReq[:l], n.maxReq[:l]
	for i := range n.minReq {
		lo := at(n.item.Request, i)
		hi := lo
		if n.left != nil {
			lo, hi = min(lo, at(n.left.minReq, i)), max(hi, at(n.left.maxReq, i))
		}
		if n.right != nil {
			lo, hi = min(lo, at(n.right.minReq, i)), max(hi, at(n.right.maxReq, i))
		}
		n.minReq[i], n.maxReq[i] = lo, hi
	}
}

func at(v []int64, i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// split cuts t into keys < k and keys >= k.
func split(t *tnode, k orderKey) (*tnode, *tnode) {
	if t == nil {
		return nil, nil
	}
	if t.k.less(k) {
		l, r := split(t.right, k)
		t.right = l
		t.update()
		return t, r
	}
	l, r := split(t.left, k)
	t.left = r
	t.update()
	return l, t
}

// merge joins a and b, every key of a being below every key of b.
func merge(a, b *tnode) *tnode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = merge(a.right, b)
		a.update()
		return a
	default:
		b.left = merge(a, b.left)
		b.update()
		return b
	}
}

func insert(t, n *tnode) *tnode {
	l, r := split(t, n.k)
	return merge(merge(l, n), r)
}

func remove(t *tnode, k orderKey) *tnode {
	if t == nil {
		return nil
	}
	switch {
	case k.less(t.k):
		t.left = remove(t.left, k)
	case t.k.less(k):
		t.right = remove(t.right, k)
	default:
		m := merge(t.left, t.right)
		t.left, t.right = nil, nil
		return m
	}
	t.update()
	return t
}

func first(t *tnode) *tnode {
	if t == nil {
		return nil
	}
	for t.left != nil {
		t = t.left
	}
	return t
}

// rank is the number of keys below k.
// nth is the node at 0-based place i in order, nil past the end. O(log n).
func nth(t *tnode, i int) *tnode {
	for t != nil {
		switch l := size(t.left); {
		case i < l:
			t = t.left
		case i == l:
			return t
		default:
			i -= l + 1
			t = t.right
		}
	}
	return nil
}

func rank(t *tnode, k orderKey) int {
	r := 0
	for t != nil {
		switch {
		case t.k.less(k):
			r += size(t.left) + 1
			t = t.right
		case k.less(t.k):
			t = t.left
		default:
			return r + size(t.left)
		}
	}
	return r
}

// countAtLeast counts units with priority >= p: a prefix of the order.
func countAtLeast(t *tnode, p int32) int {
	c := 0
	for t != nil {
		if t.k.priority >= p {
			c += size(t.left) + 1
			t = t.right
		} else {
			t = t.left
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
	if t == nil || base >= w.limit || !fits(t.minReq, free) {
		return nil
	}
	ls := size(t.left)
	aboveAfter := w.after == nil || w.after.less(t.k)
	withinUpTo := w.upTo == nil || !w.upTo.less(t.k)
	if aboveAfter {
		if n := firstFit(t.left, base, w, free); n != nil {
			return n
		}
		if withinUpTo && base+ls < w.limit && fits(t.item.Request, free) {
			return t
		}
	}
	if w.upTo == nil || t.k.less(*w.upTo) {
		return firstFit(t.right, base+ls+1, w, free)
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

func walk(t *tnode, fn func(*tnode) bool) bool {
	if t == nil {
		return true
	}
	return walk(t.left, fn) && fn(t) && walk(t.right, fn)
}

// walkFrom is walk from 0-based place i on, skipping whole the subtrees
// before it.
func walkFrom(t *tnode, i int, fn func(*tnode) bool) bool {
	for t != nil {
		l := size(t.left)
		if i > l {
			i -= l + 1
			t = t.right
			continue
		}
		if i < l && !walkFrom(t.left, i, fn) || !fn(t) {
			return false
		}
		return walk(t.right, fn)
	}
	return true
}
