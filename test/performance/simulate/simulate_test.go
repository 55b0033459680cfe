package simulate_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
	"github.com/koord-queue/koord-queue/test/performance/simulate"
)

func TestRun(t *testing.T) {
	second := scenario.Class{Name: "unit", CPU: 1, Runtime: time.Second}
	oneQuota := func(max int64, preemption bool) []scenario.Quota {
		return []scenario.Quota{{Name: "q", Max: max, Preemption: preemption}}
	}
	cases := []struct {
		name string
		s    scenario.Scenario
		opts simulate.Options
		want simulate.Result
	}{
		{
			name: "the write budget: QPS 5, burst 1, admits one unit every 200ms",
			s: scenario.Scenario{Name: "budget", QPS: 5, Burst: 1, ClusterCPU: 100, Quotas: oneQuota(100, false),
				Sets: []scenario.Set{{Class: second, Count: 10}}},
			want: simulate.Result{Scenario: "budget", Wall: 2800 * time.Millisecond, WriteBound: 1800 * time.Millisecond, Admissions: 10, Writes: 10,
				AvgTimeToAdmission: map[string]time.Duration{"unit": 900 * time.Millisecond}},
		},
		{
			name: "the quota: max 2 runs two units at a time",
			s: scenario.Scenario{Name: "quota", QPS: 1000, Burst: 1000, ClusterCPU: 100, Quotas: oneQuota(2, false),
				Sets: []scenario.Set{{Class: second, Count: 4}}},
			want: simulate.Result{Scenario: "quota", Wall: 2 * time.Second, Admissions: 4, Writes: 4,
				AvgTimeToAdmission: map[string]time.Duration{"unit": 500 * time.Millisecond}},
		},
		{
			name: "latency: a unit holds quota for its runtime plus two delays",
			s: scenario.Scenario{Name: "latency", QPS: 1000, Burst: 1000, ClusterCPU: 100, Quotas: oneQuota(2, false),
				Sets: []scenario.Set{{Class: second, Count: 4}}},
			opts: simulate.Options{Latency: 100 * time.Millisecond},
			want: simulate.Result{Scenario: "latency", Latency: 100 * time.Millisecond, Wall: 2400 * time.Millisecond, Admissions: 4, Writes: 4,
				AvgTimeToAdmission: map[string]time.Duration{"unit": 600 * time.Millisecond}},
		},
		{
			name: "in-queue preemption: the high unit waits the preemption delay, then evicts the low one, which runs again from the start",
			s:    lowThenHigh(10 * time.Second),
			want: simulate.Result{Scenario: "preemption", Wall: 14 * time.Second, Admissions: 3, Evictions: 1, Writes: 4,
				EvictionsByKind:    map[scheduler.PreemptionKind]int{scheduler.InQueue: 1},
				AvgTimeToAdmission: map[string]time.Duration{"low": 0, "high": policy.DefaultPreemptionDelay}},
		},
		{
			name: "in-queue preemption with koord-queue/preemption-delay 0: the high unit evicts the low one at once",
			s:    lowThenHigh(10 * time.Second),
			opts: simulate.Options{PreemptionDelay: new(time.Duration)},
			want: simulate.Result{Scenario: "preemption", Wall: 12 * time.Second, Admissions: 3, Evictions: 1, Writes: 4,
				EvictionsByKind:    map[scheduler.PreemptionKind]int{scheduler.InQueue: 1},
				AvgTimeToAdmission: map[string]time.Duration{"low": 0, "high": 0}},
		},
		{
			name: "the low unit ends within the preemption delay: the high unit takes its quota, nobody is evicted",
			s:    lowThenHigh(1500 * time.Millisecond),
			want: simulate.Result{Scenario: "preemption", Wall: 2500 * time.Millisecond, Admissions: 2, Writes: 2,
				AvgTimeToAdmission: map[string]time.Duration{"low": 0, "high": 500 * time.Millisecond}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := simulate.Run(&tc.s, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tc.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(simulate.Result{}, "Classes")); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
		})
	}
}

