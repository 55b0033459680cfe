package forecast_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/forecast"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
	"github.com/koord-queue/koord-queue/pkg/topology"
)

var now = st.T0.Add(time.Hour)

// running is a unit admitted at st.T0 that runs for runtime in all.
func running(key, q, cpu string, runtime time.Duration, basis forecast.Basis) forecast.Unit {
	u := st.MakeUnit(key, q).Request("cpu", cpu).Admitted(0).Obj()
	u.AdmitTime = st.T0
	return forecast.Unit{Unit: u, Runtime: runtime, Basis: basis}
}

// waiting is a unit enqueued at st.T0 plus after, that runs for runtime.
func waiting(key, q, cpu string, prio int32, after, runtime time.Duration, basis forecast.Basis) forecast.Unit {
	u := st.MakeUnit(key, q).Request("cpu", cpu).Priority(prio).Obj()
	u.EnqueueTime = st.T0.Add(after)
	return forecast.Unit{Unit: u, Runtime: runtime, Basis: basis}
}

func at(d time.Duration) time.Time { return now.Add(d) }

func TestRun(t *testing.T) {
	team := []quota.Spec{qt.MakeSpec("team").Max("cpu", "4").Obj()}
	priority := []scheduler.QueueSpec{st.MakeQueue("team").Obj()}
	block := []scheduler.QueueSpec{st.MakeQueue("team").Policy(schedulingv1alpha1.QueuePolicyBlock).Obj()}
	cases := map[string]struct {
		queues []scheduler.QueueSpec
		units  []forecast.Unit
		want   map[string]forecast.Estimate
	}{
		"a unit that fits is admitted now": {
			queues: priority,
			units:  []forecast.Unit{waiting("ns/a", "team", "4", 0, 0, time.Minute, forecast.Unknown)},
			want:   map[string]forecast.Estimate{"ns/a": {At: now, Basis: forecast.Declared}},
		},
		"units follow each other as the ones before them end": {
			queues: block,
			units: []forecast.Unit{
				running("ns/r", "team", "4", 70*time.Minute, forecast.Declared), // ends 10 min from now
				waiting("ns/a", "team", "4", 0, 0, 5*time.Minute, forecast.Declared),
				waiting("ns/b", "team", "4", 0, time.Second, 3*time.Minute, forecast.Learned),
				waiting("ns/c", "team", "4", 0, 2*time.Second, time.Minute, forecast.Declared),
			},
			want: map[string]forecast.Estimate{
				"ns/a": {At: at(10 * time.Minute), Basis: forecast.Declared},
				"ns/b": {At: at(15 * time.Minute), Basis: forecast.Declared},
				"ns/c": {At: at(18 * time.Minute), Basis: forecast.Learned},
			},
		},
		"a unit over its time ends as the replay starts": {
			queues: block,
			units: []forecast.Unit{
				running("ns/r", "team", "4", 30*time.Minute, forecast.Declared),
				waiting("ns/a", "team", "4", 0, 0, time.Minute, forecast.Declared),
			},
			want: map[string]forecast.Estimate{"ns/a": {At: now, Basis: forecast.Declared}},
		},
		"behind a unit whose end is unknown there is no time": {
			queues: block,
			units: []forecast.Unit{
				running("ns/r", "team", "4", 0, forecast.Unknown),
				waiting("ns/a", "team", "4", 0, 0, time.Minute, forecast.Declared),
			},
			want: map[string]forecast.Estimate{"ns/a": {Basis: forecast.Unknown}},
		},
		"priority orders the replay": {
			queues: priority,
			units: []forecast.Unit{
				running("ns/r", "team", "4", 70*time.Minute, forecast.Declared),
				waiting("ns/low", "team", "4", 1, 0, 5*time.Minute, forecast.Declared),
				waiting("ns/high", "team", "4", 9, time.Second, 5*time.Minute, forecast.Declared),
			},
			want: map[string]forecast.Estimate{
				"ns/high": {At: at(10 * time.Minute), Basis: forecast.Declared},
				"ns/low":  {At: at(15 * time.Minute), Basis: forecast.Declared},
			},
		},
		"a small unit passes a head that does not fit (Priority)": {
			queues: priority,
			units: []forecast.Unit{
				running("ns/r", "team", "2", 70*time.Minute, forecast.Declared),
				waiting("ns/big", "team", "4", 0, 0, 5*time.Minute, forecast.Declared),
				waiting("ns/small", "team", "2", 0, time.Second, 5*time.Minute, forecast.Declared),
			},
			want: map[string]forecast.Estimate{
				"ns/small": {At: now, Basis: forecast.Declared},
				"ns/big":   {At: at(10 * time.Minute), Basis: forecast.Declared},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := forecast.Run(forecast.Input{Now: now, Capacity: qt.Res("cpu", "100"), Quotas: team, Queues: tc.queues, Units: tc.units})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunStopsAtTheHorizon: a unit admitted only after the horizon gets no
// time.
func TestRunStopsAtTheHorizon(t *testing.T) {
	got := forecast.Run(forecast.Input{
		Now: now, Capacity: qt.Res("cpu", "100"),
		Quotas: []quota.Spec{qt.MakeSpec("team").Max("cpu", "4").Obj()},
		Queues: []scheduler.QueueSpec{st.MakeQueue("team").Obj()},
		Units: []forecast.Unit{
			running("ns/r", "team", "4", 70*time.Minute, forecast.Declared),
			waiting("ns/a", "team", "4", 0, 0, time.Minute, forecast.Declared),
		},
		Horizon: 5 * time.Minute,
	})
	if diff := cmp.Diff(map[string]forecast.Estimate{"ns/a": {Basis: forecast.Unknown}}, got); diff != "" {
		t.Errorf("Run (-want +got):\n%s", diff)
	}
}

// TestPropertyForecastMatchesTheReplay: on random single-quota worlds whose
// runtimes are all declared, every unit gets a time no earlier than now,
// and running the same world through a scheduler, cycle by cycle at each
// end, admits each unit exactly when the forecast said.
func TestPropertyForecastMatchesTheReplay(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		quotas := []quota.Spec{qt.MakeSpec("team").Max("cpu", fmt.Sprint(2+rng.IntN(6))).Obj()}
		queues := []scheduler.QueueSpec{st.MakeQueue("team").Obj()}
		if rng.IntN(2) == 0 {
			queues = []scheduler.QueueSpec{st.MakeQueue("team").Policy(schedulingv1alpha1.QueuePolicyBlock).Obj()}
		}
		var units []forecast.Unit
		for i := range 1 + rng.IntN(12) {
			runtime := time.Duration(1+rng.IntN(30)) * time.Minute
			units = append(units, waiting(fmt.Sprintf("ns/u%02d", i), "team", fmt.Sprint(1+rng.IntN(2)), int32(rng.IntN(3)), time.Duration(i)*time.Second, runtime, forecast.Declared))
		}
		in := forecast.Input{Now: now, Capacity: qt.Res("cpu", "100"), Quotas: quotas, Queues: queues, Units: units}
		got := forecast.Run(in)
		want := replay(t, in)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("seed %d: forecast (-replay +forecast):\n%s", seed, diff)
		}
		for k, e := range got {
			if e.At.Before(now) {
				t.Fatalf("seed %d: %s forecast at %v, before now %v", seed, k, e.At, now)
			}
		}
	}
}

// replay runs in through a scheduler the way a cluster would, the ends
// found by scanning every admitted unit at each step (no heap): the
// reference the forecast is checked against.
func replay(t *testing.T, in forecast.Input) map[string]forecast.Estimate {
	t.Helper()
	s := scheduler.New()
	s.SetClusterCapacity(in.Capacity)
	s.UpsertQuotas(in.Quotas)
	for _, q := range in.Queues {
		s.UpsertQueue(q)
	}
	runtime := map[string]time.Duration{}
	for _, u := range in.Units {
		if err := s.UpsertUnit(u.Unit); err != nil {
			t.Fatal(err)
		}
		runtime[u.Key] = u.Runtime
	}
	out := map[string]forecast.Estimate{}
	endsAt := map[string]time.Time{}
	clock := in.Now
	for len(out) < len(in.Units) {
		for {
			res := s.Cycle(clock)
			for _, a := range res.Admissions {
				out[a.Unit] = forecast.Estimate{At: clock, Basis: forecast.Declared}
				endsAt[a.Unit] = clock.Add(runtime[a.Unit])
			}
			if len(res.Admissions) == 0 && !res.More {
				break
			}
		}
		var next time.Time
		for _, e := range endsAt {
			if next.IsZero() || e.Before(next) {
				next = e
			}
		}
		if next.IsZero() {
			t.Fatalf("nothing runs, and %d units wait", len(in.Units)-len(out))
		}
		clock = next
		for k, e := range endsAt {
			if !e.After(clock) {
				s.DeleteUnit(k)
				delete(endsAt, k)
			}
		}
	}
	return out
}

// TestRunWithTopology: a unit whose pod sets ask for a topology level is
// forecast when one domain has room for its pods, not when its quota has.
// Two racks of two 4-cpu hosts; pods of no unit hold host-b1 throughout
// (4,000 milli-cpu).
func TestRunWithTopology(t *testing.T) {
	nodes := func(units map[string]topology.Unit) *topology.Cluster {
		c := &topology.Cluster{
			Topologies: map[string]topology.Levels{"default": {Topology: "default", Labels: []string{"rack", "host"}}},
			Resources:  []corev1.ResourceName{corev1.ResourceCPU},
			Held:       []topology.Holding{{Node: "host-b1", Amounts: []int64{4000}}},
			Units:      units,
		}
		for _, name := range []string{"host-a1", "host-a2", "host-b1", "host-b2"} {
			c.Nodes = append(c.Nodes, topology.Node{Name: name, Schedulable: true, Allocatable: qt.Res("cpu", "4"),
				Labels: map[string]string{"rack": "rack-" + name[5:6], "host": name}})
		}
		return c
	}
	// inRack asks for pods of 4 cpu within one rack.
	inRack := func(pods int32) topology.Unit {
		return topology.Unit{Topology: "default", PodSets: []topology.PodSet{{Name: "main", Count: pods, PerPod: qt.Res("cpu", "4"),
			Ask: topology.Ask{Level: "rack", Required: true}}}}
	}
	// onRackA is a running unit whose pods fill rack a.
	onRackA := topology.Unit{Held: []topology.Holding{{Node: "host-a1", Amounts: []int64{4000}}, {Node: "host-a2", Amounts: []int64{4000}}}}
	cases := map[string]struct {
		units []forecast.Unit
		nodes map[string]topology.Unit
		want  map[string]forecast.Estimate
	}{
		"a unit asking for a rack waits for the unit that fills it, though its quota has room": {
			units: []forecast.Unit{
				running("ns/r", "team", "8", 70*time.Minute, forecast.Declared), // ends 10 min from now
				waiting("ns/a", "team", "8", 0, 0, time.Minute, forecast.Declared),
			},
			nodes: map[string]topology.Unit{"ns/r": onRackA, "ns/a": inRack(2)},
			want:  map[string]forecast.Estimate{"ns/a": {At: at(10 * time.Minute), Basis: forecast.Declared}},
		},
		"a unit the replay places holds its rack until it ends": {
			units: []forecast.Unit{
				waiting("ns/a", "team", "8", 0, 0, 5*time.Minute, forecast.Declared),
				waiting("ns/b", "team", "8", 0, time.Second, time.Minute, forecast.Declared),
			},
			nodes: map[string]topology.Unit{"ns/a": inRack(2), "ns/b": inRack(2)},
			want: map[string]forecast.Estimate{
				"ns/a": {At: now, Basis: forecast.Declared},
				"ns/b": {At: at(5 * time.Minute), Basis: forecast.Declared},
			},
		},
		"a unit that fits no rack even empty gets no time, and why": {
			units: []forecast.Unit{waiting("ns/a", "team", "12", 0, 0, time.Minute, forecast.Declared)},
			nodes: map[string]topology.Unit{"ns/a": inRack(3)},
			want: map[string]forecast.Estimate{"ns/a": {Basis: forecast.Unknown,
				Reason: "it would not fit even with no unit's pods on the nodes: needs 3 × 4 cpu within one `rack`; the largest free one has 2"}},
		},
		"behind a unit whose end is unknown there is no time, and no reason": {
			units: []forecast.Unit{
				running("ns/r", "team", "8", 0, forecast.Unknown),
				waiting("ns/a", "team", "8", 0, 0, time.Minute, forecast.Declared),
			},
			nodes: map[string]topology.Unit{"ns/r": onRackA, "ns/a": inRack(2)},
			want:  map[string]forecast.Estimate{"ns/a": {Basis: forecast.Unknown}},
		},
		"a unit asking for nothing passes one waiting for a rack": {
			units: []forecast.Unit{
				running("ns/r", "team", "8", 70*time.Minute, forecast.Declared),
				waiting("ns/a", "team", "8", 0, 0, time.Minute, forecast.Declared),
				waiting("ns/plain", "team", "4", 0, time.Second, time.Minute, forecast.Declared),
			},
			nodes: map[string]topology.Unit{"ns/r": onRackA, "ns/a": inRack(2)},
			want: map[string]forecast.Estimate{
				"ns/a":     {At: at(10 * time.Minute), Basis: forecast.Declared},
				"ns/plain": {At: now, Basis: forecast.Declared},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := forecast.Input{Now: now, Capacity: qt.Res("cpu", "100"),
				Quotas: []quota.Spec{qt.MakeSpec("team").Max("cpu", "100").Obj()},
				Queues: []scheduler.QueueSpec{st.MakeQueue("team").Obj()},
				Units:  tc.units, Nodes: nodes(tc.nodes)}
			got := forecast.Run(in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got, forecast.Run(in)); diff != "" {
				t.Errorf("Run again on the same input (-first +second):\n%s", diff)
			}
		})
	}
}
