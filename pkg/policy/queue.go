package policy

import (
	"container/heap"
	"math"
	"time"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/ordered"
)

// Item is a waiting unit as a queue orders it.
type Item struct {
	// Key is namespace/name; the last tie-breaker of the order.
	Key string
	// Priority: higher goes first.
	Priority int32
	// EnqueueTime is when the unit first entered the queue: earlier goes first.
	EnqueueTime time.Time
	// Request is what the unit asks for, as a vector in the caller's
	// resource order (Offer compares it with a headroom vector).
	Request []int64
}

// Band names the part of a queue an Offer comes from.
type Band string

// Bands. Priority and Block queues have only BandAll.
const (
	BandAll      Band = ""
	BandHigh     Band = "high"
	BandLow      Band = "low"
	BandPromoted Band = "promoted" // a low unit past its maximum wait
)

// Offer is what a queue proposes for one admission attempt.
type Offer struct {
	// Head is the unit the policy serves first now; HasHead is false when
	// the queue is empty. It is the unit that may try preemption.
	Head    Item
	HasHead bool
	// Admit is the unit to admit now: Head if it fits, otherwise, where
	// the policy does not block, the first unit after it that fits.
	Admit    Item
	HasAdmit bool
	// Blocking means Head does not fit and the policy admits nothing
	// behind it (Block; Intelligent's high band and promoted units).
	Blocking bool
	// Band is where Head comes from.
	Band Band
}

// Queue holds one queue's waiting units in order.
type Queue struct {
	cfg   Config
	tree  ordered.Tree[unit]
	byKey map[string]*tnode
	// ages orders the low band by enqueue time, for starvation protection;
	// kept only when that is on.
	ages ageHeap
	// cursor is where Intelligent's low band resumes: after the last low
	// unit admitted.
	cursor *orderKey
}

// NewQueue returns an empty queue.
func NewQueue(cfg Config) *Queue {
	return &Queue{cfg: normalise(cfg), tree: newUnitTree(), byKey: map[string]*tnode{}}
}

func normalise(c Config) Config {
	if c.Policy == "" {
		c.Policy = schedulingv1alpha1.QueuePolicyPriority
	}
	if c.MaxDepth < 0 {
		c.MaxDepth = 0
	}
	return c
}

// Config is the queue's configuration.
func (q *Queue) Config() Config { return q.cfg }

// SetConfig changes the policy in place: the order is the same for every
// policy, so nobody loses their place. O(n) only when Intelligent's bands or
// starvation protection change.
func (q *Queue) SetConfig(cfg Config) {
	cfg = normalise(cfg)
	old := q.cfg
	q.cfg = cfg
	if old.Policy != cfg.Policy || old.PriorityThreshold != cfg.PriorityThreshold {
		q.cursor = nil
	}
	if q.agesOn(old) != q.agesOn(cfg) || old.PriorityThreshold != cfg.PriorityThreshold {
		for _, n := range q.ages {
			n.Item.age = -1
		}
		q.ages = q.ages[:0]
		if q.agesOn(cfg) {
			q.tree.Each(func(n *tnode) bool {
				if n.Item.k.priority < cfg.PriorityThreshold {
					heap.Push(&q.ages, n)
				}
				return true
			})
		}
	}
}

func (q *Queue) agesOn(c Config) bool {
	return c.Policy == schedulingv1alpha1.QueuePolicyIntelligent && c.LowPriorityMaxWait > 0
}

// Len is the number of waiting units.
func (q *Queue) Len() int { return q.tree.Len() }

// Upsert adds the unit, or moves it if its priority, enqueue time or request
// changed. O(log n).
func (q *Queue) Upsert(it Item) {
	it.Request = append([]int64(nil), it.Request...)
	q.Remove(it.Key)
	n := newTNode(it)
	q.byKey[it.Key] = n
	q.tree.Insert(n)
	if q.agesOn(q.cfg) && n.Item.k.priority < q.cfg.PriorityThreshold {
		heap.Push(&q.ages, n)
	}
}

