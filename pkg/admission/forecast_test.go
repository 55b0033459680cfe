package admission

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/forecast"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// TestEstimates: a waiting unit's forecast follows the declared limit of
// the unit holding its quota, or what the quota's finished units ran; it is
// served again within ForecastInterval and computed afresh after it.
func TestEstimates(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	admitted := func(name string, limit *int32) *schedulingv1alpha1.QueueUnit {
		u := wrappers.MakeQueueUnit(name, "ns").Quota("team").Request(corev1.ResourceCPU, "4").Obj()
		u.Spec.MaximumExecutionTimeSeconds = limit
		queueunit.Admit(u, "team", queueunit.Request(u), nil, nil, metav1.NewTime(t0))
		u.Status.Phase = schedulingv1alpha1.Running
		return u
	}
	setUp := func(running *schedulingv1alpha1.QueueUnit) *Cache {
		c := NewCache()
		c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "ns").Max(corev1.ResourceCPU, "4").Obj())
		c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
		c.UpsertNode(wrappers.Node("n1", "32", "64Gi"))
		c.UpsertUnit(running)
		c.UpsertUnit(wrappers.MakeQueueUnit("next", "ns").Quota("team").Request(corev1.ResourceCPU, "4").Obj())
		return c
	}
	now := t0.Add(2 * time.Minute)

	t.Run("declared, and shown in the views", func(t *testing.T) {
		c := setUp(admitted("running", ptr.To[int32](600)))
		want := map[string]forecast.Estimate{"ns/next": {At: t0.Add(10 * time.Minute), Basis: forecast.Declared}}
		if diff := cmp.Diff(want, c.forecasts.RefreshEstimates(now)); diff != "" {
			t.Errorf("Estimates (-want +got):\n%s", diff)
		}
		c.forecasts.showEstimates, c.forecasts.now = true, func() time.Time { return now }
		units, _ := c.QueueUnits("team", "", 0, 0)
		one, _ := c.QueueUnit("ns", "next")
		for _, v := range append(units, one) {
			if v.Name != "next" {
				continue
			}
			if v.EstimatedAdmissionTime == nil || !v.EstimatedAdmissionTime.Time.Equal(t0.Add(10*time.Minute)) || v.EstimateBasis != "Declared" {
				t.Errorf("view of next: estimate %v (%s), want %v (Declared)", v.EstimatedAdmissionTime, v.EstimateBasis, t0.Add(10*time.Minute))
			}
		}
	})

	t.Run("learned from a finished unit", func(t *testing.T) {
		c := setUp(admitted("running", nil))
		if diff := cmp.Diff(map[string]forecast.Estimate{"ns/next": {Basis: forecast.Unknown}}, c.forecasts.RefreshEstimates(now)); diff != "" {
			t.Errorf("nothing learned yet (-want +got):\n%s", diff)
		}
		done := admitted("done", nil)
		done.Status.Phase, done.Status.Admissions = schedulingv1alpha1.Succeed, nil
		done.Status.LastUpdateTime = ptr.To(metav1.NewTime(t0.Add(-time.Hour)))
		done.Status.LastAllocateTime = ptr.To(metav1.NewTime(t0.Add(-time.Hour - 20*time.Minute)))
		c.UpsertUnit(done)
		if diff := cmp.Diff(map[string]forecast.Estimate{"ns/next": {Basis: forecast.Unknown}}, c.forecasts.RefreshEstimates(now.Add(time.Second))); diff != "" {
			t.Errorf("within ForecastInterval, the forecast served again (-want +got):\n%s", diff)
		}
		want := map[string]forecast.Estimate{"ns/next": {At: t0.Add(20 * time.Minute), Basis: forecast.Learned}}
		if diff := cmp.Diff(want, c.forecasts.RefreshEstimates(now.Add(ForecastInterval))); diff != "" {
			t.Errorf("after ForecastInterval (-want +got):\n%s", diff)
		}
	})
}

