package compare

import (
	"fmt"
	"strings"
	"time"

	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

// Shape is what a Kueue config and a koord-queue scenario must agree on to
// be the same test: the quota tree (a cohort is a parent quota whose
// capacity is its children's nominal quotas; a ClusterQueue a leaf quota
// guaranteed its nominal quota, which may borrow up to its borrowing
// limit), in-queue preemption, and the workloads each leaf receives.
type Shape struct {
	Parents, ChildrenPerParent int
	// ParentMax is a parent's capacity, ChildMin and ChildMax a leaf's
	// guarantee and limit (cores).
	ParentMax, ChildMin, ChildMax int64
	// Preemption: a workload may preempt lower-priority ones of its queue.
	Preemption bool
	Sets       []ShapeSet
}

// ShapeSet is a set of workloads each leaf receives.
type ShapeSet struct {
	Class    string
	CPU      int64
	Runtime  time.Duration
	Priority int32
	Count    int
	Interval time.Duration
}

// Shape is the config's shape; it must have one kind of cohort of one kind
// of ClusterQueue, each set of one kind of workload (as Kueue's baseline
// and large-scale configs do).
func (c *KueueGeneratorConfig) Shape() (Shape, error) {
	if len(c.Cohorts) != 1 || len(c.Cohorts[0].QueuesSets) != 1 {
		return Shape{}, fmt.Errorf("want one cohort set of one queue set, got %d cohort sets", len(c.Cohorts))
	}
	co, qs := c.Cohorts[0], c.Cohorts[0].QueuesSets[0]
	s := Shape{
		Parents: co.Count, ChildrenPerParent: qs.Count,
		ParentMax: int64(qs.Count) * qs.NominalQuota, ChildMin: qs.NominalQuota, ChildMax: qs.NominalQuota + qs.BorrowingLimit,
		Preemption: qs.WithinClusterQueue == "LowerPriority",
	}
	for _, ws := range qs.WorkloadsSets {
		if len(ws.Workloads) != 1 {
			return Shape{}, fmt.Errorf("want one workload per set, got %d", len(ws.Workloads))
		}
		w := ws.Workloads[0]
		s.Sets = append(s.Sets, ShapeSet{
			Class: w.ClassName, CPU: w.Request, Runtime: time.Duration(w.RuntimeMs) * time.Millisecond, Priority: w.Priority,
			Count: ws.Count, Interval: time.Duration(ws.CreationIntervalMs) * time.Millisecond,
		})
	}
	return s, nil
}

// ScenarioShape is a koord-queue scenario's shape; its parents must all
// have the same children, and its leaves the same quotas.
func ScenarioShape(sc *scenario.Scenario) (Shape, error) {
	var s Shape
	children := map[string]int{}
	for _, q := range sc.Quotas {
		if q.Parent == "" {
			s.Parents++
			if s.ParentMax != 0 && s.ParentMax != q.Max {
				return Shape{}, fmt.Errorf("parents differ: max %d and %d", s.ParentMax, q.Max)
			}
			s.ParentMax = q.Max
			continue
		}
		children[q.Parent]++
		if s.ChildMax != 0 && (s.ChildMin != q.Min || s.ChildMax != q.Max || s.Preemption != q.Preemption) {
			return Shape{}, fmt.Errorf("leaves differ: %s", q.Name)
		}
		s.ChildMin, s.ChildMax, s.Preemption = q.Min, q.Max, q.Preemption
	}
	for parent, n := range children {
		if s.ChildrenPerParent != 0 && s.ChildrenPerParent != n {
			return Shape{}, fmt.Errorf("parent %s has %d children, another %d", parent, n, s.ChildrenPerParent)
		}
		s.ChildrenPerParent = n
	}
	for _, set := range sc.Sets {
		s.Sets = append(s.Sets, ShapeSet{
			Class: set.Class.Name, CPU: set.Class.CPU, Runtime: set.Class.Runtime, Priority: set.Class.Priority,
			Count: set.Count, Interval: set.Interval,
		})
	}
	return s, nil
}

// KueueConfig is the generator.yaml of Kueue's runner with this shape: one
// cohort set of Parents cohorts of ChildrenPerParent ClusterQueues, each
// receiving the sets. It is how perfcompare -short gives Kueue the shape of
// koord-queue's short variant.
func (s Shape) KueueConfig() ([]byte, error) {
	if s.ChildrenPerParent == 0 || s.ParentMax != int64(s.ChildrenPerParent)*s.ChildMin {
		return nil, fmt.Errorf("a parent's capacity (%d) is not its %d children's guarantees (%d each): Kueue's cohorts have no quota of their own", s.ParentMax, s.ChildrenPerParent, s.ChildMin)
	}
	within := "Never"
	if s.Preemption {
		within = "LowerPriority"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cohorts:\n  - className: cohort\n    count: %d\n    queuesSets:\n    - className: cq\n      count: %d\n      nominalQuota: %d\n      borrowingLimit: %d\n      reclaimWithinCohort: Any\n      withinClusterQueue: %s\n      workloadsSets:\n",
		s.Parents, s.ChildrenPerParent, s.ChildMin, s.ChildMax-s.ChildMin, within)
	for _, set := range s.Sets {
		fmt.Fprintf(&b, "      - count: %d\n        creationIntervalMs: %d\n        workloads:\n        - className: %s\n          runtimeMs: %d\n          priority: %d\n          request: %d\n",
			set.Count, set.Interval.Milliseconds(), set.Class, set.Runtime.Milliseconds(), set.Priority, set.CPU)
	}
	return []byte(b.String()), nil
}