// lowThenHigh is one quota of 2 cpu with in-queue preemption: a low unit of
// 2 cpu running lowRuntime at 0, a high one of 2 cpu running 1s at 1s.
func lowThenHigh(lowRuntime time.Duration) scenario.Scenario {
	return scenario.Scenario{Name: "preemption", QPS: 1000, Burst: 1000, ClusterCPU: 100,
		Quotas: []scenario.Quota{{Name: "q", Max: 2, Preemption: true}},
		Sets: []scenario.Set{
			{Class: scenario.Class{Name: "low", CPU: 2, Runtime: lowRuntime, Priority: 1}, Count: 1},
			{Class: scenario.Class{Name: "high", CPU: 2, Runtime: time.Second, Priority: 10}, Count: 1, Interval: time.Second},
		}}
}

func TestRunRejectsAScenarioWithoutBudget(t *testing.T) {
	s := scenario.Scenario{Name: "no-budget", ClusterCPU: 1, Quotas: []scenario.Quota{{Name: "q", Max: 1}}}
	if _, err := simulate.Run(&s, simulate.Options{}); err == nil {
		t.Error("Run with QPS 0: no error, want one")
	}
}

// TestBaselineReplayReachesTheWriteBound: with perfect plumbing,
// koord-queue's decisions on Kueue's shape spend the whole write budget on
// admissions (no eviction, nothing idle), so the replay ends within one
// unit's runtime of the bound, and every class waits less than in Kueue. A
// change to the decisions that costs throughput fails here, without a clock.
func TestBaselineReplayReachesTheWriteBound(t *testing.T) {
	s := scenarioNamed(t, "baseline", false)
	got := replay(t, &s, simulate.Options{})
	if got.Evictions != 0 || got.Wall > got.WriteBound+scenario.Large.Runtime {
		t.Errorf("wall %v with %d evictions, want within %v of the write bound %v and none", got.Wall, got.Evictions, scenario.Large.Runtime, got.WriteBound)
	}
	for class, kueue := range s.Bounds.MaxAvgTimeToAdmission {
		if got.AvgTimeToAdmission[class] > kueue {
			t.Errorf("class %s waits %v on average, more than Kueue's %v", class, got.AvgTimeToAdmission[class], kueue)
		}
	}
}

// TestDecidingAheadCostsThroughput is why koord-queue paces its decisions:
// deciding every admission that fits at once, ahead of the write budget,
// holds quota for admissions not written yet, and on the baseline shape the
// large units that arrive meanwhile wait for it (and, preempting at once,
// evict the units it went to), and the run ends well past the bound.
func TestDecidingAheadCostsThroughput(t *testing.T) {
	s := scenarioNamed(t, "baseline", false)
	paced := replay(t, &s, simulate.Options{})
	ahead := replay(t, &s, simulate.Options{DecideAhead: true})
	if ahead.Wall < paced.Wall+10*time.Second {
		t.Errorf("deciding ahead: %v with %d evictions; paced: %v with %d; want deciding ahead at least 10s slower",
			ahead.Wall, ahead.Evictions, paced.Wall, paced.Evictions)
	}
	if large := scenario.Large.Name; ahead.AvgTimeToAdmission[large] <= paced.AvgTimeToAdmission[large] {
		t.Errorf("large units wait %v deciding ahead, %v paced; want longer deciding ahead", ahead.AvgTimeToAdmission[large], paced.AvgTimeToAdmission[large])
	}
	atOnce := replay(t, &s, simulate.Options{DecideAhead: true, PreemptionDelay: new(time.Duration)})
	if atOnce.Evictions == 0 || atOnce.Wall < paced.Wall+10*time.Second {
		t.Errorf("deciding ahead and preempting at once: %v with %d evictions; want evictions, and at least 10s slower than paced (%v)",
			atOnce.Wall, atOnce.Evictions, paced.Wall)
	}
}