// Remove takes the unit out (deleted, or moved to another queue); false if
// it was not there.
func (q *Queue) Remove(key string) bool {
	n, ok := q.byKey[key]
	if !ok {
		return false
	}
	delete(q.byKey, key)
	q.tree.Remove(&n.Item)
	if n.Item.age >= 0 {
		heap.Remove(&q.ages, n.Item.age)
	}
	return true
}

// Take removes a unit that is being admitted. Unlike Remove it moves
// Intelligent's round-robin cursor past it.
func (q *Queue) Take(key string) bool {
	n, ok := q.byKey[key]
	if !ok {
		return false
	}
	if q.cfg.Policy == schedulingv1alpha1.QueuePolicyIntelligent && n.Item.k.priority < q.cfg.PriorityThreshold {
		k := n.Item.k
		q.cursor = &k
	}
	return q.Remove(key)
}

// MaxRequest is the element-wise largest request of the waiting units (nil
// when empty); callers must not modify it. A resource whose headroom covers
// it holds nobody back. O(1).
func (q *Queue) MaxRequest() []int64 {
	if q.tree.Root() == nil {
		return nil
	}
	return q.tree.Root().Item.maxReq
}

// Get returns the waiting unit with this key.
func (q *Queue) Get(key string) (Item, bool) {
	n, ok := q.byKey[key]
	if !ok {
		return Item{}, false
	}
	return n.Item.item(), true
}

// Position is the unit's 1-based place in the queue's order, 0 if absent.
func (q *Queue) Position(key string) int {
	n, ok := q.byKey[key]
	if !ok {
		return 0
	}
	return q.tree.Rank(&n.Item) + 1
}

// At is the unit at 1-based place pos in the queue's order. O(log n).
func (q *Queue) At(pos int) (Item, bool) {
	if pos < 1 {
		return Item{}, false
	}
	n := q.tree.Nth(pos - 1)
	if n == nil {
		return Item{}, false
	}
	return n.Item.item(), true
}

// Items returns up to limit units in order (all when limit <= 0).
func (q *Queue) Items(limit int) []Item { return q.ItemsFrom(0, limit) }

// ItemsFrom returns up to limit units in order (all when limit <= 0),
// starting at 0-based place offset: a page of the order, found in
// O(log n + limit) without walking the units before it.
func (q *Queue) ItemsFrom(offset, limit int) []Item {
	var out []Item
	if limit > 0 {
		out = make([]Item, 0, min(limit, max(q.Len()-max(offset, 0), 0)))
	}
	q.tree.EachFrom(offset, func(n *tnode) bool {
		if limit > 0 && len(out) >= limit {
			return false
		}
		out = append(out, n.Item.item())
		return true
	})
	return out
}

func (q *Queue) depth() int {
	if q.cfg.MaxDepth > 0 {
		return q.cfg.MaxDepth
	}
	return math.MaxInt
}

// Offer applies the policy to the current headroom (free, a vector in the
// same order as the requests). It changes nothing; the caller admits with
// Take. O(log n) when the subtrees it must skip ask for similar amounts.
func (q *Queue) Offer(now time.Time, free []int64) Offer {
	var o Offer
	if q.tree.Root() == nil {
		return o
	}
	switch q.cfg.Policy {
	case schedulingv1alpha1.QueuePolicyBlock:
		o.serveHead(q.tree.First(), BandAll, free)
	case schedulingv1alpha1.QueuePolicyIntelligent:
		q.offerIntelligent(now, free, &o)
	default:
		o.setHead(q.tree.First(), BandAll)
		if n := firstFit(q.tree.Root(), 0, &window{limit: q.depth()}, free); n != nil {
			o.Admit, o.HasAdmit = n.Item.item(), true
		}
	}
	return o
}

func (q *Queue) offerIntelligent(now time.Time, free []int64, o *Offer) {
	head, band := q.headIntelligent(now)
	if band != BandLow {
		o.serveHead(head, band, free)
		return
	}
	// Only low units: round-robin from the cursor, wrapping once.
	o.setHead(head, BandLow)
	limit := q.depth()
	after := &window{after: q.cursor, limit: limit}
	wrapped := &window{upTo: q.cursor, limit: limit}
	n := firstFit(q.tree.Root(), 0, after, free)
	if n == nil && q.cursor != nil {
		n = firstFit(q.tree.Root(), 0, wrapped, free)
	}
	if n != nil {
		o.Admit, o.HasAdmit = n.Item.item(), true
	}
}

