package framework

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

const (
	ours  = schedulingv1alpha1.LabelMaxExecTimeSeconds
	kueue = schedulingv1alpha1.LabelMaxExecTimeSecondsKueue
)

// TestDeclaredRuntime: a job declares how long its unit may stay admitted
// with koord-queue's label or Kueue's (ours first): a positive integer of
// seconds, at most the admin's ceiling (cut to it, with a warning that the
// unit is stopped then); anything else is ignored, with a warning naming
// the label.
func TestDeclaredRuntime(t *testing.T) {
	const ceiling = 3600
	cases := map[string]struct {
		labels      map[string]string
		want        *int32
		wantReason  string
		wantMessage string // a part of the warning
	}{
		"no label: no limit": {
			labels: map[string]string{"app": "x"},
		},
		"koord-queue's label": {
			labels: map[string]string{ours: "600"},
			want:   ptr.To[int32](600),
		},
		"Kueue's label": {
			labels: map[string]string{kueue: "120"},
			want:   ptr.To[int32](120),
		},
		"both: koord-queue's wins": {
			labels: map[string]string{ours: "600", kueue: "120"},
			want:   ptr.To[int32](600),
		},
		"both, ours invalid: ours is read and ignored, Kueue's is not read": {
			labels:     map[string]string{ours: "10m", kueue: "120"},
			wantReason: ReasonInvalidMaxExecTime, wantMessage: `Label koord-queue/max-exec-time-seconds is "10m", not a positive whole number of seconds; it is ignored`,
		},
		"exactly the ceiling": {
			labels: map[string]string{ours: "3600"},
			want:   ptr.To[int32](ceiling),
		},
		"above the ceiling: cut to it, saying the unit is stopped then": {
			labels:     map[string]string{kueue: "3601"},
			want:       ptr.To[int32](ceiling),
			wantReason: ReasonMaxExecTimeCapped, wantMessage: "Label kueue.x-k8s.io/max-exec-time-seconds declares 3601 s, more than a job may (3600 s, koord-queue-controllers' --max-declared-execution-time): the QueueUnit takes 3600 s, and is stopped",
		},
		"more digits than 64 bits hold: cut to the ceiling": {
			labels:     map[string]string{ours: "99999999999999999999999999"},
			want:       ptr.To[int32](ceiling),
			wantReason: ReasonMaxExecTimeCapped, wantMessage: "declares 99999999999999999999999999 s",
		},
		"zero is ignored": {
			labels:     map[string]string{ours: "0"},
			wantReason: ReasonInvalidMaxExecTime, wantMessage: `is "0", not a positive`,
		},
		"empty is ignored": {
			labels:     map[string]string{ours: ""},
			wantReason: ReasonInvalidMaxExecTime, wantMessage: `is "", not a positive`,
		},
		"a fraction is ignored": {
			labels:     map[string]string{kueue: "1.5"},
			wantReason: ReasonInvalidMaxExecTime, wantMessage: "Label kueue.x-k8s.io/max-exec-time-seconds",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, warning := declaredRuntime(tc.labels, ceiling)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("seconds (-want +got):\n%s", diff)
			}
			var reason, message string
			if warning != nil {
				reason, message = warning.Reason, warning.Message
			}
			if reason != tc.wantReason || (message == "") != (tc.wantMessage == "") || !strings.Contains(message, tc.wantMessage) {
				t.Errorf("warning %s %q, want %s containing %q", reason, message, tc.wantReason, tc.wantMessage)
			}
		})
	}
}

