package policy_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// item builds a test unit: item("a").prio(3).at(time.Second).req(2).
type itemW struct{ policy.Item }

func item(key string) *itemW {
	return &itemW{policy.Item{Key: key, EnqueueTime: t0, Request: []int64{1}}}
}

func (w *itemW) prio(p int32) *itemW         { w.Priority = p; return w }
func (w *itemW) at(d time.Duration) *itemW   { w.EnqueueTime = t0.Add(d); return w }
func (w *itemW) req(amounts ...int64) *itemW { w.Request = amounts; return w }
func (w *itemW) obj() policy.Item            { return w.Item }

func queueOf(cfg policy.Config, items ...policy.Item) *policy.Queue {
	q := policy.NewQueue(cfg)
	for _, it := range items {
		q.Upsert(it)
	}
	return q
}

func keys(items []policy.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

func TestOrder(t *testing.T) {
	q := queueOf(policy.DefaultConfig(),
		item("ns/late").at(2*time.Second).obj(),
		item("ns/b").at(time.Second).obj(),
		item("ns/a").at(time.Second).obj(),
		item("ns/high").prio(10).at(3*time.Second).obj(),
	)
	want := []string{"ns/high", "ns/a", "ns/b", "ns/late"}
	if diff := cmp.Diff(want, keys(q.Items(0))); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(3, q.Position("ns/b")); diff != "" {
		t.Errorf("Position (-want +got):\n%s", diff)
	}
	q.Upsert(item("ns/late").prio(20).obj()) // priority raised: moves to the front
	if diff := cmp.Diff([]string{"ns/late", "ns/high"}, keys(q.Items(2))); diff != "" {
		t.Errorf("order after update (-want +got):\n%s", diff)
	}
}

// offerOf reduces an Offer to what a case checks.
type offerView struct {
	Head, Admit string
	Blocking    bool
	Band        policy.Band
}

func view(o policy.Offer) offerView {
	v := offerView{Blocking: o.Blocking, Band: o.Band}
	if o.HasHead {
		v.Head = o.Head.Key
	}
	if o.HasAdmit {
		v.Admit = o.Admit.Key
	}
	return v
}

func TestOffer(t *testing.T) {
	intelligent := policy.DefaultConfig()
	intelligent.Policy = schedulingv1alpha1.QueuePolicyIntelligent
	block := policy.DefaultConfig()
	block.Policy = schedulingv1alpha1.QueuePolicyBlock
	deep2 := policy.DefaultConfig()
	deep2.MaxDepth = 2
	starving := intelligent
	starving.LowPriorityMaxWait = time.Hour

	cases := []struct {
		name  string
		cfg   policy.Config
		items []policy.Item
		now   time.Duration
		free  []int64
		want  offerView
	}{
		{
			name: "empty queue offers nothing",
			cfg:  policy.DefaultConfig(),
			free: []int64{10},
			want: offerView{},
		},
		{
			name:  "priority: the head if it fits",
			cfg:   policy.DefaultConfig(),
			items: []policy.Item{item("a").prio(2).req(2).obj(), item("b").prio(1).req(1).obj()},
			free:  []int64{2},
			want:  offerView{Head: "a", Admit: "a"},
		},
		{
			name:  "priority: skips a head that does not fit",
			cfg:   policy.DefaultConfig(),
			items: []policy.Item{item("a").prio(2).req(5).obj(), item("b").prio(1).req(5).obj(), item("c").req(1).obj()},
			free:  []int64{2},
			want:  offerView{Head: "a", Admit: "c"},
		},
		{
			name:  "priority: a resource not asked for is not checked",
			cfg:   policy.DefaultConfig(),
			items: []policy.Item{item("a").req(0, 1).obj()},
			free:  []int64{-1, 1},
			want:  offerView{Head: "a", Admit: "a"},
		},
		{
			name:  "max-depth: nothing beyond the first units",
			cfg:   deep2,
			items: []policy.Item{item("a").prio(2).req(5).obj(), item("b").prio(1).req(5).obj(), item("c").req(1).obj()},
			free:  []int64{2},
			want:  offerView{Head: "a"},
		},
		{
			name:  "block: only the head, and it blocks",
			cfg:   block,
			items: []policy.Item{item("a").prio(2).req(5).obj(), item("c").req(1).obj()},
			free:  []int64{2},
			want:  offerView{Head: "a", Blocking: true},
		},
		{
			name:  "intelligent: the high head blocks",
			cfg:   intelligent,
			items: []policy.Item{item("h").prio(4).req(5).obj(), item("h2").prio(4).at(time.Second).req(1).obj(), item("l").prio(1).req(1).obj()},
			free:  []int64{2},
			want:  offerView{Head: "h", Blocking: true, Band: policy.BandHigh},
		},
		{
			name:  "intelligent: the low band skips what does not fit",
			cfg:   intelligent,
			items: []policy.Item{item("l1").prio(3).req(5).obj(), item("l2").prio(2).req(1).obj()},
			free:  []int64{2},
			want:  offerView{Head: "l1", Admit: "l2", Band: policy.BandLow},
		},
		{
			name: "intelligent: a low unit past its maximum wait heads the queue and blocks",
			cfg:  starving,
			items: []policy.Item{
				item("h").prio(9).at(2 * time.Hour).req(1).obj(),
				item("old").prio(1).req(5).obj(),
			},
			now:  3 * time.Hour,
			free: []int64{2},
			want: offerView{Head: "old", Blocking: true, Band: policy.BandPromoted},
		},
		{
			name: "intelligent: not yet past its maximum wait",
			cfg:  starving,
			items: []policy.Item{
				item("h").prio(9).at(2 * time.Hour).req(1).obj(),
				item("old").prio(1).req(5).obj(),
			},
			now:  30 * time.Minute,
			free: []int64{2},
			want: offerView{Head: "h", Admit: "h", Band: policy.BandHigh},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := view(queueOf(tc.cfg, tc.items...).Offer(t0.Add(tc.now), tc.free))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Offer (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIntelligentLowBandIsRoundRobin(t *testing.T) {
	cfg := policy.DefaultConfig()
	cfg.Policy = schedulingv1alpha1.QueuePolicyIntelligent
	q := queueOf(cfg, item("a").prio(3).obj(), item("b").prio(2).obj(), item("c").prio(1).obj())
	var got []string
	for i := 0; i < 3; i++ {
		o := q.Offer(t0, []int64{1})
		got = append(got, o.Admit.Key)
		q.Take(o.Admit.Key)
		q.Upsert(o.Admit) // it comes back (say it was evicted): it goes round again
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, got); diff != "" {
		t.Errorf("low band turns (-want +got):\n%s", diff)
	}
}

func TestSetConfigKeepsOrder(t *testing.T) {
	q := queueOf(policy.DefaultConfig(), item("a").prio(5).req(9).obj(), item("b").prio(1).obj(), item("c").prio(1).at(time.Second).obj())
	before := keys(q.Items(0))
	for _, p := range []schedulingv1alpha1.QueuePolicy{schedulingv1alpha1.QueuePolicyBlock, schedulingv1alpha1.QueuePolicyIntelligent, schedulingv1alpha1.QueuePolicyPriority} {
		cfg := policy.DefaultConfig()
		cfg.Policy = p
		cfg.LowPriorityMaxWait = time.Minute
		q.SetConfig(cfg)
		if diff := cmp.Diff(before, keys(q.Items(0))); diff != "" {
			t.Errorf("order after switching to %s (-want +got):\n%s", p, diff)
		}
	}
	cfg := policy.DefaultConfig()
	cfg.Policy = schedulingv1alpha1.QueuePolicyBlock
	q.SetConfig(cfg)
	if diff := cmp.Diff(offerView{Head: "a", Blocking: true}, view(q.Offer(t0, []int64{1}))); diff != "" {
		t.Errorf("Offer as Block (-want +got):\n%s", diff)
	}
}

func TestNextPromotion(t *testing.T) {
	cfg := policy.DefaultConfig()
	cfg.Policy = schedulingv1alpha1.QueuePolicyIntelligent
	cfg.LowPriorityMaxWait = 10 * time.Minute
	q := queueOf(cfg, item("l").prio(1).at(time.Minute).obj(), item("h").prio(9).obj())
	got, ok := q.NextPromotion(t0)
	if !ok || !got.Equal(t0.Add(11*time.Minute)) {
		t.Errorf("NextPromotion = %v, %v; want %v, true", got, ok, t0.Add(11*time.Minute))
	}
	if _, ok := q.NextPromotion(t0.Add(time.Hour)); ok {
		t.Errorf("NextPromotion after the deadline should be none: the unit is already promoted")
	}
}

func TestConfigFromQueue(t *testing.T) {
	cases := []struct {
		name    string
		policy  schedulingv1alpha1.QueuePolicy
		ann     map[string]string
		want    policy.Config
		wantErr bool
	}{
		{name: "defaults", want: policy.DefaultConfig()},
		{
			name:   "every annotation",
			policy: schedulingv1alpha1.QueuePolicyIntelligent,
			ann: map[string]string{
				schedulingv1alpha1.AnnotationPriorityThreshold:         "5",
				schedulingv1alpha1.AnnotationMaxDepth:                  "20",
				schedulingv1alpha1.AnnotationWaitForPodsRunning:        "true",
				schedulingv1alpha1.AnnotationEnableQueueUnitPreemption: "true",
				policy.AnnotationPreemptRunning:                        "true",
				policy.AnnotationLowPriorityMaxWait:                    "30m",
				policy.AnnotationPreemptionDelay:                       "10s",
			},
			want: policy.Config{Policy: schedulingv1alpha1.QueuePolicyIntelligent, PriorityThreshold: 5, MaxDepth: 20,
				WaitForPodsRunning: true, EnablePreemption: true, PreemptRunning: true, LowPriorityMaxWait: 30 * time.Minute,
				PreemptionDelay: 10 * time.Second},
		},
		{
			name: "a preemption delay of 0 preempts at once",
			ann:  map[string]string{policy.AnnotationPreemptionDelay: "0"},
			want: func() policy.Config { c := policy.DefaultConfig(); c.PreemptionDelay = 0; return c }(),
		},
		{
			name: "the default preemption delay",
			want: func() policy.Config { c := policy.DefaultConfig(); c.PreemptionDelay = 2 * time.Second; return c }(),
		},
		{
			name:    "malformed values keep their defaults and are reported",
			policy:  "Fancy",
			ann:     map[string]string{schedulingv1alpha1.AnnotationMaxDepth: "-1", schedulingv1alpha1.AnnotationPriorityThreshold: "high"},
			want:    policy.DefaultConfig(),
			wantErr: true,
		},
		{
			name:    "a malformed or negative preemption delay keeps the default",
			ann:     map[string]string{policy.AnnotationPreemptionDelay: "-1s"},
			want:    policy.DefaultConfig(),
			wantErr: true,
		},
		{
			name:    "a preemption delay that is not a duration keeps the default",
			ann:     map[string]string{policy.AnnotationPreemptionDelay: "soon"},
			want:    policy.DefaultConfig(),
			wantErr: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := policy.ConfigFromQueue(tc.policy, tc.ann)
			if (err != nil) != tc.wantErr {
				t.Errorf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPropertyQueueMatchesASortedList runs random upserts, removals and
// offers against the queue and a plain sorted list: the same order, the
// same positions, the same first fit.
func TestPropertyQueueMatchesASortedList(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		cfg := policy.DefaultConfig()
		cfg.MaxDepth = rng.IntN(4) * 5
		q := policy.NewQueue(cfg)
		model := map[string]policy.Item{}
		for i := 0; i < 300; i++ {
			key := fmt.Sprintf("ns/u%02d", rng.IntN(60))
			switch rng.IntN(4) {
			case 0:
				q.Remove(key)
				delete(model, key)
			default:
				it := item(key).prio(int32(rng.IntN(4))).at(time.Duration(rng.IntN(5))*time.Second).
					req(int64(rng.IntN(5)), int64(rng.IntN(5))).obj()
				q.Upsert(it)
				model[key] = it
			}
			sorted := sortedModel(model)
			if diff := cmp.Diff(keys(sorted), keys(q.Items(0))); diff != "" {
				t.Fatalf("seed %d step %d: order (-model +queue):\n%s", seed, i, diff)
			}
			free := []int64{int64(rng.IntN(5)), int64(rng.IntN(5))}
			want := ""
			for pos, it := range sorted {
				if cfg.MaxDepth > 0 && pos >= cfg.MaxDepth {
					break
				}
				if policy.Fits(it.Request, free) {
					want = it.Key
					break
				}
			}
			if got := view(q.Offer(t0, free)).Admit; got != want {
				t.Fatalf("seed %d step %d: first fit = %q, want %q", seed, i, got, want)
			}
			if len(sorted) > 0 {
				k := sorted[len(sorted)/2].Key
				if got := q.Position(k); got != len(sorted)/2+1 {
					t.Fatalf("seed %d step %d: Position(%s) = %d, want %d", seed, i, k, got, len(sorted)/2+1)
				}
			}
			offset, limit := rng.IntN(len(sorted)+3), rng.IntN(6)
			page := sorted[min(offset, len(sorted)):]
			if limit > 0 && limit < len(page) {
				page = page[:limit]
			}
			if diff := cmp.Diff(keys(page), keys(q.ItemsFrom(offset, limit))); diff != "" {
				t.Fatalf("seed %d step %d: ItemsFrom(%d, %d) (-model +queue):\n%s", seed, i, offset, limit, diff)
			}
			for pos := 0; pos <= len(sorted)+1; pos++ {
				got, ok := q.At(pos)
				if wantOK := pos >= 1 && pos <= len(sorted); ok != wantOK || ok && got.Key != sorted[pos-1].Key {
					t.Fatalf("seed %d step %d: At(%d) = %q, %v; want the model's", seed, i, pos, got.Key, ok)
				}
			}
		}
	}
}

func sortedModel(m map[string]policy.Item) []policy.Item {
	var out []policy.Item
	for _, it := range m {
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		if !a.EnqueueTime.Equal(b.EnqueueTime) {
			return a.EnqueueTime.Before(b.EnqueueTime)
		}
		return a.Key < b.Key
	})
	return out
}

// TestPropertyHeadRankIsOffersHead: whatever the policy, the units and the
// cursor (units taken), HeadRank is the rank of the head Offer serves at
// any headroom, so the scheduler can order queues by it without offering.
func TestPropertyHeadRankIsOffersHead(t *testing.T) {
	policies := []schedulingv1alpha1.QueuePolicy{schedulingv1alpha1.QueuePolicyPriority,
		schedulingv1alpha1.QueuePolicyBlock, schedulingv1alpha1.QueuePolicyIntelligent}
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		cfg := policy.DefaultConfig()
		cfg.Policy = policies[rng.IntN(len(policies))]
		cfg.MaxDepth = rng.IntN(3) * 3
		if rng.IntN(2) == 0 {
			cfg.LowPriorityMaxWait = time.Duration(1+rng.IntN(5)) * time.Second
		}
		q := policy.NewQueue(cfg)
		for i := 0; i < 300; i++ {
			key := fmt.Sprintf("ns/u%02d", rng.IntN(30))
			switch rng.IntN(5) {
			case 0:
				q.Remove(key)
			case 1:
				if o := q.Offer(t0, nil); o.HasAdmit {
					q.Take(o.Admit.Key) // moves Intelligent's cursor
				}
			case 2:
				if rng.IntN(10) == 0 {
					cfg.Policy = policies[rng.IntN(len(policies))]
					q.SetConfig(cfg)
				}
			default:
				q.Upsert(item(key).prio(int32(rng.IntN(8))).at(time.Duration(rng.IntN(5)) * time.Second).
					req(int64(rng.IntN(3))).obj())
			}
			now := t0.Add(time.Duration(rng.IntN(10)) * time.Second)
			o := q.Offer(now, []int64{int64(rng.IntN(3))})
			prio, since, ok := q.HeadRank(now)
			if ok != o.HasHead || ok && (prio != o.Head.Priority || since != o.Head.EnqueueTime.UnixNano()) {
				t.Fatalf("seed %d step %d (%s): HeadRank = %d, %d, %v; Offer's head %s (%d, %d), %v", seed, i, cfg.Policy,
					prio, since, ok, o.Head.Key, o.Head.Priority, o.Head.EnqueueTime.UnixNano(), o.HasHead)
			}
		}
	}
}

// TestItemsReadBackAsGiven: a unit's Item comes back from the queue as it
// was given (its enqueue time the same instant), though the queue keeps
// the key, priority and time once, in its order key; a time outside what
// nanoseconds since 1970 hold is read back clamped, and orders as before.
func TestItemsReadBackAsGiven(t *testing.T) {
	q := policy.NewQueue(policy.Config{Policy: schedulingv1alpha1.QueuePolicyPriority})
	given := []policy.Item{
		{Key: "ns/a", Priority: 3, EnqueueTime: t0.Add(1500 * time.Millisecond), Request: []int64{2, 0, 1}},
		{Key: "ns/b", Priority: 3, EnqueueTime: t0.In(time.FixedZone("CST", 8*3600)).Add(time.Nanosecond), Request: []int64{1}},
		{Key: "ns/c", Priority: -1, EnqueueTime: t0, Request: nil},
	}
	for _, it := range given {
		q.Upsert(it)
	}
	for _, want := range given {
		got, ok := q.Get(want.Key)
		if !ok {
			t.Fatalf("Get(%s) not found", want.Key)
		}
		if diff := cmp.Diff(want, got); diff != "" { // time.Time compares with Equal
			t.Errorf("Get(%s) (-given +got):\n%s", want.Key, diff)
		}
	}
	inOrder := []policy.Item{given[1], given[0], given[2]} // b is 1 ns after t0, a 1.5 s
	if diff := cmp.Diff(inOrder, q.Items(0)); diff != "" {
		t.Errorf("Items (-given, in order +got):\n%s", diff)
	}

	q.Upsert(policy.Item{Key: "ns/zero", Priority: 3})
	got, _ := q.Get("ns/zero")
	if want := time.Unix(0, math.MinInt64); !got.EnqueueTime.Equal(want) {
		t.Errorf("a zero enqueue time reads back as %v, want %v (clamped)", got.EnqueueTime, want)
	}
	if first, _ := q.At(1); first.Key != "ns/zero" {
		t.Errorf("first in order %s, want ns/zero (the earliest of priority 3)", first.Key)
	}
}