// headIntelligent is an Intelligent queue's head and its band: the oldest
// low unit past its maximum wait, else the first high unit, else the first
// low unit after the round-robin cursor (wrapping once). The queue is not
// empty.
func (q *Queue) headIntelligent(now time.Time) (*tnode, Band) {
	if n := q.promoted(now); n != nil {
		return n, BandPromoted
	}
	if countAtLeast(q.tree.Root(), q.cfg.PriorityThreshold) > 0 {
		return q.tree.First(), BandHigh
	}
	limit := q.depth()
	head := firstFit(q.tree.Root(), 0, &window{after: q.cursor, limit: limit}, nil)
	if head == nil || q.cursor == nil {
		head = firstFit(q.tree.Root(), 0, &window{upTo: q.cursor, limit: limit}, nil)
	}
	return head, BandLow
}

// HeadRank is the priority and enqueue time (UnixNano, clamped so that the
// zero time comes first) of the unit the policy serves first now, Offer's
// Head, found without a headroom; ok is false when the queue is empty.
// O(log n). It changes only when the queue's units change, a unit is
// taken (Intelligent's cursor), the config changes, or, with starvation
// protection, a low unit passes its maximum wait (NextPromotion).
func (q *Queue) HeadRank(now time.Time) (priority int32, enqueued int64, ok bool) {
	if q.tree.Root() == nil {
		return 0, 0, false
	}
	n := q.tree.First()
	if q.cfg.Policy == schedulingv1alpha1.QueuePolicyIntelligent {
		n, _ = q.headIntelligent(now)
	}
	return n.Item.k.priority, n.Item.k.enqueued, true
}

// promoted is the oldest low unit past its maximum wait, if any.
func (q *Queue) promoted(now time.Time) *tnode {
	if !q.agesOn(q.cfg) || len(q.ages) == 0 {
		return nil
	}
	n := q.ages[0]
	if n.Item.item().EnqueueTime.Add(q.cfg.LowPriorityMaxWait).After(now) {
		return nil
	}
	return n
}

// NextPromotion is when the next low unit will pass its maximum wait, so the
// caller can look again then without polling; false if none will.
func (q *Queue) NextPromotion(now time.Time) (time.Time, bool) {
	if !q.agesOn(q.cfg) || len(q.ages) == 0 {
		return time.Time{}, false
	}
	t := q.ages[0].Item.item().EnqueueTime.Add(q.cfg.LowPriorityMaxWait)
	if !t.After(now) {
		return time.Time{}, false
	}
	return t, true
}

func (o *Offer) setHead(n *tnode, b Band) {
	if n == nil {
		return
	}
	o.Head, o.HasHead, o.Band = n.Item.item(), true, b
}

// serveHead: only the head may be admitted; if it does not fit it blocks.
func (o *Offer) serveHead(n *tnode, b Band, free []int64) {
	o.setHead(n, b)
	if fits(n.Item.request, free) {
		o.Admit, o.HasAdmit = n.Item.item(), true
	} else {
		o.Blocking = true
	}
}

// ageHeap is a min-heap of low units by enqueue time, then key.
type ageHeap []*tnode

func (h ageHeap) Len() int { return len(h) }
func (h ageHeap) Less(i, j int) bool {
	if h[i].Item.k.enqueued != h[j].Item.k.enqueued {
		return h[i].Item.k.enqueued < h[j].Item.k.enqueued
	}
	return h[i].Item.k.key < h[j].Item.k.key
}
func (h ageHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].Item.age, h[j].Item.age = i, j
}
func (h *ageHeap) Push(x any) {
	n := x.(*tnode)
	n.Item.age = len(*h)
	*h = append(*h, n)
}
func (h *ageHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	old[len(old)-1] = nil
	n.Item.age = -1
	*h = old[:len(old)-1]
	return n
}
