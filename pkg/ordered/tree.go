// Package ordered is an order-statistics tree: items kept in order, with
// insert, remove, successor, the place of an item (its rank) and the item at
// a place, each in O(log n), and a walk from a place in O(log n + walked).
//
// It is a treap whose nodes count their subtree. A node's heap priority is
// given when the node is made, by convention Hash of the item's unique key,
// so the same items build the same tree, and everything derived from its
// shape is the same for the same input.
//
// A user may keep more in each node about its subtree (an augmentation) by
// giving New a fix function, called on a node whenever its children change,
// after theirs; Node's Left and Right let it, and searches of its own, read
// the subtrees.
package ordered

// Node is an item in a Tree.
type Node[T any] struct {
	Item        T
	prio        uint64
	left, right *Node[T]
	size        int
}

// NewNode is a node for item with heap priority prio (see Hash).
func NewNode[T any](item T, prio uint64) *Node[T] {
	return &Node[T]{Item: item, prio: prio, size: 1}
}

// Left is n's left subtree, the items before n's; nil if none.
func (n *Node[T]) Left() *Node[T] { return n.left }

// Right is n's right subtree, the items after n's; nil if none.
func (n *Node[T]) Right() *Node[T] { return n.right }

// Size is the number of items in the subtree at n; 0 for nil.
func (n *Node[T]) Size() int {
	if n == nil {
		return 0
	}
	return n.size
}

// Hash is the FNV-1a hash of key, a node's heap priority by convention.
func Hash(key string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	return h
}

// Tree is the items in the order of less, which must be a strict total
// order over the items in the tree: no two compare equal. The zero Tree is
// not usable; make one with New.
type Tree[T any] struct {
	root *Node[T]
	less func(a, b *T) bool
	fix  func(n *Node[T])
}

// New is an empty tree ordered by less. fix, if not nil, is called on a node
// whenever its children change, after it has been called on them.
func New[T any](less func(a, b *T) bool, fix func(n *Node[T])) Tree[T] {
	return Tree[T]{less: less, fix: fix}
}

// Root is the tree's root, nil when empty.
func (t *Tree[T]) Root() *Node[T] { return t.root }

// Len is the number of items.
func (t *Tree[T]) Len() int { return t.root.Size() }

// Clear empties the tree.
func (t *Tree[T]) Clear() { t.root = nil }

func (t *Tree[T]) update(n *Node[T]) {
	n.size = 1 + n.left.Size() + n.right.Size()
	if t.fix != nil {
		t.fix(n)
	}
}

// Insert adds n, whose item must not compare equal to one in the tree, and
// which must not be in a tree.
func (t *Tree[T]) Insert(n *Node[T]) {
	n.left, n.right = nil, nil
	t.update(n)
	l, r := t.split(t.root, &n.Item)
	t.root = t.merge(t.merge(l, n), r)
}

// Remove takes out the node whose item compares equal to item, and returns
// it, or nil if there is none.
func (t *Tree[T]) Remove(item *T) *Node[T] {
	var gone *Node[T]
	t.root = t.remove(t.root, item, &gone)
	return gone
}

func (t *Tree[T]) remove(n *Node[T], item *T, gone **Node[T]) *Node[T] {
	if n == nil {
		return nil
	}
	switch {
	case t.less(item, &n.Item):
		n.left = t.remove(n.left, item, gone)
	case t.less(&n.Item, item):
		n.right = t.remove(n.right, item, gone)
	default:
		m := t.merge(n.left, n.right)
		n.left, n.right = nil, nil
		*gone = n
		return m
	}
	t.update(n)
	return n
}

// split cuts n into the items below item and the others.
func (t *Tree[T]) split(n *Node[T], item *T) (lo, hi *Node[T]) {
	if n == nil {
		return nil, nil
	}
	if t.less(&n.Item, item) {
		n.right, hi = t.split(n.right, item)
		t.update(n)
		return n, hi
	}
	lo, n.left = t.split(n.left, item)
	t.update(n)
	return lo, n
}

// merge joins a and b, every item of a below every item of b.
func (t *Tree[T]) merge(a, b *Node[T]) *Node[T] {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = t.merge(a.right, b)
		t.update(a)
		return a
	default:
		b.left = t.merge(a, b.left)
		t.update(b)
		return b
	}
}

// Find is the node whose item compares equal to item, nil if none.
func (t *Tree[T]) Find(item *T) *Node[T] {
	for n := t.root; n != nil; {
		switch {
		case t.less(item, &n.Item):
			n = n.left
		case t.less(&n.Item, item):
			n = n.right
		default:
			return n
		}
	}
	return nil
}

// First is the node of the first item, nil when empty.
func (t *Tree[T]) First() *Node[T] {
	n := t.root
	if n == nil {
		return nil
	}
	for n.left != nil {
		n = n.left
	}
	return n
}

// After is the node of the first item above item, the first of all if item
// is nil; nil if there is none.
func (t *Tree[T]) After(item *T) *Node[T] {
	var best *Node[T]
	for n := t.root; n != nil; {
		if item == nil || t.less(item, &n.Item) {
			best, n = n, n.left
		} else {
			n = n.right
		}
	}
	return best
}

// Nth is the node at 0-based place i in order, nil outside the tree.
func (t *Tree[T]) Nth(i int) *Node[T] {
	for n := t.root; n != nil; {
		switch l := n.left.Size(); {
		case i < l:
			n = n.left
		case i == l:
			return n
		default:
			i -= l + 1
			n = n.right
		}
	}
	return nil
}

// Rank is the number of items below item.
func (t *Tree[T]) Rank(item *T) int {
	r := 0
	for n := t.root; n != nil; {
		switch {
		case t.less(&n.Item, item):
			r += n.left.Size() + 1
			n = n.right
		case t.less(item, &n.Item):
			n = n.left
		default:
			return r + n.left.Size()
		}
	}
	return r
}

// Each calls fn on the nodes in order, until fn returns false.
func (t *Tree[T]) Each(fn func(*Node[T]) bool) { each(t.root, fn) }

func each[T any](n *Node[T], fn func(*Node[T]) bool) bool {
	for n != nil {
		if !each(n.left, fn) || !fn(n) {
			return false
		}
		n = n.right
	}
	return true
}

// EachFrom calls fn on the nodes in order from 0-based place i on, until fn
// returns false; the nodes before i are skipped whole, not visited.
func (t *Tree[T]) EachFrom(i int, fn func(*Node[T]) bool) { eachFrom(t.root, max(i, 0), fn) }

func eachFrom[T any](n *Node[T], i int, fn func(*Node[T]) bool) bool {
	for n != nil {
		l := n.left.Size()
		if i > l {
			i -= l + 1
			n = n.right
			continue
		}
		if i < l && !eachFrom(n.left, i, fn) || !fn(n) {
			return false
		}
		i, n = 0, n.right
	}
	return true
}
