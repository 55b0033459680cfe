package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// rows shows a list of views as "namespace/name@position phase".
func rows(views []api.UnitView) []string {
	out := []string{}
	for _, v := range views {
		out = append(out, fmt.Sprintf("%s/%s@%d %s", v.Namespace, v.Name, v.Position, v.Phase))
	}
	return out
}

// TestQueueUnitsPages: a queue's units are listed waiting ones first, in
// admission order with their positions in the queue (kept when a phase
// filter skips some), then those holding quota by namespace/name; a page
// is a slice of that list, and total counts the whole (filtered) list.
func TestQueueUnitsPages(t *testing.T) {
	c := teamCache("3")
	t0 := time.Unix(1_000_000, 0)
	unit := func(namespace, name string, priority int32, created time.Duration) *wrappers.QueueUnitWrapper {
		u := wrappers.MakeQueueUnit(name, namespace).Quota("team").Request("cpu", "1").Priority(priority)
		u.CreationTimestamp = metav1.NewTime(t0.Add(created))
		return u
	}
	running := func(u *wrappers.QueueUnitWrapper) *schedulingv1alpha1.QueueUnit {
		return u.Phase(schedulingv1alpha1.Running).RunningAdmission(schedulingv1alpha1.DefaultPodSetName, 1, 1).Obj()
	}
	c.UpsertUnit(running(unit("ns-b", "run0", 0, 0)))
	c.UpsertUnit(running(unit("ns-a", "run1", 0, 0)))
	c.UpsertUnit(unit("ns-a", "w1", 5, time.Second).Obj())
	c.UpsertUnit(unit("ns-a", "back", 4, time.Second).Phase(schedulingv1alpha1.TimeoutBackoff).Obj())
	c.UpsertUnit(unit("ns-b", "w2", 3, time.Second).Obj())
	c.UpsertUnit(unit("ns-a", "w3", 3, 2*time.Second).Obj())
	c.UpsertUnit(unit("ns-c", "w4", 0, time.Second).Obj())
	c.cycle(t0.Add(time.Minute), -1) // admits ns-a/w1 into the last cpu; its write is in flight

	// ns-a/back, backing off after its running timeout, is out of the
	// queue until it is queued again: not listed.
	all := []string{
		"ns-b/w2@1 Enqueued", "ns-a/w3@2 Enqueued", "ns-c/w4@3 Enqueued",
		"ns-a/run1@0 Running", "ns-a/w1@0 Dequeued", "ns-b/run0@0 Running",
	}
	for name, tc := range map[string]struct {
		queue         string
		phase         schedulingv1alpha1.QueueUnitPhase
		offset, limit int
		want          []string
		wantTotal     int
	}{
		"limit 0 lists every unit":                 {want: all, wantTotal: 6},
		"the first page":                           {limit: 2, want: all[:2], wantTotal: 6},
		"a page across waiting and admitted units": {offset: 2, limit: 3, want: all[2:5], wantTotal: 6},
		"a page of admitted units":                 {offset: 4, limit: 10, want: all[4:], wantTotal: 6},
		"limit 0 from an offset lists the rest":    {offset: 3, want: all[3:], wantTotal: 6},
		"the last unit":                            {offset: 5, limit: 1, want: all[5:], wantTotal: 6},
		"an offset at the end lists nothing":       {offset: 6, limit: 1, want: []string{}, wantTotal: 6},
		"an offset past the end lists nothing":     {offset: 100, limit: 5, want: []string{}, wantTotal: 6},
		"Enqueued from an offset, positions kept": {phase: schedulingv1alpha1.Enqueued, offset: 1, limit: 5,
			want: []string{"ns-a/w3@2 Enqueued", "ns-c/w4@3 Enqueued"}, wantTotal: 3},
		"a unit backing off is not listed":  {phase: schedulingv1alpha1.TimeoutBackoff, want: []string{}, wantTotal: 0},
		"Running lists admitted units only": {phase: schedulingv1alpha1.Running, want: []string{"ns-a/run1@0 Running", "ns-b/run0@0 Running"}, wantTotal: 2},
		"a page of one phase":               {phase: schedulingv1alpha1.Running, offset: 1, limit: 1, want: []string{"ns-b/run0@0 Running"}, wantTotal: 2},
		"an admission in flight is Dequeued": {phase: schedulingv1alpha1.Dequeued, limit: 5,
			want: []string{"ns-a/w1@0 Dequeued"}, wantTotal: 1},
		"a phase no unit has":               {phase: schedulingv1alpha1.Reserved, limit: 5, want: []string{}, wantTotal: 0},
		"a phase no unit has, past its end": {phase: schedulingv1alpha1.Succeed, offset: 3, want: []string{}, wantTotal: 0},
		"a queue that does not exist":       {queue: "nobody", limit: 5, want: []string{}, wantTotal: 0},
	} {
		t.Run(name, func(t *testing.T) {
			queue := tc.queue
			if queue == "" {
				queue = "team"
			}
			got, total := c.QueueUnits(queue, tc.phase, tc.offset, tc.limit)
			if diff := cmp.Diff(tc.want, rows(got)); diff != "" {
				t.Errorf("QueueUnits(%q, %q, %d, %d) (-want +got):\n%s", queue, tc.phase, tc.offset, tc.limit, diff)
			}
			if total != tc.wantTotal {
				t.Errorf("QueueUnits(%q, %q, %d, %d) total = %d, want %d", queue, tc.phase, tc.offset, tc.limit, total, tc.wantTotal)
			}
			if got == nil {
				t.Errorf("QueueUnits(%q, %q, %d, %d) = nil, want a list (JSON [] rather than null)", queue, tc.phase, tc.offset, tc.limit)
			}
		})
	}
	reasons := map[string]string{}
	views, _ := c.QueueUnits("team", "", 0, 0)
	for _, v := range views {
		reasons[v.Namespace+"/"+v.Name] = v.Reason
	}
	wantReasons := map[string]string{
		"ns-b/w2":   "team: cpu 3 used of max 3, request 1",
		"ns-a/w3":   "waiting in queue team at position 2 of 3, behind a unit of another namespace",
		"ns-c/w4":   "waiting in queue team at position 3 of 3, behind a unit of another namespace",
		"ns-a/run1": "", "ns-a/w1": "", "ns-b/run0": "",
	}
	if diff := cmp.Diff(wantReasons, reasons); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
}