// TestDeclareRuntime: a unit takes the runtime its job's labels declare,
// and keeps its copy of those labels the job's, so that a label removed
// from the job clears the limit; a limit set by hand on the unit of a job
// that never declared one is left alone.
func TestDeclareRuntime(t *testing.T) {
	type unit struct {
		Labels  map[string]string
		Seconds *int32
	}
	cases := map[string]struct {
		unit        unit
		jobLabels   map[string]string
		want        unit
		wantChanged bool
	}{
		"a new unit (a copy of its job's labels) takes the declared runtime": {
			unit:        unit{Labels: map[string]string{ours: "600", "app": "x"}},
			jobLabels:   map[string]string{ours: "600", "app": "x"},
			want:        unit{Labels: map[string]string{ours: "600", "app": "x"}, Seconds: ptr.To[int32](600)},
			wantChanged: true,
		},
		"unchanged: nothing to write": {
			unit:      unit{Labels: map[string]string{ours: "600"}, Seconds: ptr.To[int32](600)},
			jobLabels: map[string]string{ours: "600"},
			want:      unit{Labels: map[string]string{ours: "600"}, Seconds: ptr.To[int32](600)},
		},
		"the job's label changed": {
			unit:        unit{Labels: map[string]string{ours: "600"}, Seconds: ptr.To[int32](600)},
			jobLabels:   map[string]string{ours: "900"},
			want:        unit{Labels: map[string]string{ours: "900"}, Seconds: ptr.To[int32](900)},
			wantChanged: true,
		},
		"the job's label removed: the limit goes": {
			unit:        unit{Labels: map[string]string{ours: "600", "app": "x"}, Seconds: ptr.To[int32](600)},
			jobLabels:   map[string]string{"app": "x"},
			want:        unit{Labels: map[string]string{"app": "x"}},
			wantChanged: true,
		},
		"the job moved to Kueue's label": {
			unit:        unit{Labels: map[string]string{ours: "600"}, Seconds: ptr.To[int32](600)},
			jobLabels:   map[string]string{kueue: "120"},
			want:        unit{Labels: map[string]string{kueue: "120"}, Seconds: ptr.To[int32](120)},
			wantChanged: true,
		},
		"a job labelled after its unit was made": {
			unit:        unit{},
			jobLabels:   map[string]string{kueue: "120"},
			want:        unit{Labels: map[string]string{kueue: "120"}, Seconds: ptr.To[int32](120)},
			wantChanged: true,
		},
		"a limit set by hand on the unit of a job that declares none stays": {
			unit:      unit{Labels: map[string]string{"app": "x"}, Seconds: ptr.To[int32](60)},
			jobLabels: map[string]string{"app": "x"},
			want:      unit{Labels: map[string]string{"app": "x"}, Seconds: ptr.To[int32](60)},
		},
		"the job's declaration replaces a limit set by hand": {
			unit:        unit{Seconds: ptr.To[int32](60)},
			jobLabels:   map[string]string{ours: "600"},
			want:        unit{Labels: map[string]string{ours: "600"}, Seconds: ptr.To[int32](600)},
			wantChanged: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &schedulingv1alpha1.QueueUnit{ObjectMeta: metav1.ObjectMeta{Labels: tc.unit.Labels}}
			u.Spec.MaximumExecutionTimeSeconds = tc.unit.Seconds
			seconds, _ := declaredRuntime(tc.jobLabels, ceilingSeconds(time.Hour))
			changed := declareRuntime(u, tc.jobLabels, seconds)
			got := unit{Labels: u.Labels, Seconds: u.Spec.MaximumExecutionTimeSeconds}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unit (-want +got):\n%s", diff)
			}
			if changed != tc.wantChanged {
				t.Errorf("changed %v, want %v", changed, tc.wantChanged)
			}
		})
	}
}

// TestCeilingSeconds: the admin's ceiling, in whole seconds, fits the
// unit's field and is at least a second.
func TestCeilingSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int32{
		DefaultMaxDeclaredExecutionTime: 604800,
		90 * time.Second:                90,
		1500 * time.Millisecond:         1,
		0:                               1,
		100 * 365 * 24 * time.Hour:      2147483647,
	} {
		if got := ceilingSeconds(d); got != want {
			t.Errorf("ceilingSeconds(%s) = %d, want %d", d, got, want)
		}
	}
}
