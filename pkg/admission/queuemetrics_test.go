package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestQueueCountsFollowTheCache: a scrape says how many units of each Queue
// wait and hold quota as the Cache holds them at that moment (no cycle, no
// status tick in between), and a deleted Queue's series are gone.
func TestQueueCountsFollowTheCache(t *testing.T) {
	c := teamCache("4")
	collector := &queueCountsCollector{views: &c.views}
	unit := func(name string) *wrappers.QueueUnitWrapper {
		return wrappers.MakeQueueUnit(name, "ns").Quota("team").PodSet("main", 1, "cpu", "2")
	}
	c.UpsertUnit(unit("running").Phase(schedulingv1alpha1.Running).Admission("main", 1).Obj())
	c.UpsertUnit(unit("waiting-1").Obj())
	c.UpsertUnit(unit("waiting-2").Request(corev1.ResourceCPU, "2").Obj())
	want := map[string]float64{
		`koord_queue_pending_units{queue="team"}`:  2,
		`koord_queue_admitted_units{queue="team"}`: 1,
	}
	if diff := cmp.Diff(want, gather(t, collector)); diff != "" {
		t.Errorf("metrics with one unit admitted and two waiting (-want +got):\n%s", diff)
	}

	c.DeleteUnit("ns", "waiting-1")
	want[`koord_queue_pending_units{queue="team"}`] = 1
	if diff := cmp.Diff(want, gather(t, collector)); diff != "" {
		t.Errorf("metrics once a waiting unit is deleted (-want +got):\n%s", diff)
	}

	c.DeleteQueue("team")
	if diff := cmp.Diff(map[string]float64{}, gather(t, collector)); diff != "" {
		t.Errorf("metrics once the Queue is deleted (-want +got):\n%s", diff)
	}
}
