package admission

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/scheduler"
	"github.com/koord-queue/koord-queue/pkg/watched"
)

// clusterCapacity is the Cache's part that keeps the cluster's capacity:
// the allocatable of its nodes (watched.NodeCapacity), summed into the
// root's capacity in the core. Its methods work with c.mu held, but
// nodesListed.
type clusterCapacity struct {
	mu        *sync.Mutex
	core      *scheduler.Scheduler
	decisions *decisions
	wake      wakeup
	// nodes are the nodes' capacity (watched.NodeCapacity; nil while
	// unusable), by name, and their sum.
	nodes capacitySum
}

// changed reports whether a node's capacity is other than the one kept,
// or the node is new.
func (c *clusterCapacity) changed(name string, capacity corev1.ResourceList) bool {
	before, known := c.nodes.node(name)
	return !known || watched.CapacityChanged(before, capacity)
}

// setNode keeps a node's capacity and sets the cluster's. It is kept even
// when nil: the first node seen, usable or not, sets the cluster's
// capacity, so nodes none of which is Ready give nothing.
func (c *clusterCapacity) setNode(name string, capacity corev1.ResourceList) {
	c.nodes.set(name, capacity)
	c.set()
}

// deleteNode stops counting a node.
func (c *clusterCapacity) deleteNode(name string) {
	c.nodes.remove(name)
	c.set()
}

// nodesListed: the Node informer has listed every node (the Loop calls it
// once every informer has). From then on the nodes kept are the whole
// cluster, and none is a cluster of capacity zero: a restart in a cluster
// without nodes decides as the replica that saw its last node go, and
// admits nothing the cluster cannot hold. Until then the root is not
// limited by nodes (the first node seen also sets the capacity), so a
// Cache fed by hand without nodes admits by its quotas alone.
func (c *clusterCapacity) nodesListed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set()
}

// set gives the core the sum of the nodes' capacity.
func (c *clusterCapacity) set() {
	c.core.SetClusterCapacity(c.nodes.sum())
	c.decisions.forgetIfShrunk()
	c.wake.notify()
}
