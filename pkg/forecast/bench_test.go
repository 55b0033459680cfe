package forecast_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/koord-queue/koord-queue/pkg/forecast"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	st "github.com/koord-queue/koord-queue/pkg/scheduler/schedtest"
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