func TestForecastMetrics(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	got := forecastMetrics(map[string]forecast.Estimate{
		"ns/a": {At: now, Basis: forecast.Declared},
		"ns/b": {At: now.Add(10 * time.Minute), Basis: forecast.Declared},
		"ns/c": {At: now.Add(2 * time.Hour), Basis: forecast.Learned},
		"ns/d": {Basis: forecast.Unknown},
	}, now)
	var lines []string
	for _, m := range got {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		switch {
		case pb.Gauge != nil:
			lines = append(lines, fmt.Sprintf("unknown %v", pb.Gauge.GetValue()))
		case pb.Histogram != nil:
			h := pb.Histogram
			line := fmt.Sprintf("%s count %d sum %v", pb.Label[0].GetValue(), h.GetSampleCount(), h.GetSampleSum())
			for _, b := range h.Bucket {
				if b.GetUpperBound() == 900 || b.GetUpperBound() == 3*3600 {
					line += fmt.Sprintf(" le%v=%d", b.GetUpperBound(), b.GetCumulativeCount())
				}
			}
			lines = append(lines, line)
		}
	}
	want := []string{
		"unknown 1",
		"Declared count 2 sum 600 le900=2 le10800=2",
		"Learned count 1 sum 7200 le900=0 le10800=1",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("forecast metrics (-want +got):\n%s", diff)
	}
}

// TestWhatIf: the forecast of a queue's waiting units with its quota's min
// or max changed, each named resource set and the others kept, and the live
// forecast left as it was.
func TestWhatIf(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	now := t0.Add(2 * time.Minute)
	setUp := func() *Cache {
		c := NewCache()
		c.forecasts.now = func() time.Time { return now }
		c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "ns").Max(corev1.ResourceCPU, "4").Max(corev1.ResourceMemory, "64Gi").Obj())
		c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
		c.UpsertNode(wrappers.Node("n1", "32", "64Gi"))
		running := wrappers.MakeQueueUnit("running", "ns").Quota("team").Request(corev1.ResourceCPU, "4").Obj()
		running.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](600)
		queueunit.Admit(running, "team", queueunit.Request(running), nil, nil, metav1.NewTime(t0))
		running.Status.Phase = schedulingv1alpha1.Running
		c.UpsertUnit(running)
		for _, name := range []string{"a", "b"} {
			u := wrappers.MakeQueueUnit(name, "ns").Quota("team").Request(corev1.ResourceCPU, "4").Obj()
			u.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](300)
			c.UpsertUnit(u)
		}
		return c
	}
	type estimate struct {
		Name  string
		At    time.Time
		Basis string
	}
	for name, tc := range map[string]struct {
		change  api.QuotaChange
		wantMax corev1.ResourceList
		want    []estimate
	}{
		"unchanged: each waits for the one before": {
			wantMax: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("64Gi")},
			want:    []estimate{{"a", t0.Add(10 * time.Minute), "Declared"}, {"b", t0.Add(15 * time.Minute), "Declared"}},
		},
		"max cpu 8: the first starts now": {
			change:  api.QuotaChange{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}},
			wantMax: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("64Gi")},
			want:    []estimate{{"a", now, "Declared"}, {"b", now.Add(5 * time.Minute), "Declared"}},
		},
		"max cpu 12: both start now": {
			change:  api.QuotaChange{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12")}},
			wantMax: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12"), corev1.ResourceMemory: resource.MustParse("64Gi")},
			want:    []estimate{{"a", now, "Declared"}, {"b", now, "Declared"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := setUp()
			got, ok, err := c.WhatIf("team", tc.change, everyone)
			if err != nil || !ok {
				t.Fatalf("WhatIf: %v, queue team found %v", err, ok)
			}
			if got.Queue != "team" || got.Quota != "team" {
				t.Errorf("queue %q, quota %q, want team and team", got.Queue, got.Quota)
			}
			if diff := cmp.Diff(tc.wantMax, got.Max); diff != "" {
				t.Errorf("max (-want +got):\n%s", diff)
			}
			var estimates []estimate
			for _, v := range got.Items {
				e := estimate{Name: v.Name, Basis: v.EstimateBasis}
				if v.EstimatedAdmissionTime != nil {
					e.At = v.EstimatedAdmissionTime.Time
				}
				estimates = append(estimates, e)
			}
			if diff := cmp.Diff(tc.want, estimates); diff != "" {
				t.Errorf("estimates (-want +got):\n%s", diff)
			}
			live := c.forecasts.RefreshEstimates(now)
			if at := live["ns/a"].At; !at.Equal(t0.Add(10 * time.Minute)) {
				t.Errorf("the live forecast of a after the what-if: %v, want %v", at, t0.Add(10*time.Minute))
			}
		})
	}
	if _, ok, _ := setUp().WhatIf("nobody", api.QuotaChange{}, everyone); ok {
		t.Error("WhatIf of a queue that does not exist: found")
	}
}

