package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// twoChildren: a parent of max 4 with children a and b of max 4 each.
func twoChildren(units int) *scenario.Scenario {
	return &scenario.Scenario{
		Name: "test", QPS: 1, Burst: 1, ClusterCPU: 10,
		Quotas: []scenario.Quota{
			{Name: "parent", Min: 4, Max: 4},
			{Name: "a", Parent: "parent", Min: 2, Max: 4},
			{Name: "b", Parent: "parent", Min: 2, Max: 4},
		},
		// units in all, whatever the leaves: the recorder is told how many.
		Sets: []scenario.Set{{Class: scenario.Class{Name: "c", CPU: 1}, Count: units}},
	}
}

func unit(name, quota string, cpu string) *schedulingv1alpha1.QueueUnit {
	return wrappers.MakeQueueUnit(name, "ns").Quota(quota).Label(LabelClass, "c").Request(corev1.ResourceCPU, cpu).Obj()
}

func admitted(u *schedulingv1alpha1.QueueUnit) *schedulingv1alpha1.QueueUnit {
	u = u.DeepCopy()
	u.Status.Phase = schedulingv1alpha1.Dequeued
	u.Status.Admissions = []schedulingv1alpha1.Admission{{Name: "main", Replicas: 1, Resources: corev1.ResourceList{corev1.ResourceCPU: u.Spec.Resource[corev1.ResourceCPU]}}}
	return u
}

// attempt is u as an admission numbered n was written.
func attempt(u *schedulingv1alpha1.QueueUnit, n int64) *schedulingv1alpha1.QueueUnit {
	u = u.DeepCopy()
	u.Status.Attempts = n
	return u
}

func evicted(u *schedulingv1alpha1.QueueUnit) *schedulingv1alpha1.QueueUnit {
	u = u.DeepCopy()
	u.Status.Phase = schedulingv1alpha1.Enqueued
	u.Status.Admissions = nil
	return u
}

func finished(u *schedulingv1alpha1.QueueUnit) *schedulingv1alpha1.QueueUnit {
	u = u.DeepCopy()
	u.Status.Phase = schedulingv1alpha1.Succeed
	u.Status.Admissions = nil
	return u
}

type step struct {
	at time.Duration
	u  *schedulingv1alpha1.QueueUnit
}

