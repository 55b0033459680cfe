package admission

import (
	"container/heap"
	"slices"
	"sync"
	"time"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// Units admitted with spec.maximumExecutionTimeSeconds are deactivated once
// they pass their queueunit.ExecutionDeadline. The deadlines wait in a heap,
// soonest first: a cycle looks only at those due, and the earliest one left
// is a NextWakeup of the loop, so nothing polls. A unit's record holds its
// current deadline; an entry that no longer matches it (re-admitted, evicted,
// deleted) is stale and dropped when it comes up.

// executionDeadlines are the admitted units' execution deadlines.
type executionDeadlines struct {
	mu    *sync.Mutex            // the Cache's
	units map[string]*unitRecord // the Cache's records
	wake  wakeup                 // the Cache's: a deadline kept running may come sooner
	// deadlineOf is when each unit that has a maximum execution time
	// passes it.
	deadlineOf map[*unitRecord]time.Time
	// deadlines are the admitted units' execution deadlines, soonest first.
	deadlines deadlineHeap
}

type deadlineEntry struct {
	r  *unitRecord
	at time.Time
}

type deadlineHeap []deadlineEntry

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadlineEntry)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = deadlineEntry{}
	*h = old[:len(old)-1]
	return e
}

// setDeadline records r's execution deadline as its latest object says,
// with c.mu held. A unit whose eviction is decided has none.
func (c *executionDeadlines) setDeadline(r *unitRecord) {
	at, ok := queueunit.ExecutionDeadline(r.unit)
	if !ok || r.eviction != nil {
		delete(c.deadlineOf, r)
		return
	}
	if was, ok := c.deadlineOf[r]; ok && at.Equal(was) {
		return
	}
	c.deadlineOf[r] = at
	heap.Push(&c.deadlines, deadlineEntry{r: r, at: at})
	if len(c.deadlines) > 2*len(c.units)+16 {
		// Stale entries are dropped only when they come up, and a follower
		// never takes any: compact, so the heap keeps no deleted unit.
		c.deadlines = slices.DeleteFunc(c.deadlines, func(e deadlineEntry) bool { return !c.current(e) })
		heap.Init(&c.deadlines)
	}
}

// current reports whether e is its unit's deadline, with c.mu held.
func (c *executionDeadlines) current(e deadlineEntry) bool {
	at, ok := c.deadlineOf[e.r]
	return ok && at.Equal(e.at) && c.units[e.r.key] == e.r
}

// nextDeadline is the earliest execution deadline, zero if none, with c.mu
// held; stale entries on top are dropped.
func (c *executionDeadlines) nextDeadline() time.Time {
	for len(c.deadlines) > 0 {
		if top := c.deadlines[0]; c.current(top) {
			return top.at
		}
		heap.Pop(&c.deadlines)
	}
	return time.Time{}
}

// expireExecutions records, for each unit past its execution deadline at
// now, an eviction that deactivates it (spec.active false, Evicted
// MaximumExecutionTimeExceeded), and returns their keys for the writer.
// The unit is not queued again until someone activates it.
func (c *executionDeadlines) expireExecutions(now time.Time) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for next := c.nextDeadline(); !next.IsZero() && !now.Before(next); next = c.nextDeadline() {
		r := heap.Pop(&c.deadlines).(deadlineEntry).r
		delete(c.deadlineOf, r)
		if r.eviction != nil {
			continue // already being evicted
		}
		r.eviction = &eviction{reason: schedulingv1alpha1.EvictedByMaximumExecutionTimeExceeded,
			message: queueunit.MaximumExecutionTimeMessage(r.unit), deactivate: true}
		keys = append(keys, r.key)
	}
	return keys
}

// keepRunning drops eviction e of a unit that, read afresh at now, turned
// out not to be past its deadline (its limit raised or removed meanwhile).
// Its deadline is counted again from the Cache's copy if that shows the
// change already; otherwise from the copy the informer brings next.
func (c *executionDeadlines) keepRunning(key string, e *eviction, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.units[key]; ok && r.eviction == e {
		r.eviction = nil
		if at, ok := queueunit.ExecutionDeadline(r.unit); ok && now.Before(at) {
			c.setDeadline(r)
		}
	}
	c.wake.notify()
}