// TestQueueUnitsPagesAreBounded: whatever limit is asked, a page (and a
// what-if's list of waiting units) has at most api.MaxLimit units, so that
// no caller holds the admission lock for more; total still counts them all.
func TestQueueUnitsPagesAreBounded(t *testing.T) {
	const waiting, admitted = api.MaxLimit + 100, 20
	c := pageWorld(t, waiting, admitted)
	for _, limit := range []int{0, api.MaxLimit + 1, 100_000} {
		units, total := c.QueueUnits("team", "", 0, limit)
		if len(units) != api.MaxLimit || total != waiting+admitted {
			t.Errorf("limit %d: %d units of %d, want %d of %d", limit, len(units), total, api.MaxLimit, waiting+admitted)
		}
	}
	if units, _ := c.QueueUnits("team", "", waiting+admitted-5, 100_000); len(units) != 5 {
		t.Errorf("the last page: %d units, want the 5 left", len(units))
	}
	w, ok, err := c.WhatIf("team", api.QuotaChange{}, everyone)
	if err != nil || !ok || len(w.Items) != api.MaxLimit || w.Total != waiting {
		t.Errorf("what-if: %v %v, %d units of %d, want %d of %d", ok, err, len(w.Items), w.Total, api.MaxLimit, waiting)
	}
}

