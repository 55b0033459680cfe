package admission

import "hash/fnv"

// keySet is a set of unit keys (namespace/name) in order, that finds the
// key at a place in O(log n): a treap whose nodes count their subtree. A
// node's heap priority is a hash of its key, so the shape is the same for
// the same keys (as policy's treap).
type keySet struct {
	root *keyNode
}

type keyNode struct {
	key         string
	prio        uint64
	size        int
	left, right *keyNode
}

func keySize(n *keyNode) int {
	if n == nil {
		return 0
	}
	return n.size
}

func (n *keyNode) update() { n.size = 1 + keySize(n.left) + keySize(n.right) }

// Len is the number of keys.
func (s *keySet) Len() int { return keySize(s.root) }

// Insert adds key; adding a key already there changes nothing.
func (s *keySet) Insert(key string) {
	if s.has(key) {
		return
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	lo, hi := splitKeys(s.root, key)
	s.root = mergeKeys(mergeKeys(lo, &keyNode{key: key, prio: h.Sum64(), size: 1}), hi)
}

// Remove takes key out, if it is there.
func (s *keySet) Remove(key string) { s.root = removeKey(s.root, key) }

func (s *keySet) has(key string) bool {
	for n := s.root; n != nil; {
		switch {
		case key < n.key:
			n = n.left
		case key > n.key:
			n = n.right
		default:
			return true
		}
	}
	return false
}

// Each calls fn on the keys in order from 0-based place i on, until fn
// returns false; the keys before i are skipped whole, not visited.
func (s *keySet) Each(i int, fn func(key string) bool) { eachKey(s.root, max(i, 0), fn) }

func eachKey(n *keyNode, i int, fn func(string) bool) bool {
	for n != nil {
		l := keySize(n.left)
		if i > l {
			i -= l + 1
			n = n.right
			continue
		}
		if i < l && !eachKey(n.left, i, fn) || !fn(n.key) {
			return false
		}
		i, n = 0, n.right
	}
	return true
}

// splitKeys cuts n into the keys below key and the others.
func splitKeys(n *keyNode, key string) (lo, hi *keyNode) {
	if n == nil {
		return nil, nil
	}
	if n.key < key {
		n.right, hi = splitKeys(n.right, key)
		n.update()
		return n, hi
	}
	lo, n.left = splitKeys(n.left, key)
	n.update()
	return lo, n
}

// mergeKeys joins a and b, every key of a below every key of b.
func mergeKeys(a, b *keyNode) *keyNode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = mergeKeys(a.right, b)
		a.update()
		return a
	default:
		b.left = mergeKeys(a, b.left)
		b.update()
		return b
	}
}

func removeKey(n *keyNode, key string) *keyNode {
	if n == nil {
		return nil
	}
	switch {
	case key < n.key:
		n.left = removeKey(n.left, key)
	case key > n.key:
		n.right = removeKey(n.right, key)
	default:
		return mergeKeys(n.left, n.right)
	}
	n.update()
	return n
}
