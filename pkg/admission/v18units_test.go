package admission

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestKoordQueueUnitsChargedAtStart: the units Koord-Queue v1.8 leaves
// admitted (Dequeued, Running, or its gang phases, with or without
// status.admissions; its owner reference not a controller, its pod set
// named after the job) are charged to their quota when koord-queue starts
// and reads them, and never admitted again; a waiting unit that does not fit
// beside them waits.
func TestKoordQueueUnitsChargedAtStart(t *testing.T) {
	phases := []schedulingv1alpha1.QueueUnitPhase{
		schedulingv1alpha1.Dequeued, schedulingv1alpha1.Running, schedulingv1alpha1.Reserved,
		schedulingv1alpha1.SchedReady, schedulingv1alpha1.SchedSucceed, schedulingv1alpha1.SchedFailed,
	}
	for _, phase := range phases {
		for _, withAdmissions := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/admissions=%v", phase, withAdmissions), func(t *testing.T) {
				c := teamACache("4", "unused")
				w := wrappers.MakeQueueUnit("train", "ns").Quota("team-a").PodSet("train", 3, "cpu", "1").
					ConsumerOf("batch/v1", "Job").Phase(phase)
				if withAdmissions {
					w.RunningAdmission("train", 3, 3)
				}
				v18 := w.Obj()
				v18.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "job-uid"}}
				v18.Spec.Queue = "team-a"
				next := wrappers.MakeQueueUnit("next", "ns").Quota("team-a").PodSet("main", 2, "cpu", "1").Obj()
				next.CreationTimestamp = metav1.NewTime(time.Unix(100, 0))
				// An informer's start delivers them in no particular order.
				c.UpsertUnit(next)
				c.UpsertUnit(v18)

				res := c.cycle(time.Unix(200, 0), -1)
				var admitted []string
				for _, a := range res.Admissions {
					admitted = append(admitted, a.Unit)
				}
				if len(admitted) != 0 {
					t.Errorf("admitted %v, want none: ns/train holds 3 of team-a's 4 cpu", admitted)
				}
				used := c.views.quotaView("team-a").Used[corev1.ResourceCPU]
				if diff := cmp.Diff("3", used.String()); diff != "" {
					t.Errorf("team-a's cpu used (-want +got):\n%s", diff)
				}
			})
		}
	}
}
