package admission

import (
	"sync"
	"time"

	"k8s.io/utils/buffer"

	"github.com/koord-queue/koord-queue/pkg/metrics"
)

// The writes that only inform (why a unit waits, spec.queue) wait for a
// quiet moment, and while admissions flow that can be the whole of a
// backlog's life: every waiting unit owes one. So what a unit is owed is
// kept as its record's level (unitRecord.owes, in the record's padding), and
// the order they are made in as a queue of keys, one per unit owed
// anything: about 30 bytes a unit, where a workqueue of ops kept about 150
// (its queue, its dirty set and its metrics' map of add times).

// owed is the set of writes a unit is owed.
type owed uint8

const (
	owesMessage   owed = 1 << iota // why it waits (writeMessage)
	owesQueueName                  // the queue that admitted it, in spec.queue (writeQueueName)
)

// owedKey is a unit in the queue of units owed writes, since it was first
// owed one (Unix nanoseconds on the Writer's clock).
type owedKey struct {
	key   string
	since int64
}

// owedQueue is the queue of units owed writes, oldest first; a key whose
// record no longer owes anything (written, deleted) is skipped as it comes.
type owedQueue struct {
	keys buffer.TypedRingGrowing[owedKey]
	// units is how many records owe a write.
	units int
	// wake has room for one signal: a key was queued.
	wake wakeup
}

// owedRingKept is the room an empty queue keeps; a burst's room beyond it
// is given back.
const owedRingKept = 1024

// owedWrites keeps the units owed a write that only informs. It reads the
// units' records, and the kinds of writes each owes, under the Cache's lock.
type owedWrites struct {
	mu    *sync.Mutex            // the Cache's
	units map[string]*unitRecord // the Cache's records
	// owed are the units owed a write that only informs, in order.
	owed owedQueue
}

// owe records that the units of keys are owed the writes of kinds, from at:
// a unit owed one already keeps its place. A unit the Cache does not have
// is owed nothing.
func (c *owedWrites) owe(kinds owed, at time.Time, keys ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	queued := false
	for _, key := range keys {
		r, ok := c.units[key]
		if !ok {
			continue
		}
		if r.owes == 0 {
			c.owed.keys.WriteOne(owedKey{key: r.key, since: at.UnixNano()})
			c.owed.units++
			queued = true
		}
		r.owes |= kinds
	}
	if queued {
		metrics.DeferredWrites.Set(float64(c.owed.units))
		c.owed.wake.notify()
	}
}

// takeOwed takes the unit owed writes the longest and what it is owed,
// since when; ok is false when none is.
func (c *owedWrites) takeOwed() (key string, kinds owed, since time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		if c.owed.keys.Len() == 0 && c.owed.keys.Cap() > owedRingKept {
			c.owed.keys = buffer.TypedRingGrowing[owedKey]{}
		}
	}()
	for {
		e, queued := c.owed.keys.ReadOne()
		if !queued {
			return "", 0, time.Time{}, false
		}
		r, cached := c.units[e.key]
		if !cached || r.owes == 0 {
			continue // deleted, or deleted and made again since
		}
		kinds, r.owes = r.owes, 0
		c.owed.units--
		metrics.DeferredWrites.Set(float64(c.owed.units))
		return e.key, kinds, time.Unix(0, e.since), true
	}
}

// forgetOwed drops what r owes: its unit is gone; with c.mu held.
func (c *owedWrites) forgetOwed(r *unitRecord) {
	if r.owes != 0 {
		r.owes = 0
		c.owed.units--
		metrics.DeferredWrites.Set(float64(c.owed.units))
	}
}

// owesWrites reports whether any unit is owed a write.
func (c *owedWrites) owesWrites() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.owed.units > 0
}

// owedWake is signalled when a unit comes to be owed a write.
func (c *owedWrites) owedWake() <-chan struct{} { return c.owed.wake }
