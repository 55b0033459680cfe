package admission

import "github.com/koord-queue/koord-queue/pkg/ordered"

// keySet is a set of unit keys (namespace/name) in order, that finds the
// key at a place in O(log n). The zero keySet is empty and ready to use.
type keySet struct {
	tree ordered.Tree[string]
	made bool
}

func lessKey(a, b *string) bool { return *a < *b }

// Len is the number of keys.
func (s *keySet) Len() int { return s.tree.Len() }

// Insert adds key; adding a key already there changes nothing.
func (s *keySet) Insert(key string) {
	if !s.made {
		s.tree, s.made = ordered.New(lessKey, nil), true
	}
	if s.tree.Find(&key) != nil {
		return
	}
	s.tree.Insert(ordered.NewNode(key, ordered.Hash(key)))
}

// Remove takes key out, if it is there.
func (s *keySet) Remove(key string) {
	if s.made {
		s.tree.Remove(&key)
	}
}

// Each calls fn on the keys in order from 0-based place i on, until fn
// returns false; the keys before i are skipped whole, not visited.
func (s *keySet) Each(i int, fn func(key string) bool) {
	s.tree.EachFrom(i, func(n *ordered.Node[string]) bool { return fn(n.Item) })
}
