package quota_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
)

// madeUp is a request for cpu and n resource names no quota and no node
// names, as a tenant may write them.
func madeUp(cpu string, n int) corev1.ResourceList {
	pairs := []string{"cpu", cpu}
	for i := range n {
		pairs = append(pairs, fmt.Sprintf("example.com/made-up-%d", i), "1000")
	}
	return qt.Res(pairs...)
}

// TestOnlyNamedResourcesWidenTheEngine: a resource name that no quota's min
// or max and not the cluster's capacity names is not limited (koord-scheduler
// masks a request to the names in the quota's max): it neither widens the
// engine's vectors nor holds the unit back.
func TestOnlyNamedResourcesWidenTheEngine(t *testing.T) {
	type result struct {
		Width int
		Fits  bool
		Used  map[string]string
	}
	cases := []struct {
		name  string
		cap   corev1.ResourceList
		specs []quota.Spec
		req   corev1.ResourceList
		want  result
	}{
		{
			name:  "a quota naming cpu only admits by cpu alone",
			specs: []quota.Spec{qt.MakeSpec("a").Max("cpu", "4").Obj()},
			req:   madeUp("2", 15),
			want:  result{Width: 1, Fits: true, Used: map[string]string{"cpu": "2"}},
		},
		{
			name:  "names the cluster does not have do not hold the unit back",
			cap:   qt.Res("cpu", "8"),
			specs: []quota.Spec{qt.MakeSpec("a").Max("cpu", "4").Obj()},
			req:   madeUp("2", 15),
			want:  result{Width: 1, Fits: true, Used: map[string]string{"cpu": "2"}},
		},
		{
			name:  "a name the cluster's capacity names is counted",
			cap:   qt.Res("cpu", "8", "nvidia.com/gpu", "2"),
			specs: []quota.Spec{qt.MakeSpec("a").Max("cpu", "4").Obj()},
			req:   qt.Res("cpu", "1", "nvidia.com/gpu", "4", "example.com/made-up", "1"),
			want:  result{Width: 2, Fits: false, Used: map[string]string{"cpu": "1", "nvidia.com/gpu": "4"}},
		},
		{
			name: "a name another quota names is counted, unlimited where not named",
			specs: []quota.Spec{
				qt.MakeSpec("a").Max("cpu", "4").Obj(),
				qt.MakeSpec("b").Max("cpu", "4", "example.com/fpga", "1").Obj(),
			},
			req:  qt.Res("cpu", "1", "example.com/fpga", "3", "example.com/made-up", "1"),
			want: result{Width: 2, Fits: true, Used: map[string]string{"cpu": "1", "example.com/fpga": "3"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, tc.cap, tc.specs, nil)
			req := e.Vector(tc.req)
			free, _, err := e.Headroom("a", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			fits := quota.Fits(req, free)
			if err := e.Charge(quota.Charge{Key: "ns/u", Quota: "a", Request: req}); err != nil {
				t.Fatal(err)
			}
			got := result{Width: e.Len(), Fits: fits, Used: str(e.Used("a"))}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestVectorOfANameNamedLater: once a quota names a resource, vectors made
// from then on count it; those made before stay valid (zero past their end).
func TestVectorOfANameNamedLater(t *testing.T) {
	e := newEngine(t, nil, []quota.Spec{qt.MakeSpec("a").Max("cpu", "4").Obj()}, nil)
	req := qt.Res("cpu", "1", "example.com/fpga", "3")
	before := e.Vector(req)
	e.UpsertQuota(qt.MakeSpec("a").Max("cpu", "4", "example.com/fpga", "2").Obj())
	after := e.Vector(req)
	got := []any{len(before), e.Len(), str(e.ResourceList(after))}
	want := []any{1, 2, map[string]string{"cpu": "1", "example.com/fpga": "3"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// BenchmarkMadeUpResourceNames admits 10,000 units, each asking cpu and 16
// resource names nothing names, and reports the heap the engine holds per
// unit and its width, against the same units asking cpu only.
func BenchmarkMadeUpResourceNames(b *testing.B) {
	const units, names = 10000, 16
	for _, bc := range []struct {
		name  string
		names int
		// distinct: every unit has names of its own (the worst case).
		distinct bool
	}{
		{name: "real names only"},
		{name: "16 shared made-up names", names: names},
		{name: "16 made-up names per unit", names: names, distinct: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			reqs := make([]corev1.ResourceList, units)
			for i := range reqs {
				pairs := []string{"cpu", "1", "memory", "1Gi"}
				for j := range bc.names {
					n := fmt.Sprintf("example.com/made-up-%d", j)
					if bc.distinct {
						n = fmt.Sprintf("example.com/u%d-made-up-%d", i, j)
					}
					pairs = append(pairs, n, "1")
				}
				reqs[i] = qt.Res(pairs...)
			}
			var perUnit float64
			width := 0
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				e := quota.NewEngine()
				e.SetClusterCapacity(qt.Res("cpu", "100000", "memory", "100000Gi"))
				e.UpsertQuota(qt.MakeSpec("a").Max("cpu", "100000", "memory", "100000Gi").Obj())
				for i, r := range reqs {
					req := e.Vector(r)
					if err := e.Charge(quota.Charge{Key: fmt.Sprintf("ns/u%d", i), Quota: "a", Request: req,
						AdmitTime: time.Unix(int64(i), 0)}); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perUnit = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / units
				width = e.Len()
				runtime.KeepAlive(e)
			}
			b.ReportMetric(perUnit, "heap-B/unit")
			b.ReportMetric(float64(width), "width")
		})
	}
}
