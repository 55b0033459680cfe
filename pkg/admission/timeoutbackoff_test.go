package admission

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestTimeoutBackoffWaitsOutsideTheQueue: a unit backing off after its
// running timeout (TimeoutBackoff) holds its quota while its admissions
// are listed (its pods may still run), then neither holds quota nor is
// admitted, whatever room there is, and says why; queued again (Enqueued),
// it is admitted.
func TestTimeoutBackoffWaitsOutsideTheQueue(t *testing.T) {
	c := teamCache("4")
	t0 := time.Unix(1_000_000, 0)
	unit := func(name string) *wrappers.QueueUnitWrapper {
		u := wrappers.MakeQueueUnit(name, "ns").Quota("team").Request("cpu", "4").Consumer()
		u.CreationTimestamp = metav1.NewTime(t0)
		return u
	}
	type outcome struct {
		Admitted []string
		Reason   string
	}
	step := func(u *schedulingv1alpha1.QueueUnit, other string) outcome {
		t.Helper()
		c.UpsertUnit(u)
		var got outcome
		for _, a := range c.cycle(t0.Add(time.Hour), -1).Admissions {
			got.Admitted = append(got.Admitted, a.Unit)
		}
		if other == "" {
			got.Reason = c.views.waitReason("ns/" + u.Name)
		} else {
			got.Reason = c.views.waitReason(other)
		}
		return got
	}
	backingOff := unit("back").Phase(schedulingv1alpha1.TimeoutBackoff).Admission(schedulingv1alpha1.DefaultPodSetName, 1).Obj()
	c.UpsertUnit(unit("waiting").Priority(-1).Obj())
	if diff := cmp.Diff(outcome{Reason: "team: cpu 4 used of max 4, request 4"}, step(backingOff, "ns/waiting")); diff != "" {
		t.Errorf("backing off with its admissions: still holds the quota, another unit waits (-want +got):\n%s", diff)
	}
	gone := unit("back").Phase(schedulingv1alpha1.TimeoutBackoff).Obj()
	c.DeleteUnit("ns", "waiting")
	want := outcome{Reason: "backing off after its running timeout; koord-queue-controllers queues it again (Enqueued) when the backoff ends"}
	if diff := cmp.Diff(want, step(gone, "")); diff != "" {
		t.Errorf("backing off, its admissions given back: not admitted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(outcome{Admitted: []string{"ns/back"}}, step(unit("back").Phase(schedulingv1alpha1.Enqueued).Obj(), "")); diff != "" {
		t.Errorf("queued again: admitted (-want +got):\n%s", diff)
	}
}

// TestRequeuedUnitWaitsOutItsBackoff: a unit that admission checks sent
// back (status.requeueState.requeueAt) is not admitted before requeueAt,
// whatever room there is, says until when it backs off, and wakes the loop
// then; at requeueAt it is admitted. Deleted while it backs off, it is
// forgotten.
func TestRequeuedUnitWaitsOutItsBackoff(t *testing.T) {
	c := teamCache("4")
	t0 := time.Unix(1_000_000, 0)
	requeueAt := t0.Add(10 * time.Minute)
	unit := func(name string) *schedulingv1alpha1.QueueUnit {
		u := wrappers.MakeQueueUnit(name, "ns").Quota("team").Request("cpu", "1").Consumer().Obj()
		u.CreationTimestamp = metav1.NewTime(t0)
		u.Status.RequeueState = &schedulingv1alpha1.RequeueState{Count: 1, RequeueAt: &metav1.Time{Time: requeueAt}}
		return u
	}
	type outcome struct {
		Admitted []string
		Reason   string
		Wakeup   time.Time
	}
	at := func(now time.Time, key string) outcome {
		t.Helper()
		res := c.cycle(now, -1)
		var got outcome
		for _, a := range res.Admissions {
			got.Admitted = append(got.Admitted, a.Unit)
		}
		got.Reason, got.Wakeup = c.views.waitReason(key), c.backingOff.next()
		return got
	}
	c.UpsertUnit(unit("back"))
	c.UpsertUnit(unit("gone"))
	c.DeleteUnit("ns", "gone")
	want := outcome{Reason: "backing off until 1970-01-12T13:56:40Z after admission checks sent it back", Wakeup: requeueAt}
	if diff := cmp.Diff(want, at(t0.Add(5*time.Minute), "ns/back")); diff != "" {
		t.Errorf("before requeueAt (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(outcome{Admitted: []string{"ns/back"}}, at(requeueAt, "ns/back")); diff != "" {
		t.Errorf("at requeueAt (-want +got):\n%s", diff)
	}
}
