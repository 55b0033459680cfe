// Package policy orders the waiting units of one queue and decides, for the
// Priority, Block and Intelligent queue policies, which unit the queue offers
// for admission next.
//
// Order inside a queue is always the same: priority descending, then first
// enqueue time, then key (namespace/name). Because the order does not depend
// on the policy, a policy change takes effect in place (Queue.SetConfig)
// without losing anyone's place.
//
// Units are kept in pkg/ordered's order-statistics treap (a balanced search
// tree with subtree sizes), augmented with the element-wise minimum and
// maximum request of each subtree. "The first unit in order, among the first
// max-depth, that fits this headroom" is then a descent that skips whole
// subtrees that cannot fit: O(log n) when units of a queue ask for similar
// things, which they usually do, and never worse than a scan. Nothing is
// re-sorted per cycle.
//
// The package knows nothing of quotas: requests and headroom are vectors of
// amounts in an order the caller chooses (the quota engine's).
package policy