func TestRecorder(t *testing.T) {
	x, y, z := unit("x", "a", "2"), unit("y", "b", "2"), unit("z", "a", "1")
	cases := map[string]struct {
		units                  int
		steps                  []step
		wantOver               []OverAdmission
		wantClasses            []ClassResult
		wantAdmissions         int
		wantEvictions          int
		wantMoreThanOnce       int
		wantFinished           int
		wantUsage, wantBacklog float64
	}{
		"a unit admitted after a second and finished after two more": {
			units: 1,
			steps: []step{{0, x}, {time.Second, admitted(x)}, {3 * time.Second, finished(x)}},
			wantClasses: []ClassResult{{Name: "c", Count: 1, Admitted: 1,
				AvgToAdmission: 1, P50ToAdmission: 1, P90ToAdmission: 1, MaxToAdmission: 1, AvgToFinish: 3}},
			wantAdmissions: 1, wantFinished: 1,
			// a (nominal 2) holds 2 for 2 of 3 seconds; b (nominal 2) nothing: 4/12.
			wantUsage: 100 * 4.0 / 12,
			// x waited from 0 to 1 holding nothing.
			wantBacklog: 0,
		},
		"the parent's max binds across its children": {
			units: 3,
			steps: []step{{0, x}, {0, y}, {0, z}, {time.Second, admitted(x)}, {time.Second, admitted(y)}, {2 * time.Second, admitted(z)},
				{3 * time.Second, finished(x)}, {3 * time.Second, finished(y)}, {3 * time.Second, finished(z)}},
			wantOver: []OverAdmission{{AtSeconds: 2, Quota: "parent", UsedMilli: 5000, MaxMilli: 4000, Unit: "ns/z"}},
			wantClasses: []ClassResult{{Name: "c", Count: 3, Admitted: 3,
				AvgToAdmission: 4.0 / 3, P50ToAdmission: 1, P90ToAdmission: 2, MaxToAdmission: 2, AvgToFinish: 3}},
			wantAdmissions: 3, wantFinished: 3,
			// a: 2 for 2s + 1 for 1s = 5; b: 2 for 2s = 4; over 3s with nominal 4: 9/12.
			wantUsage: 100 * 9.0 / 12,
			// a waited 0..2 (z pending), holding 2 from 1 to 2: 2 of 2×2; b waited 0..1 holding 0.
			wantBacklog: 100 * 2.0 / 6,
		},
		"an evicted unit waits again and is admitted a second time": {
			units: 1,
			steps: []step{{0, x}, {time.Second, admitted(x)}, {2 * time.Second, evicted(x)}, {4 * time.Second, admitted(x)}, {5 * time.Second, finished(x)}},
			wantClasses: []ClassResult{{Name: "c", Count: 1, Admitted: 1, Evictions: 1,
				AvgToAdmission: 1, P50ToAdmission: 1, P90ToAdmission: 1, MaxToAdmission: 1, AvgToFinish: 5}},
			wantAdmissions: 2, wantEvictions: 1, wantMoreThanOnce: 1, wantFinished: 1,
			wantUsage:   100 * 4.0 / 20,
			wantBacklog: 0,
		},
		"a unit admitted again over the admission it holds counts twice": {
			units: 1,
			steps: []step{{0, x}, {time.Second, attempt(admitted(x), 1)}, {2 * time.Second, attempt(admitted(x), 2)}, {3 * time.Second, finished(x)}},
			wantClasses: []ClassResult{{Name: "c", Count: 1, Admitted: 1,
				AvgToAdmission: 1, P50ToAdmission: 1, P90ToAdmission: 1, MaxToAdmission: 1, AvgToFinish: 3}},
			wantAdmissions: 2, wantMoreThanOnce: 1, wantFinished: 1,
			wantUsage:   100 * 4.0 / 12,
			wantBacklog: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := twoChildren(tc.units)
			r := NewRecorder(s, t0, s.Sets[0].Count)
			for _, st := range tc.steps {
				r.Observe(t0.Add(st.at), st.u)
			}
			select {
			case <-r.Done():
			default:
				t.Fatalf("Done not closed after every unit finished: %s", r)
			}
			res := r.Summarize(s)
			if diff := cmp.Diff(tc.wantOver, res.OverAdmissionExamples, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("over-admissions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantClasses, res.Classes, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("classes (-want +got):\n%s", diff)
			}
			last := res.Samples[len(res.Samples)-1]
			if want := (Sample{AtSeconds: res.WallSeconds, Admitted: tc.wantClasses[0].Admitted, Finished: tc.wantFinished}); last != want {
				t.Errorf("last sample %+v, want %+v", last, want)
			}
			got := []float64{float64(res.Admissions), float64(res.Evictions), float64(res.AdmittedMoreThanOnce), float64(res.Finished), res.UsagePercent, res.BacklogUsagePercent}
			want := []float64{float64(tc.wantAdmissions), float64(tc.wantEvictions), float64(tc.wantMoreThanOnce), float64(tc.wantFinished), tc.wantUsage, tc.wantBacklog}
			if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("admissions, evictions, admitted more than once, finished, usage %%, backlog usage %% (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecorderLogsEvictionsWithTheirCondition(t *testing.T) {
	x := unit("x", "a", "1")
	preempted := evicted(x)
	preempted.Status.Conditions = []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitEvicted, Status: metav1.ConditionTrue,
		Reason: schedulingv1alpha1.EvictedByPreemption, Message: "Preempted to make room for a unit of higher priority in queue a"}}
	s := twoChildren(1)
	r := NewRecorder(s, t0, 1)
	for _, st := range []step{{0, x}, {time.Second, admitted(x)}, {2 * time.Second, preempted},
		{3 * time.Second, admitted(x)}, {4 * time.Second, evicted(x)}, {5 * time.Second, finished(x)}} {
		r.Observe(t0.Add(st.at), st.u)
	}
	want := []Eviction{
		{At: 2 * time.Second, Unit: "ns/x", Reason: schedulingv1alpha1.EvictedByPreemption, Message: "Preempted to make room for a unit of higher priority in queue a"},
		{At: 4 * time.Second, Unit: "ns/x"},
	}
	if diff := cmp.Diff(want, r.Evictions()); diff != "" {
		t.Errorf("evictions (-want +got):\n%s", diff)
	}
	var b strings.Builder
	if err := r.WriteEvictionsCSV(&b); err != nil {
		t.Fatal(err)
	}
	wantCSV := "at,unit,reason,message\n2.000,ns/x,Preempted,Preempted to make room for a unit of higher priority in queue a\n4.000,ns/x,,\n"
	if diff := cmp.Diff(wantCSV, b.String()); diff != "" {
		t.Errorf("evictions.csv (-want +got):\n%s", diff)
	}
}

func TestRecorderCountsWhatAdmissionsList(t *testing.T) {
	// A unit whose admissions list more than its request is charged what
	// the admissions say: that is what koord-queue reserved.
	s := twoChildren(1)
	r := NewRecorder(s, t0, s.Sets[0].Count)
	u := unit("x", "a", "1")
	r.Observe(t0, u)
	big := admitted(u)
	big.Status.Admissions[0].Resources[corev1.ResourceCPU] = resource.MustParse("5")
	r.Observe(t0.Add(time.Second), big)
	res := r.Summarize(s)
	if diff := cmp.Diff([]OverAdmission{
		{AtSeconds: 1, Quota: "a", UsedMilli: 5000, MaxMilli: 4000, Unit: "ns/x"},
		{AtSeconds: 1, Quota: "parent", UsedMilli: 5000, MaxMilli: 4000, Unit: "ns/x"},
	}, res.OverAdmissionExamples); diff != "" {
		t.Errorf("over-admissions (-want +got):\n%s", diff)
	}
}

func TestWhenAdmitted(t *testing.T) {
	s := twoChildren(2)
	r := NewRecorder(s, t0, s.Sets[0].Count)
	second := r.WhenAdmitted(2)
	x, y := unit("x", "a", "1"), unit("y", "a", "1")
	r.Observe(t0, x)
	r.Observe(t0, y)
	r.Observe(t0, admitted(x))
	select {
	case <-second:
		t.Fatal("closed after one admission, want two")
	default:
	}
	r.Observe(t0, admitted(y))
	select {
	case <-second:
	default:
		t.Fatal("not closed after two admissions")
	}
	select {
	case <-r.WhenAdmitted(1):
	default:
		t.Fatal("a waiter for a count already reached is not closed")
	}
}

func TestPercentile(t *testing.T) {
	sorted := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	cases := map[string]struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		"p50 of ten is the fifth":    {sorted, 50, 5},
		"p90 of ten is the ninth":    {sorted, 90, 9},
		"p100 is the largest":        {sorted, 100, 10},
		"p0 is the smallest":         {sorted, 0, 1},
		"nothing measured gives 0":   {nil, 50, 0},
		"p90 of one is that one":     {[]time.Duration{7}, 90, 7},
		"p50 of two is the smallest": {[]time.Duration{1, 2}, 50, 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Percentile(tc.in, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.in, tc.p, got, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	res := &Result{
		Units: 2, Finished: 2, WallSeconds: 12, AdmittedMoreThanOnce: 1,
		Classes:    []ClassResult{{Name: "small", AvgToAdmission: 3}, {Name: "large", AvgToAdmission: 1}},
		Controller: ControllerStats{Mode: "binary", PeakRSSMiB: 150},
	}
	res.Check(scenario.Bounds{
		MaxWall:               10 * time.Second,
		MaxAvgTimeToAdmission: map[string]time.Duration{"small": 5 * time.Second, "large": 500 * time.Millisecond},
		MaxPeakRSSMiB:         200,
		NoReadmission:         true,
	})
	var missed []string
	for _, b := range res.Bounds {
		if !b.OK {
			missed = append(missed, b.Name)
		}
	}
	want := []string{"wall time", "average time to admission, large", "units admitted more than once"}
	if diff := cmp.Diff(want, missed); diff != "" {
		t.Errorf("missed bounds (-want +got):\n%s", diff)
	}
	if res.OK() {
		t.Error("OK() = true with missed bounds")
	}
}

func TestFirstAdmissionAfter(t *testing.T) {
	x, y := unit("x", "a", "1"), unit("y", "b", "1")
	s := twoChildren(2)
	r := NewRecorder(s, t0, 2)
	for _, st := range []step{{0, x}, {0, y}, {time.Second, admitted(x)}, {3 * time.Second, admitted(y)}} {
		r.Observe(t0.Add(st.at), st.u)
	}
	tests := []struct {
		name   string
		after  time.Duration
		want   time.Duration
		wantOK bool
	}{
		{name: "before every admission: the first", after: 0, want: time.Second, wantOK: true},
		{name: "between two: the later", after: 2 * time.Second, want: 3 * time.Second, wantOK: true},
		{name: "after the last: none", after: 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := r.FirstAdmissionAfter(t0.Add(tt.after))
			if ok != tt.wantOK || (ok && !got.Equal(t0.Add(tt.want))) {
				t.Errorf("FirstAdmissionAfter(%v) = %v, %t; want %v, %t", tt.after, got.Sub(t0), ok, tt.want, tt.wantOK)
			}
		})
	}
}