// everyone is the visible of a caller who may see every namespace.
func everyone(string) (bool, error) { return true, nil }

// TestWhatIfTellsNothingOfHiddenUnits: for a caller who may see namespace
// mine only, the what-if answers the same, whatever amount is asked, in
// two clusters that differ only in the sizes of theirs' units (one waiting
// ahead of mine's, one holding quota): nothing a tenant can ask tells it
// their sizes. An administrator who sees both namespaces gets the whole
// replay, which tells them apart.
func TestWhatIfTellsNothingOfHiddenUnits(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	now := t0.Add(2 * time.Minute)
	world := func(waiting, holding string) *Cache {
		c := NewCache()
		c.forecasts.now = func() time.Time { return now }
		c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "quotas").Max(corev1.ResourceCPU, "4").Obj())
		c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
		c.UpsertNode(wrappers.Node("n1", "64", "64Gi"))
		for _, r := range []struct{ ns, name, cpu string }{{"theirs", "holds", holding}, {"mine", "holds", "1"}} {
			u := wrappers.MakeQueueUnit(r.name, r.ns).Quota("team").Request(corev1.ResourceCPU, r.cpu).Obj()
			u.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](600)
			queueunit.Admit(u, "team", queueunit.Request(u), nil, nil, metav1.NewTime(t0))
			u.Status.Phase = schedulingv1alpha1.Running
			c.UpsertUnit(u)
		}
		for _, r := range []struct {
			ns, name, cpu string
			priority      int32
		}{{"theirs", "waits", waiting, 10}, {"mine", "waits", "1", 1}} {
			u := wrappers.MakeQueueUnit(r.name, r.ns).Quota("team").Request(corev1.ResourceCPU, r.cpu).Priority(r.priority).Obj()
			u.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](300)
			c.UpsertUnit(u)
		}
		return c
	}
	small, large := world("2345m", "1"), world("2346m", "2")
	mine := func(ns string) (bool, error) { return ns == "mine", nil }
	// seen is what the caller may see of an answer: their units whole,
	// the others as authz.Redact shows them.
	seen := func(w api.WhatIf, visible func(string) (bool, error)) api.WhatIf {
		for i, v := range w.Items {
			if ok, _ := visible(v.Namespace); !ok {
				w.Items[i] = api.UnitView{Queue: v.Queue, Phase: v.Phase, Priority: v.Priority, Position: v.Position, Redacted: true,
					EstimatedAdmissionTime: v.EstimatedAdmissionTime, EstimateBasis: v.EstimateBasis}
			}
		}
		return w
	}
	ask := func(c *Cache, cpu string, visible func(string) (bool, error)) api.WhatIf {
		t.Helper()
		change := api.QuotaChange{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
		w, ok, err := c.WhatIf("team", change, visible)
		if err != nil || !ok {
			t.Fatalf("WhatIf max cpu %s: %v, found %v", cpu, err, ok)
		}
		return seen(w, visible)
	}
	differ := 0
	for milli := 0; milli <= 8000; milli += 250 {
		cpu := fmt.Sprintf("%dm", milli)
		a, b := ask(small, cpu, mine), ask(large, cpu, mine)
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("max cpu %s: the tenant's answer depends on theirs' sizes (-small +large):\n%s", cpu, diff)
		}
		if !a.OnlyVisible || a.Items[0].EstimatedAdmissionTime != nil {
			t.Errorf("max cpu %s: onlyVisible %v, the hidden unit's estimate %v; want true and none", cpu, a.OnlyVisible, a.Items[0].EstimatedAdmissionTime)
		}
		if !cmp.Equal(ask(small, cpu, everyone), ask(large, cpu, everyone)) {
			differ++
		}
	}
	if differ == 0 {
		t.Error("the administrator's answers are the same in both clusters: the test tells nothing apart")
	}
	failing := func(string) (bool, error) { return false, errors.New("no SubjectAccessReview") }
	if _, _, err := small.WhatIf("team", api.QuotaChange{}, failing); err == nil {
		t.Error("WhatIf with a failing visible: no error")
	}
}

