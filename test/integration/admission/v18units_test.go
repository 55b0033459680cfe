package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestKoordQueueUnitsChargedAfterSwitch starts koord-queue on what Koord-Queue
// v1.8 left: a Running unit with status.admissions and a Dequeued one without
// (each owned by its Job without controller: true, its pod set named after
// the Job), and a unit waiting for what is left. koord-queue charges the two
// before it decides anything: the waiting unit waits for cpu, the two are
// never admitted again, and once one finishes the waiting unit is admitted.
func TestKoordQueueUnitsChargedAfterSwitch(t *testing.T) {
	ns := namespace(t)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "4").Obj())
	v18 := func(name string, pods int32) *schedulingv1alpha1.QueueUnit {
		u := wrappers.MakeQueueUnit(name, ns).Quota(ns).PodSet(name, pods, "cpu", "1").Consumer().Obj()
		u.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: types.UID("uid-of-" + name)}}
		u.Spec.Queue = ns
		return u
	}
	create(t, v18("running", 2), v18("dequeued", 1))
	setStatus(t, ns, "running", func(u *schedulingv1alpha1.QueueUnit) {
		u.Status.Phase = schedulingv1alpha1.Running
		u.Status.Admissions = []schedulingv1alpha1.Admission{{Name: "running", Replicas: 2, Running: 2}}
	})
	setStatus(t, ns, "dequeued", func(u *schedulingv1alpha1.QueueUnit) { u.Status.Phase = schedulingv1alpha1.Dequeued })
	create(t, wrappers.MakeQueueUnit("next", ns).Quota(ns).PodSet("main", 2, "cpu", "1").Obj())

	startKoordQueue(t, fastOptions())
	waitMessage(t, ns, "next", "cpu")
	for name, phase := range map[string]schedulingv1alpha1.QueueUnitPhase{"running": schedulingv1alpha1.Running, "dequeued": schedulingv1alpha1.Dequeued} {
		u, err := getUnit(context.Background(), ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if u.Status.Phase != phase || u.Status.Attempts != 0 || u.Status.LastAllocateTime != nil {
			t.Errorf("unit %s: phase %s, attempts %d, lastAllocateTime %v; want %s, never admitted again", name, u.Status.Phase, u.Status.Attempts, u.Status.LastAllocateTime, phase)
		}
	}
	finish(t, ns, "running")
	waitPhase(t, ns, "next", schedulingv1alpha1.Dequeued)
}
