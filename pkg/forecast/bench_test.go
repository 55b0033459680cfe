package forecast_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/forecast"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
	"github.com/koord-queue/koord-queue/pkg/testing/heap"
	"github.com/koord-queue/koord-queue/pkg/topology"
)

// BenchmarkRun15000Waiting forecasts issue 33's scale: 100 quotas of max 8
// cpu, each full with two running 4-cpu units, and 150 units waiting in
// each (15,000 in all) with declared or learned runtimes. The target is at
// most 1 s of CPU per forecast.
func BenchmarkRun15000Waiting(b *testing.B) {
	in := forecast.Input{Now: now, Capacity: qt.Res("cpu", "100000")}
	for q := range 100 {
		name := fmt.Sprintf("team-%03d", q)
		in.Quotas = append(in.Quotas, qt.MakeSpec(name).Max("cpu", "8").Obj())
		in.Queues = append(in.Queues, st.MakeQueue(name).Obj())
		for r := range 2 {
			in.Units = append(in.Units, running(fmt.Sprintf("ns/%s-run-%d", name, r), name, "4", time.Duration(61+r)*time.Minute, forecast.Declared))
		}
		for w := range 150 {
			basis := forecast.Declared
			if w%3 == 0 {
				basis = forecast.Learned
			}
			in.Units = append(in.Units, waiting(fmt.Sprintf("ns/%s-%03d", name, w), name, fmt.Sprint(1+w%4), int32(w%5), time.Duration(w)*time.Second, time.Duration(5+w%20)*time.Minute, basis))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		got := forecast.Run(in)
		if len(got) != 15000 {
			b.Fatalf("%d estimates, want 15000", len(got))
		}
	}
}

// BenchmarkReplayMemory reports what a forecast holds at its largest (its
// replay set up, before the first cycle) at Kueue's large-scale shape, and
// what its input holds, in live bytes per unit: 10 parents of 100 quotas
// each, per quota 5 running units and 45 waiting (35 of 1 cpu, 7 of 5, 3
// of 20): 50,000 units. Units of a size share their request, as the live
// core's units share the informer's interned lists. The replay keeps
// nothing of its input's units, so the caller's input is garbage while it
// runs.
func BenchmarkReplayMemory(b *testing.B) {
	var input, replay float64
	for b.Loop() {
		start := heap.Live()
		in := largeScaleInput()
		withInput := heap.Live()
		r := forecast.SetUp(in)
		set := heap.Live() // nothing reads in after SetUp: it is garbage

		runtime.KeepAlive(r)
		input += float64(withInput-start) / float64(largeScaleUnits)
		replay += float64(set-start) / float64(largeScaleUnits)
	}
	b.ReportMetric(input/float64(b.N), "input-bytes/unit")
	b.ReportMetric(replay/float64(b.N), "replay-bytes/unit")
}

const largeScaleUnits = 10 * 100 * 50

func largeScaleInput() forecast.Input {
	in := forecast.Input{Now: now, Capacity: qt.Res("cpu", "100000"), Horizon: 7 * 24 * time.Hour}
	for p := range 10 {
		parent := fmt.Sprintf("parent-%d", p)
		in.Quotas = append(in.Quotas, qt.MakeSpec(parent).IsParent().Min("cpu", "2000").Max("cpu", "2000").Obj())
		for c := range 100 {
			name := fmt.Sprintf("cq-%d-%d", p, c)
			in.Quotas = append(in.Quotas, qt.MakeSpec(name).Parent(parent).Min("cpu", "5").Max("cpu", "5").Obj())
			in.Queues = append(in.Queues, st.MakeQueue(name).Preemption().Obj())
			for r := range 5 {
				in.Units = append(in.Units, running(fmt.Sprintf("perf-%s/running-%d", name, r), name, "1", time.Duration(61+r)*time.Minute, forecast.Learned))
			}
			for w := range 45 {
				cpu, prio := "1", int32(50)
				switch {
				case w%15 == 0:
					cpu, prio = "20", 200
				case w%15 < 3:
					cpu, prio = "5", 100
				}
				in.Units = append(in.Units, waiting(fmt.Sprintf("perf-%s/unit-%05d", name, w), name, cpu, prio, time.Duration(w)*time.Second, time.Duration(1+w%3)*time.Second, forecast.Learned))
			}
		}
	}
	requests := map[string]corev1.ResourceList{}
	for i := range in.Units {
		u := &in.Units[i].Unit
		cpu := u.Request.Cpu().String()
		if requests[cpu] == nil {
			requests[cpu] = u.Request
		}
		u.Request = requests[cpu]
	}
	return in
}

// BenchmarkRun15000WaitingInRacks is BenchmarkRun15000Waiting with every
// unit asking for a rack: 200 racks of 4 hosts of 8 cpu, each running
// unit's 4-cpu pod on a host of its own, and each waiting unit's cpu as as
// many 1-cpu pods within one rack. The racks have room to spare: it
// measures what placing costs the replay, not a different answer.
func BenchmarkRun15000WaitingInRacks(b *testing.B) {
	in := forecast.Input{Now: now, Capacity: qt.Res("cpu", "100000")}
	cluster := &topology.Cluster{Topologies: map[string]topology.Levels{"racks": {Topology: "racks", Labels: []string{"rack", "host"}}},
		Resources: []corev1.ResourceName{corev1.ResourceCPU}, Units: map[string]topology.Unit{}}
	for h := range 800 {
		host := fmt.Sprintf("host-%03d", h)
		cluster.Nodes = append(cluster.Nodes, topology.Node{Name: host, Schedulable: true, Allocatable: qt.Res("cpu", "8"),
			Labels: map[string]string{"rack": fmt.Sprintf("rack-%03d", h/4), "host": host}})
	}
	inRack := func(pods int) topology.Unit {
		return topology.Unit{Topology: "racks", PodSets: []topology.PodSet{{Name: "main", Count: int32(pods), PerPod: qt.Res("cpu", "1"),
			Ask: topology.Ask{Level: "rack", Required: true}}}}
	}
	for q := range 100 {
		name := fmt.Sprintf("team-%03d", q)
		in.Quotas = append(in.Quotas, qt.MakeSpec(name).Max("cpu", "8").Obj())
		in.Queues = append(in.Queues, st.MakeQueue(name).Obj())
		for r := range 2 {
			key := fmt.Sprintf("ns/%s-run-%d", name, r)
			in.Units = append(in.Units, running(key, name, "4", time.Duration(61+r)*time.Minute, forecast.Declared))
			cluster.Units[key] = topology.Unit{Held: []topology.Holding{{Node: fmt.Sprintf("host-%03d", 2*q+r), Amounts: []int64{4000}}}}
		}
		for w := range 150 {
			basis := forecast.Declared
			if w%3 == 0 {
				basis = forecast.Learned
			}
			key := fmt.Sprintf("ns/%s-%03d", name, w)
			in.Units = append(in.Units, waiting(key, name, fmt.Sprint(1+w%4), int32(w%5), time.Duration(w)*time.Second, time.Duration(5+w%20)*time.Minute, basis))
			cluster.Units[key] = inRack(1 + w%4)
		}
	}
	in.Nodes = cluster
	b.ReportAllocs()
	for b.Loop() {
		got := forecast.Run(in)
		if len(got) != 15000 {
			b.Fatalf("%d estimates, want 15000", len(got))
		}
	}
}