// wholeList is a queue's units as QueueUnits lists them, built the plain
// way (as QueueUnits once did), with c.mu held: a view of every waiting
// unit in the core's order, then of every unit of the Cache that holds
// quota in the queue, by namespace/name.
func wholeList(c *Cache, queue string) []api.UnitView {
	var all []api.UnitView
	for _, p := range c.core.Pending(queue, 0) {
		if r, ok := c.units[p.Key]; ok {
			v := unitView(c, r)
			v.Position = p.Position
			all = append(all, v)
		}
	}
	var holding []api.UnitView
	for _, r := range c.units {
		if r.queue == queue && (queueunit.HoldsQuota(r.unit) || r.admission != nil || r.leaving) {
			holding = append(holding, unitView(c, r))
		}
	}
	slices.SortFunc(holding, func(a, b api.UnitView) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return append(all, holding...)
}

// unitView is r's view built the plain way, in one go with c.mu held.
func unitView(c *Cache, r *unitRecord) api.UnitView {
	u := r.unit
	v := api.UnitView{Namespace: u.Namespace, Name: u.Name, Queue: r.queue, QuotaRule: string(r.rule), Phase: u.EffectivePhase(),
		Request: r.request, Resource: u.Spec.Resource, PodState: u.Status.PodState}
	if u.Spec.Priority != nil {
		v.Priority = *u.Spec.Priority
	}
	switch {
	case r.leaving:
		v.Request = c.podCharges.heldByPods(r).Requests
	case r.admission != nil && !queueunit.HoldsQuota(u):
		v.Phase = schedulingv1alpha1.Dequeued // admitted, the write in flight
		v.Request, v.PartialAdmission = r.admission.charged, queueunit.PartialNote(u, r.admission.partial)
	case queueunit.ResizedSinceAdmitted(u):
		v.Request = queueunit.Charged(u)
	case queueunit.HoldsQuota(u):
		partial := queueunit.PartialCounts(u)
		v.Request, v.PartialAdmission = queueunit.HeldWith(u, partial), queueunit.PartialNote(u, partial)
	}
	if v.Phase == schedulingv1alpha1.Enqueued && r.inCore {
		v.Reason = c.core.WaitReason(r.key)
	}
	if r.problem != "" {
		v.Reason = r.problem
	}
	return v
}

// pagePhases are the phases the property test filters by: every phase a
// unit of its worlds takes, and one none does.
var pagePhases = []schedulingv1alpha1.QueueUnitPhase{"", schedulingv1alpha1.Enqueued, schedulingv1alpha1.TimeoutBackoff,
	schedulingv1alpha1.Dequeued, schedulingv1alpha1.Running, schedulingv1alpha1.Reserved, schedulingv1alpha1.Succeed}

// TestQueueUnitsPageIsASliceOfTheList: in the writer-aware property
// test's worlds (writes late, lost and out of order, units resized,
// moved, deactivated and deleted, quotas and nodes changing, restarts),
// and with waiting units now and then sent to TimeoutBackoff as Koord-Queue
// did, after every step every page of every queue, for random phases,
// offsets and limits, is the slice of the whole list, filtered by phase,
// that it names; its total is the filtered list's length.
func TestQueueUnitsPageIsASliceOfTheList(t *testing.T) {
	quantities := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	seeds := 6
	if testing.Short() {
		seeds = 3
	}
	for seed := range int64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			w := newPropWorld(t, seed)
			w.faults = true
			for i := range 300 {
				what := w.step()
				if w.rng.Intn(10) == 0 {
					what = w.backOff()
				}
				w.remember(what)
				for _, queue := range append(slices.Clone(leafQuotas), "nobody") {
					w.cache.mu.Lock()
					all := wholeList(w.cache, queue)
					w.cache.mu.Unlock()
					for range 4 {
						phase := pagePhases[w.rng.Intn(len(pagePhases))]
						want := slices.DeleteFunc(slices.Clone(all), func(v api.UnitView) bool { return phase != "" && v.Phase != phase })
						wantTotal := len(want)
						offset, limit := w.rng.Intn(len(want)+3), w.rng.Intn(5)
						want = want[min(offset, len(want)):]
						if limit > 0 && limit < len(want) {
							want = want[:limit]
						}
						got, total := w.cache.QueueUnits(queue, phase, offset, limit)
						if diff := cmp.Diff(want, got, quantities, cmpopts.EquateEmpty()); diff != "" || total != wantTotal {
							t.Fatalf("step %d (%s): QueueUnits(%q, %q, %d, %d): total %d, want %d; (-want +got):\n%s\nlast steps:\n%s",
								i, what, queue, phase, offset, limit, total, wantTotal, diff, strings.Join(w.recent, "\n"))
						}
					}
				}
			}
			t.Logf("seed %d: %v", seed, w.seen)
		})
	}
}