// TestBaselineReplayHasNoCliff: a delay between a write and whoever it
// concerns (docs/design/performance-notes.md: 50 to 100ms and more on a
// busy two-core machine) makes each unit hold its quota a little longer, and in the
// baseline's first minute a large unit then finds its quota held by units
// that borrowed it in the moment between two large units, about to end.
// Preempting them at once cost 705 evictions and 21.5s of wall at 50ms; with
// the preemption delay the large units wait for them, with no eviction (as
// with perfect plumbing), no longer than 2s on average, and the wall is no
// worse than preempting at once.
func TestBaselineReplayHasNoCliff(t *testing.T) {
	s := scenarioNamed(t, "baseline", false)
	for _, latency := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond} {
		got := replay(t, &s, simulate.Options{Latency: latency})
		atOnce := replay(t, &s, simulate.Options{Latency: latency, PreemptionDelay: new(time.Duration)})
		if large := got.AvgTimeToAdmission[scenario.Large.Name]; got.Evictions != 0 || large > 2*time.Second || got.Wall > atOnce.Wall {
			t.Errorf("latency %v: wall %v, %d evictions, large units wait %v on average; want no eviction, at most 2s, and no more wall than preempting at once (%v, %d evictions)",
				latency, got.Wall, got.Evictions, large, atOnce.Wall, atOnce.Evictions)
		}
	}
}

// TestLargeScaleReplayReachesTheWriteBound: on Kueue's large-scale shape
// (the short variant: the full one takes about a minute of CPU to replay)
// nothing binds but the write budget, and the decisions spend all of it on
// admissions: the replay ends within one unit's runtime of the bound, with
// no eviction.
func TestLargeScaleReplayReachesTheWriteBound(t *testing.T) {
	s := scenarioNamed(t, "large-scale", true)
	got := replay(t, &s, simulate.Options{})
	if got.Evictions != 0 || got.Admissions != s.Units() || got.Wall > got.WriteBound+scenario.LargeScaleLarge.Runtime {
		t.Errorf("wall %v with %d admissions and %d evictions, want within %v of the write bound %v, %d admissions and no eviction",
			got.Wall, got.Admissions, got.Evictions, scenario.LargeScaleLarge.Runtime, got.WriteBound, s.Units())
	}
}

// TestLargeScaleReplayServesHeadsByPriority: on Kueue's large-scale shape
// (the short variant) every queue's share ties, and the line then serves
// the queue whose head has the highest priority, then the earliest head, as
// Kueue serves its ClusterQueues' heads: large units wait least, small ones
// most. When the queue's name broke the tie, the first queues by name
// drained whole, smalls included, before later queues' large units had a
// turn: large 6.3s, medium 8.0s, small 8.0s (1.0s, 3.6s, 10.0s now).
func TestLargeScaleReplayServesHeadsByPriority(t *testing.T) {
	s := scenarioNamed(t, "large-scale", true)
	got := replay(t, &s, simulate.Options{})
	large := got.AvgTimeToAdmission[scenario.LargeScaleLarge.Name]
	medium := got.AvgTimeToAdmission[scenario.LargeScaleMedium.Name]
	small := got.AvgTimeToAdmission[scenario.LargeScaleSmall.Name]
	if large > 2*time.Second || large >= medium || medium >= small {
		t.Errorf("average time to admission large %v, medium %v, small %v; want large at most 2s, less than medium, less than small", large, medium, small)
	}
}

// scenarioNamed is the catalog's scenario name, its short variant if short.
func scenarioNamed(t *testing.T, name string, short bool) scenario.Scenario {
	t.Helper()
	s, err := scenario.Get(name, short)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// replay replays s through the decision core with opts.
func replay(t *testing.T, s *scenario.Scenario, opts simulate.Options) *simulate.Result {
	t.Helper()
	got, err := simulate.Run(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
