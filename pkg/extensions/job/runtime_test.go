package job

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// TestReconcileDeclaredRuntime: the runtime a Job's label declares
// (koord-queue's or Kueue's) becomes its unit's
// spec.maximumExecutionTimeSeconds while the Job waits, within the admin's
// ceiling; each change says so on the Job, with a Warning when the label is
// invalid (ignored) or above the ceiling (cut). An admitted unit keeps the
// limit it was admitted with, even when the label changes as it is admitted.
func TestReconcileDeclaredRuntime(t *testing.T) {
	ours, kueue := schedulingv1alpha1.LabelMaxExecTimeSeconds, schedulingv1alpha1.LabelMaxExecTimeSecondsKueue
	label := func(key, value string) func(*resizeWorld) {
		return func(w *resizeWorld) {
			w.setJob(func(j *batchv1.Job) {
				delete(j.Labels, ours)
				delete(j.Labels, kueue)
				if key != "" {
					j.Labels[key] = value
				}
			})
		}
	}
	evict := func(w *resizeWorld) {
		w.setUnit(func(u *schedulingv1alpha1.QueueUnit) {
			queueunit.Evict(u, schedulingv1alpha1.EvictedByPreemption, "preempted", metav1.Now())
		})
	}
	type state struct {
		Seconds int32  // 0: none
		Event   string // the last event recorded, or how it starts
	}
	steps := []struct {
		name   string
		change func(*resizeWorld)
		racing bool // the unit is admitted just before the reconciler's next unit write lands
		want   state
	}{
		{name: "queued without a label: no limit"},
		{name: "Kueue's label on the waiting Job", change: label(kueue, "600"),
			want: state{Seconds: 600, Event: "Normal UpdatedQueueUnit QueueUnit j now may stay admitted for at most 600 s (spec.maximumExecutionTimeSeconds)"}},
		{name: "koord-queue's label replaces it", change: label(ours, "900"),
			want: state{Seconds: 900, Event: "Normal UpdatedQueueUnit QueueUnit j now may stay admitted for at most 900 s"}},
		{name: "an invalid value is ignored, with a Warning naming the label", change: label(ours, "15m"),
			want: state{Event: `Warning InvalidMaxExecTime Label koord-queue/max-exec-time-seconds is "15m", not a positive whole number of seconds; it is ignored`}},
		{name: "above the ceiling: cut to it, with a Warning", change: label(ours, "86400"),
			want: state{Seconds: 3600, Event: "Warning MaxExecTimeCapped Label koord-queue/max-exec-time-seconds declares 86400 s, more than a job may (3600 s, koord-queue-controllers' --max-declared-execution-time): the QueueUnit takes 3600 s, and is stopped (deactivated and its job suspended) once admitted that long"}},
		{name: "the label removed: the limit goes", change: label("", ""),
			want: state{Event: "Normal UpdatedQueueUnit QueueUnit j now has no maximum execution time"}},
		{name: "labelled again", change: label(ours, "600"),
			want: state{Seconds: 600, Event: "Normal UpdatedQueueUnit QueueUnit j now may stay admitted for at most 600 s"}},
		{name: "changed as the unit is admitted: the admitted unit keeps its limit", change: label(ours, "60"), racing: true,
			want: state{Seconds: 600}},
		{name: "changed while admitted: kept", change: label(ours, "30"),
			want: state{Seconds: 600}},
		{name: "released, still kept",
			want: state{Seconds: 600}},
		{name: "evicted: the Job is suspended first", change: evict,
			want: state{Seconds: 600, Event: "Normal Suspended Suspended: QueueUnit j was evicted (Preempted)"}},
		{name: "queued again, with no pods holding its quota: it takes the label's value",
			want: state{Seconds: 30, Event: "Normal UpdatedQueueUnit QueueUnit j now may stay admitted for at most 30 s"}},
	}
	w := newResizeWorld(t)
	w.r = framework.NewJobReconciler(w.c, w.c, w.recorder, Integration(), framework.WithStatusDelay(0),
		framework.WithMaxDeclaredExecutionTime(time.Hour))
	for _, s := range steps {
		if s.change != nil {
			s.change(w)
		}
		w.admitFirst = s.racing
		lastEvent(w.recorder)
		w.reconcile()
		var got state
		if u := w.unit(); u.Spec.MaximumExecutionTimeSeconds != nil {
			got.Seconds = *u.Spec.MaximumExecutionTimeSeconds
		}
		got.Event = lastEvent(w.recorder)
		if s.want.Event != "" && strings.HasPrefix(got.Event, s.want.Event) {
			got.Event = s.want.Event // the rest of the message aside
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
}

// TestReconcileQueuesWithTheDeclaredRuntime: a Job submitted with a
// max-exec-time label is queued with that limit; an invalid or too large
// value gives the Job a Warning event that its unit's message repeats.
func TestReconcileQueuesWithTheDeclaredRuntime(t *testing.T) {
	cases := map[string]struct {
		key, value  string
		wantSeconds *int32
		wantWarning string // how the Warning starts; empty: none
	}{
		"koord-queue's label": {
			key: schedulingv1alpha1.LabelMaxExecTimeSeconds, value: "600", wantSeconds: ptr.To[int32](600),
		},
		"Kueue's label": {
			key: schedulingv1alpha1.LabelMaxExecTimeSecondsKueue, value: "120", wantSeconds: ptr.To[int32](120),
		},
		"invalid: no limit": {
			key: schedulingv1alpha1.LabelMaxExecTimeSecondsKueue, value: "-1",
			wantWarning: `Warning InvalidMaxExecTime Label kueue.x-k8s.io/max-exec-time-seconds is "-1"`,
		},
		"above the default ceiling of 7 days: cut to it": {
			key: schedulingv1alpha1.LabelMaxExecTimeSeconds, value: "604801", wantSeconds: ptr.To[int32](604800),
			wantWarning: "Warning MaxExecTimeCapped Label koord-queue/max-exec-time-seconds declares 604801 s, more than a job may (604800 s",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			j := extensionstest.MakeJob("j", "ns").Quota("team-a").Label(tc.key, tc.value).Request("cpu", "1").Obj()
			c := frameworktest.ClientBuilder(t, testScheme(t)).WithObjects(j).
				WithStatusSubresource(&schedulingv1alpha1.QueueUnit{}, &batchv1.Job{}).Build()
			recorder := record.NewFakeRecorder(100)
			r := framework.NewJobReconciler(c, c, recorder, Integration())
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(j)}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			var unit schedulingv1alpha1.QueueUnit
			if err := c.Get(ctx, client.ObjectKeyFromObject(j), &unit); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantSeconds, unit.Spec.MaximumExecutionTimeSeconds); diff != "" {
				t.Errorf("spec.maximumExecutionTimeSeconds (-want +got):\n%s", diff)
			}
			got := firstWarning(recorder)
			if !strings.HasPrefix(got, tc.wantWarning) || (tc.wantWarning == "") != (got == "") {
				t.Errorf("first Warning event %q, want one starting %q", got, tc.wantWarning)
			}
			if got != "" && !strings.Contains(unit.Status.Message, strings.SplitN(got, " ", 3)[2]) {
				t.Errorf("unit message %q, want it to say what the event says", unit.Status.Message)
			}
		})
	}
}