// BenchmarkForecastInput measures what a forecast's input costs to build
// at 50,000 waiting units of the harness's shape, under the admission lock
// and after: its allocations per forecast.
//
//	go test ./pkg/admission -run XXX -bench ForecastInput -benchtime 10x
func BenchmarkForecastInput(b *testing.B) {
	c := NewCache()
	c.UpsertNode(wrappers.Node("n1", "1000000", "1000Ti"))
	for q := range memoryQueues {
		name := fmt.Sprintf("team-%03d", q)
		c.UpsertElasticQuota(wrappers.MakeElasticQuota(name, "quotas").Max("cpu", "0").Obj())
		c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: name}})
	}
	t0 := time.Unix(1_000_000, 0)
	for i := range memoryUnits {
		u := harnessUnit(i)
		u.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(i) * time.Millisecond))
		c.UpsertUnit(u)
	}
	c.cycle(t0.Add(time.Hour), -1)
	b.ReportAllocs()
	for b.Loop() {
		if in := c.forecasts.forecastInput(t0.Add(time.Hour)); len(in.Units) != memoryUnits {
			b.Fatalf("%d units in the input, want %d", len(in.Units), memoryUnits)
		}
	}
}

// TestEstimatesOfUnitsAskingForARack: on two racks of two 2-cpu hosts, a
// unit asking for a rack is forecast when the running unit whose pods fill
// one rack ends, though its quota has room now; one no rack could ever
// hold gets no time and says why; one asking for nothing starts now.
func TestEstimatesOfUnitsAskingForARack(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	c := NewCache()
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("team", "team").Max(corev1.ResourceCPU, "100").
		Annotation(schedulingv1alpha1.AnnotationTopology, "racks").Obj())
	c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "team"}})
	c.topologies.UpsertTopology(wrappers.Topology("racks", rackLabel, hostLabel))
	for _, rack := range []string{"r1", "r2"} {
		for _, host := range []string{"h1", "h2"} {
			c.UpsertNode(rackNode(rack, rack+"-"+host))
		}
	}
	c.UpsertNode(wrappers.Node("in-no-rack", "100", "400Gi")) // the cluster's capacity is no limit
	running := rackUnit("running", 4).Obj()
	running.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](600)
	queueunit.Admit(running, "team", queueunit.Request(running), nil, nil, metav1.NewTime(t0))
	running.Status.Phase, running.Status.TopologyAssignments = schedulingv1alpha1.Running, rackAssignment("r1", 4)
	c.UpsertUnit(running)
	c.UpsertUnit(rackUnit("u", 4).Obj())
	c.UpsertUnit(rackUnit("huge", 5).Obj())
	c.UpsertUnit(wrappers.MakeQueueUnit("plain", "team").Quota("team").PodSet("main", 1, "cpu", "1").Obj())
	for i, host := range []string{"r1-h1", "r1-h1", "r1-h2", "r1-h2"} {
		c.UpsertPod(wrappers.MakePod(fmt.Sprintf("running-%d", i), "team").OfUnit("running", "main").Requests("cpu", "1").Node(host).Obj())
	}
	c.UpsertPod(wrappers.MakePod("other", "ns").Requests("cpu", "2").Node("r2-h1").Obj())

	want := map[string]forecast.Estimate{
		"team/u":     {At: t0.Add(10 * time.Minute), Basis: forecast.Declared},
		"team/plain": {At: t0.Add(2 * time.Minute), Basis: forecast.Declared},
		"team/huge": {Basis: forecast.Unknown,
			Reason: "it would not fit even with no unit's pods on the nodes: needs 5 × 1 cpu within one `example.com/rack`; the largest free one has 4"},
	}
	if diff := cmp.Diff(want, c.forecasts.RefreshEstimates(t0.Add(2*time.Minute))); diff != "" {
		t.Errorf("Estimates (-want +got):\n%s", diff)
	}
	c.forecasts.showEstimates, c.forecasts.now = true, func() time.Time { return t0.Add(2 * time.Minute) }
	if v, _ := c.QueueUnit("team", "huge"); v.EstimateReason != want["team/huge"].Reason || v.EstimatedAdmissionTime != nil {
		t.Errorf("view of huge: estimate %v, reason %q; want none, and %q", v.EstimatedAdmissionTime, v.EstimateReason, want["team/huge"].Reason)
	}
}
