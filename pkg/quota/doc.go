// Package quota is koord-queue's model of Koordinator's ElasticQuota tree: who
// may use how much, who is borrowing from whom, and who gives way on reclaim.
//
// An Engine holds one node per ElasticQuota (parent by the
// quota.scheduling.koordinator.sh/parent label, the root
// koordinator-root-quota when the label is empty) and the usage of every
// admitted unit, counted against its quota and every ancestor. It answers:
//
//   - Headroom: how much more a quota may admit now, per resource, honouring
//     every max on the ancestor chain, the cluster's capacity at the root and
//     the unused min of quotas that do not lend (allow-lent-resource: "false");
//   - Explain: why a request does not fit, in words for the unit's status;
//   - Runtime and DominantShare: each quota's fair share of its parent
//     (min plus a weighted part of the idle remainder, capped by max and by
//     demand), used to order queues when capacity is contested;
//   - ReclaimVictims and LowerPriorityVictims: whom to evict, fewest first.
//
// Trees: Koordinator's multiple quota trees (node pools) make the engine a
// forest. A quota labelled is-root "true" with a tree-id, hanging from
// koordinator-root-quota, roots a quota tree: its descendants carry the same
// tree-id, and its capacity is its total-resource annotation
// (Spec.TreeTotal), as the cluster's is the classic root's. The classic
// root's capacity is the cluster's less the quota trees' totals. Nothing
// crosses a tree: usage, headroom, fair shares and reclaim stay inside it.
//
// Amounts are int64: cpu in milli-cores, every other resource in whole units
// (bytes for memory), as the kube-scheduler counts them. Milli-bytes would
// overflow int64 on a large cluster. Vectors index resources in the order the
// engine first saw their names in a quota or the cluster's capacity; a
// request's other names are not limited and not counted (Engine.Vector).
//
// The engine is pure and single-threaded: no clocks, no goroutines, no
// locks. Its owner (the scheduler package) serialises calls.
package quota
