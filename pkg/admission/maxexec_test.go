package admission

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// TestMaximumExecutionTime: a unit admitted with
// spec.maximumExecutionTimeSeconds runs until it has been admitted that
// long (counted from its current admission), then the loop deactivates it
// (spec.active false) and evicts it with reason MaximumExecutionTimeExceeded,
// saying the limit in the condition and an event; a unit without the limit
// runs on. The loop is woken at the deadline, not before.
func TestMaximumExecutionTime(t *testing.T) {
	admittedAt := time.Unix(1000, 0)
	type outcome struct {
		Active     bool
		Phase      schedulingv1alpha1.QueueUnitPhase
		Evicted    *metav1.Condition // type, status, reason, message
		Events     []string
		NextWakeup time.Time
	}
	const message = "deactivated: admitted for longer than its maximum execution time of 60s (spec.maximumExecutionTimeSeconds); set spec.active to true to queue it again"
	deactivated := outcome{Phase: schedulingv1alpha1.Enqueued,
		Evicted: &metav1.Condition{Type: schedulingv1alpha1.QueueUnitEvicted, Status: metav1.ConditionTrue,
			Reason: schedulingv1alpha1.EvictedByMaximumExecutionTimeExceeded, Message: message},
		Events: []string{"Warning MaximumExecutionTimeExceeded D" + message[1:]}}
	for name, tc := range map[string]struct {
		limit *int32
		// readmitted: evicted 30s after its first admission and admitted
		// again at admittedAt+50s; the time counts from then.
		readmitted bool
		at         time.Duration // after admittedAt
		want       outcome
	}{
		"59s into a 60s limit: runs on, woken at 60s": {limit: ptr.To[int32](60), at: 59 * time.Second,
			want: outcome{Active: true, Phase: schedulingv1alpha1.Dequeued, NextWakeup: admittedAt.Add(60 * time.Second)}},
		"61s into a 60s limit: deactivated and evicted": {limit: ptr.To[int32](60), at: 61 * time.Second, want: deactivated},
		"no limit: runs on a year later": {at: 365 * 24 * time.Hour,
			want: outcome{Active: true, Phase: schedulingv1alpha1.Dequeued}},
		"re-admitted at 50s, 61s after the first admission: runs on": {limit: ptr.To[int32](60), readmitted: true, at: 61 * time.Second,
			want: outcome{Active: true, Phase: schedulingv1alpha1.Dequeued, NextWakeup: admittedAt.Add(110 * time.Second),
				Evicted: &metav1.Condition{Type: schedulingv1alpha1.QueueUnitEvicted, Status: metav1.ConditionFalse,
					Reason: queueunit.ReasonReadmitted, Message: "admitted again"}}},
		"re-admitted at 50s, 111s after the first admission: deactivated": {limit: ptr.To[int32](60), readmitted: true, at: 111 * time.Second,
			want: deactivated},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			u := victim()
			u.Spec.MaximumExecutionTimeSeconds = tc.limit
			ww := newWriterWorld(t, u)
			admitAt := func(at time.Time) {
				ww.change(t, func(u *schedulingv1alpha1.QueueUnit) {})
				cur := ww.inAPI(t)
				queueunit.Admit(cur, "q", cur.Spec.Resource, nil, nil, metav1.NewTime(at))
				if err := ww.client.Status().Update(ctx, cur); err != nil {
					t.Fatal(err)
				}
				ww.cache.UpsertUnit(ww.inAPI(t))
			}
			admitAt(admittedAt)
			if tc.readmitted {
				cur := ww.inAPI(t)
				queueunit.Evict(cur, schedulingv1alpha1.EvictedByPreemption, "preempted", metav1.NewTime(admittedAt.Add(30*time.Second)))
				if err := ww.client.Status().Update(ctx, cur); err != nil {
					t.Fatal(err)
				}
				admitAt(admittedAt.Add(50 * time.Second))
			}
			ww.clock.SetTime(admittedAt.Add(tc.at))
			loop := &Loop{cache: ww.cache, writer: ww.writer, clock: ww.clock}
			next, _, _ := loop.runOnce()
			for ww.writer.urgent.Len() > 0 {
				if !ww.writer.processUrgent(ctx) {
					t.Fatal("the writer shut down")
				}
			}

			after := ww.inAPI(t)
			got := outcome{Active: after.IsActive(), Phase: after.EffectivePhase(), NextWakeup: next}
			if c := meta.FindStatusCondition(after.Status.Conditions, schedulingv1alpha1.QueueUnitEvicted); c != nil {
				got.Evicted = &metav1.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
			}
			for len(ww.recorder.Events) > 0 {
				got.Events = append(got.Events, <-ww.recorder.Events)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("after the loop ran at +%v (-want +got):\n%s", tc.at, diff)
			}
		})
	}
}

