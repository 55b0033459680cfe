package admission

import (
	corev1 "k8s.io/api/core/v1"
)

// capacitySum is what the nodes offer, by node and summed. The sum is
// kept as nodes change, so that a node's change costs its own resources
// rather than a walk over every node: a start with thousands of nodes, fed
// one at a time, would otherwise cost their square.
type capacitySum struct {
	// nodes' capacity (watched.NodeCapacity; nil while unusable), by name.
	nodes map[string]corev1.ResourceList
	total corev1.ResourceList
	// naming counts, by resource, the nodes whose capacity names it: a
	// resource leaves the sum with the last of them, so that the sum names
	// what a sum over the nodes would name.
	naming map[corev1.ResourceName]int
}

func newCapacitySum() capacitySum {
	return capacitySum{
		nodes:  map[string]corev1.ResourceList{},
		total:  corev1.ResourceList{},
		naming: map[corev1.ResourceName]int{},
	}
}

// node is the named node's capacity, and whether the node is known.
func (k *capacitySum) node(name string) (corev1.ResourceList, bool) {
	capacity, known := k.nodes[name]
	return capacity, known
}

// set records the named node's capacity (nil: a node that offers nothing).
func (k *capacitySum) set(name string, capacity corev1.ResourceList) {
	k.take(k.nodes[name])
	k.nodes[name] = capacity
	for resource, q := range capacity {
		sum := k.total[resource]
		sum.Add(q)
		k.total[resource] = sum
		k.naming[resource]++
	}
}

// remove forgets the named node.
func (k *capacitySum) remove(name string) {
	k.take(k.nodes[name])
	delete(k.nodes, name)
}

// take subtracts a node's capacity from the sum.
func (k *capacitySum) take(capacity corev1.ResourceList) {
	for resource, q := range capacity {
		if k.naming[resource]--; k.naming[resource] == 0 {
			delete(k.naming, resource)
			delete(k.total, resource)
			continue
		}
		sum := k.total[resource]
		sum.Sub(q)
		k.total[resource] = sum
	}
}

// sum is what the nodes offer together: a copy, the caller's to keep.
func (k *capacitySum) sum() corev1.ResourceList { return k.total.DeepCopy() }