// backOff sends a waiting unit to TimeoutBackoff, as an extension does
// when a job's pods did not start in time; koord-queue keeps such a unit
// out of its queue until it is Enqueued again.
func (w *propWorld) backOff() string {
	var waiting []schedulingv1alpha1.QueueUnit
	for _, u := range w.units() {
		if !queueunit.HoldsQuota(&u) && u.Status.Phase != schedulingv1alpha1.TimeoutBackoff && !queueunit.Finished(u.EffectivePhase()) {
			waiting = append(waiting, u)
		}
	}
	if len(waiting) == 0 {
		return "back off: no unit waits"
	}
	u := waiting[w.rng.Intn(len(waiting))]
	u.Status.Phase = schedulingv1alpha1.TimeoutBackoff
	w.must(w.api.Status().Update(context.Background(), &u))
	w.undelivered[u.Namespace+"/"+u.Name] = true
	w.seen["back off"]++
	return "back off " + u.Name
}

// TestQueueUnitsWhileUnitsChange: pages are read while units arrive, are
// admitted (decided, then seen admitted), finish and are deleted; a page's
// views are built after the lock is released, from what was copied under
// it, so -race finds no unit's state read there while it changes.
func TestQueueUnitsWhileUnitsChange(t *testing.T) {
	c := pageWorld(t, 50, 10)
	done := make(chan struct{})
	read := make(chan int)
	go func() {
		pages := 0
		defer func() { read <- pages }()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			phase := pagePhases[i%len(pagePhases)]
			if units, total := c.QueueUnits("team", phase, i%7, i%5); len(units) > total {
				t.Errorf("a page of %d units out of %d", len(units), total)
			}
			c.QueueUnit("tenant-3", fmt.Sprintf("job-%06d", i%80))
			pages++
		}
	}()
	t0 := time.Unix(2_000_000, 0)
	for i := range 300 {
		name := fmt.Sprintf("job-%06d", 60+i)
		u := wrappers.MakeQueueUnit(name, fmt.Sprintf("tenant-%d", i%10)).Quota("team").Request("cpu", "1").Priority(int32(i % 3))
		c.UpsertUnit(u.Obj())
		res := c.cycle(t0.Add(time.Duration(i)*time.Second), -1)
		for _, a := range res.Admissions {
			ns, n, _ := strings.Cut(a.Unit, "/")
			admitted := wrappers.MakeQueueUnit(n, ns).Quota("team").Request("cpu", "1").
				Phase(schedulingv1alpha1.Running).RunningAdmission(schedulingv1alpha1.DefaultPodSetName, 1, 1).Obj()
			c.UpsertUnit(admitted)
		}
		views, _ := c.QueueUnits("team", schedulingv1alpha1.Running, 0, 1)
		for _, v := range views { // the first running unit finishes, or goes
			if i%2 == 0 {
				c.UpsertUnit(wrappers.MakeQueueUnit(v.Name, v.Namespace).Quota("team").Request("cpu", "1").Phase(schedulingv1alpha1.Succeed).Obj())
			} else {
				c.DeleteUnit(v.Namespace, v.Name)
			}
		}
	}
	close(done)
	pages := <-read
	t.Logf("%d pages read", pages)
	if pages == 0 {
		t.Error("no page was read while the units changed")
	}
}