// TestMaximumExecutionTimeRaisedBeforeTheWrite: the loop found the unit past
// its limit, and its owner raised the limit before the writer got to it.
// Deciding again on the unit as the API server has it, the writer leaves it
// running, and the Cache counts the new deadline.
func TestMaximumExecutionTimeRaisedBeforeTheWrite(t *testing.T) {
	ctx := context.Background()
	admittedAt := time.Unix(1000, 0)
	u := victim()
	u.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](60)
	queueunit.Admit(u, "q", u.Spec.Resource, nil, nil, metav1.NewTime(admittedAt))
	ww := newWriterWorld(t, u)
	ww.cache.UpsertUnit(ww.inAPI(t))
	ww.clock.SetTime(admittedAt.Add(61 * time.Second))
	loop := &Loop{cache: ww.cache, writer: ww.writer, clock: ww.clock}
	loop.runOnce()

	raised := ww.inAPI(t) // the informer has not shown it yet
	raised.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](3600)
	if err := ww.client.Update(ctx, raised); err != nil {
		t.Fatal(err)
	}
	for ww.writer.urgent.Len() > 0 {
		ww.writer.processUrgent(ctx)
	}

	r := ww.cache.units["ns/victim"]
	if r.eviction != nil {
		t.Errorf("an eviction is still recorded: %+v", *r.eviction)
	}
	// Not counted again from the Cache's copy, which has the old limit: the
	// loop would find it due at once.
	if next := ww.cache.executionDeadlines.nextDeadline(); !next.IsZero() {
		t.Errorf("before the informer shows the raised limit, next deadline %v, want none", next)
	}
	after := ww.inAPI(t)
	ww.cache.UpsertUnit(after) // as the informer shows it
	type outcome struct {
		Active   bool
		Phase    schedulingv1alpha1.QueueUnitPhase
		Evicted  bool
		Deadline time.Time
	}
	got := outcome{Active: after.IsActive(), Phase: after.EffectivePhase(), Evicted: queueunit.Evicted(after), Deadline: ww.cache.executionDeadlines.deadlineOf[r]}
	want := outcome{Active: true, Phase: schedulingv1alpha1.Dequeued, Deadline: admittedAt.Add(time.Hour)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestDeadlinesDoNotPileUp: a replica that never runs cycles (a follower)
// keeps no more deadlines than about twice its units, however often they
// are admitted again, so deleted units are not kept alive.
func TestDeadlinesDoNotPileUp(t *testing.T) {
	c := NewCache()
	u := victim()
	u.Spec.MaximumExecutionTimeSeconds = ptr.To[int32](60)
	for i := range 1000 {
		v := u.DeepCopy()
		queueunit.Admit(v, "q", v.Spec.Resource, nil, nil, metav1.NewTime(time.Unix(int64(1000+i), 0)))
		c.UpsertUnit(v)
	}
	if got := len(c.executionDeadlines.deadlines); got > 2*len(c.units)+16 {
		t.Errorf("%d deadlines kept for %d units", got, len(c.units))
	}
}
