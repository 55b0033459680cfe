package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCatalog(t *testing.T) {
	cases := map[string]struct {
		name                  string
		short                 bool
		wantUnits, wantLeaves int
		wantQPS               float64
		wantCPU               int64
		wantRestarts          int
		wantGeneration        time.Duration
		// wantChurned: the scenario's quotas and the extra ones.
		wantChurned int
	}{
		"baseline is Kueue's shape: 30 queues, 15,000 units, QPS 50": {
			name: "baseline", wantUnits: 15000, wantLeaves: 30, wantQPS: 50, wantCPU: 600, wantGeneration: 60 * time.Second,
		},
		"short baseline: 12 queues of a fifth of the units": {
			name: "baseline", short: true, wantUnits: 1200, wantLeaves: 12, wantQPS: 50, wantCPU: 240, wantGeneration: 12 * time.Second,
		},
		"deep queue: 2,000 units at once in one quota": {
			name: "deep", wantUnits: 2000, wantLeaves: 1, wantQPS: 1000, wantCPU: 100,
		},
		"deep queue at the production QPS": {
			name: "deep-qps50", wantUnits: 2000, wantLeaves: 1, wantQPS: 50, wantCPU: 100,
		},
		"unthrottled is the baseline at QPS 1000": {
			name: "unthrottled", wantUnits: 15000, wantLeaves: 30, wantQPS: 1000, wantCPU: 600, wantGeneration: 60 * time.Second,
		},
		"restart is the baseline killed three times": {
			name: "restart", wantUnits: 15000, wantLeaves: 30, wantQPS: 50, wantCPU: 600, wantRestarts: 3, wantGeneration: 60 * time.Second,
		},
		"churn is the baseline while 1,000 quotas are patched": {
			name: "churn", wantUnits: 15000, wantLeaves: 30, wantQPS: 50, wantCPU: 600, wantGeneration: 60 * time.Second, wantChurned: 1000,
		},
		"short churn: the short baseline while 200 quotas are patched": {
			name: "churn", short: true, wantUnits: 1200, wantLeaves: 12, wantQPS: 50, wantCPU: 240, wantGeneration: 12 * time.Second, wantChurned: 200,
		},
		"large-scale is Kueue's large-scale shape: 1,000 queues, 50,000 units, QPS 50": {
			name: "large-scale", wantUnits: 50000, wantLeaves: 1000, wantQPS: 50, wantCPU: 20000, wantGeneration: 3300 * time.Millisecond,
		},
		"short large-scale: 100 queues of a fifth of the units": {
			name: "large-scale", short: true, wantUnits: 1000, wantLeaves: 100, wantQPS: 50, wantCPU: 2000, wantGeneration: 700 * time.Millisecond,
		},
		"declared: 4 quotas of 20 cpu, 45 units each declaring its run time": {
			name: "declared", wantUnits: 180, wantLeaves: 4, wantQPS: 50, wantCPU: 80, wantGeneration: 60 * time.Second,
		},
		"short declared: 2 quotas": {
			name: "declared", short: true, wantUnits: 90, wantLeaves: 2, wantQPS: 50, wantCPU: 40, wantGeneration: 60 * time.Second,
		},
	}
	for desc, tc := range cases {
		t.Run(desc, func(t *testing.T) {
			s, err := Get(tc.name, tc.short)
			if err != nil {
				t.Fatal(err)
			}
			churned := 0
			if s.Churn.Quotas > 0 {
				churned = len(s.Quotas) + len(s.ChurnQuotas())
			}
			got := []any{s.Units(), len(s.Leaves()), s.QPS, s.ClusterCPU, s.Restarts, s.GenerationTime(), churned}
			want := []any{tc.wantUnits, tc.wantLeaves, tc.wantQPS, tc.wantCPU, tc.wantRestarts, tc.wantGeneration, tc.wantChurned}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("units, leaves, QPS, cluster cpu, restarts, generation time, quotas churned (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Get("nope", false); err == nil {
		t.Error("Get of an unknown scenario: no error")
	}
	if s := Jobs(false); s.Units() != 300 || s.Validate() != nil {
		t.Errorf("Jobs: %d units (want 300), Validate() = %v", s.Units(), s.Validate())
	}
	for short, want := range map[bool]int{false: 96, true: 36} {
		if s := Topology(short); s.Units() != want || s.ClusterCPU != 256 || s.Validate() != nil {
			t.Errorf("Topology(short %v): %d units (want %d), cluster %d cpu (want 256), Validate() = %v", short, s.Units(), want, s.ClusterCPU, s.Validate())
		}
	}
}

// TestRacksLabelHostsRackByRack: node i's block and rack, hosts numbered
// rack by rack and racks block by block, each rack's name unique.
func TestRacksLabelHostsRackByRack(t *testing.T) {
	r := Racks{Blocks: 2, RacksPerBlock: 4, HostsPerRack: 8, HostCPU: 4}
	got := map[int][2]string{}
	for _, i := range []int{0, 7, 8, 31, 32, 63} {
		block, rack := r.Labels(i)
		got[i] = [2]string{block, rack}
	}
	want := map[int][2]string{
		0: {"b0", "b0-r0"}, 7: {"b0", "b0-r0"}, 8: {"b0", "b0-r1"},
		31: {"b0", "b0-r3"}, 32: {"b1", "b1-r0"}, 63: {"b1", "b1-r3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("block and rack by node (-want +got):\n%s", diff)
	}
	if r.Nodes() != 64 {
		t.Errorf("Nodes() = %d, want 64", r.Nodes())
	}
}

func TestBaselineQuotaTree(t *testing.T) {
	s := Baseline(false)
	var parents, children int
	for _, q := range s.Quotas {
		switch {
		case q.Parent == "":
			parents++
			if q.Min != 120 || q.Max != 120 || !s.IsParent(q.Name) {
				t.Errorf("parent %s: min %d max %d, want 120 and 120 with children", q.Name, q.Min, q.Max)
			}
		default:
			children++
			if q.Nominal() != 20 || q.Max != 120 || !q.Preemption {
				t.Errorf("child %s: nominal %d max %d preemption %v, want 20, 120 (borrowing 100) and preemption", q.Name, q.Nominal(), q.Max, q.Preemption)
			}
		}
	}
	if parents != 5 || children != 30 {
		t.Errorf("%d parents and %d children, want 5 and 30", parents, children)
	}
	if diff := cmp.Diff([]string{"small", "medium", "large"}, s.Classes()); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}
}

// TestLargeScaleQuotaTree: Kueue's 10 cohorts of 100 ClusterQueues
// (nominal quota 20, borrowing limit 100) are 10 parents of 100 leaves of
// min 20 and max 120, each parent's min and max the sum of its leaves'
// nominal quotas; per leaf 35 small, 11 medium and 4 large units.
func TestLargeScaleQuotaTree(t *testing.T) {
	s := LargeScale(false)
	var parents, leaves int
	for _, q := range s.Quotas {
		switch {
		case q.Parent == "":
			parents++
			if q.Min != 2000 || q.Max != 2000 || !s.IsParent(q.Name) {
				t.Errorf("parent %s: min %d max %d, want 2000 and 2000 with children", q.Name, q.Min, q.Max)
			}
		default:
			leaves++
			if q.Nominal() != 20 || q.Max-q.Min != 100 || !q.Preemption {
				t.Errorf("leaf %s: nominal %d, borrowing %d, preemption %v; want 20, 100 and preemption", q.Name, q.Nominal(), q.Max-q.Min, q.Preemption)
			}
		}
	}
	if parents != 10 || leaves != 1000 {
		t.Errorf("%d parents and %d leaves, want 10 and 1000", parents, leaves)
	}
	got := map[string][2]int64{}
	for _, set := range s.Sets {
		got[set.Class.Name] = [2]int64{int64(set.Count), set.Class.CPU}
	}
	want := map[string][2]int64{"small": {35, 1}, "medium": {11, 5}, "large": {4, 20}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units per leaf and cpu by class (-want +got):\n%s", diff)
	}
	// Kueue's wall is 18% over the write budget's bound; koord-queue's
	// bound is within 5% of it.
	bound := s.WriteBound()
	if bound != 998*time.Second || s.Bounds.MaxWall > bound*105/100 || s.Bounds.MaxWall < bound {
		t.Errorf("MaxWall %v, want within 5%% over the write bound %v", s.Bounds.MaxWall, bound)
	}
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		s    Scenario
		want []string
	}{
		"a parent listed after its child": {
			s: Scenario{Name: "x", QPS: 1, Burst: 1, Quotas: []Quota{{Name: "c", Parent: "p", Max: 1}, {Name: "p", Max: 1}},
				Sets: []Set{{Class: Class{CPU: 1}, Count: 1}}},
			want: []string{"parent p must be listed before it"},
		},
		"min above max and a class larger than a leaf": {
			s: Scenario{Name: "x", QPS: 1, Burst: 1, Quotas: []Quota{{Name: "q", Min: 2, Max: 1}},
				Sets: []Set{{Class: Class{Name: "big", CPU: 4}, Count: 1}}},
			want: []string{"min 2 above max 1", "class big asks 4 cpu"},
		},
		"a declared run time not above the runtime, or not whole seconds": {
			s: Scenario{Name: "x", QPS: 1, Burst: 1, Quotas: []Quota{{Name: "q", Max: 1}}, Sets: []Set{
				{Class: Class{Name: "early", CPU: 1, Runtime: 10 * time.Second, Declared: 10 * time.Second}, Count: 1},
				{Class: Class{Name: "fraction", CPU: 1, Runtime: time.Second, Declared: 1500 * time.Millisecond}, Count: 1},
			}},
			want: []string{"class early declares 10s", "class fraction declares 1.5s"},
		},
		"a Job larger than a rack, or whose cpu its pods cannot share": {
			s: Scenario{Name: "x", QPS: 1, Burst: 1, Quotas: []Quota{{Name: "q", Max: 100}},
				Racks: &Racks{Blocks: 1, RacksPerBlock: 2, HostsPerRack: 2, HostCPU: 4}, Sets: []Set{
					{Class: Class{Name: "wide", CPU: 12, Pods: 12}, Count: 1},
					{Class: Class{Name: "odd", CPU: 5, Pods: 2}, Count: 1},
				}},
			want: []string{"class wide asks 12 cpu, more than a rack's 8", "class odd: 5 cpu do not share evenly among 2 pods"},
		},
		"no units and no budget": {
			s:    Scenario{Name: "x", Quotas: []Quota{{Name: "q", Max: 1}}},
			want: []string{"no units", "QPS and burst must be positive"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.s.Validate()
			if err == nil {
				t.Fatal("Validate() = nil")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to say %q", err, w)
				}
			}
		})
	}
}
