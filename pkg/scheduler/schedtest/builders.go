// Package schedtest has builders for scheduler test objects:
//
//	schedtest.MakeUnit("default/job-1", "team-a").Priority(5).Request("cpu", "4").Obj()
package schedtest

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
)

// T0 is the time test units are enqueued from.
var T0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// UnitWrapper builds a scheduler.Unit.
type UnitWrapper struct{ scheduler.Unit }

// MakeUnit starts a unit of priority 0 enqueued at T0.
func MakeUnit(key, queue string) *UnitWrapper {
	return &UnitWrapper{scheduler.Unit{Key: key, Queue: queue, EnqueueTime: T0}}
}

// Priority sets the priority.
func (w *UnitWrapper) Priority(p int32) *UnitWrapper { w.Unit.Priority = p; return w }

// Request sets the request from name, quantity pairs.
func (w *UnitWrapper) Request(pairs ...string) *UnitWrapper {
	w.Unit.Request = quotatest.Res(pairs...)
	return w
}

// PodSet adds a pod set of count pods asking pairs each, which can start
// with as few as minCount of them (0: all); its pods are added to the
// unit's request.
func (w *UnitWrapper) PodSet(name string, count, minCount int32, pairs ...string) *UnitWrapper {
	w.Unit.PodSets = append(w.Unit.PodSets, scheduler.PodSet{Name: name, Count: count, MinCount: minCount, PodRequest: quotatest.Res(pairs...)})
	var podRequests []corev1.ResourceList
	var counts []int32
	for _, ps := range w.Unit.PodSets {
		podRequests, counts = append(podRequests, ps.PodRequest), append(counts, ps.Count)
	}
	w.Unit.Request = resources.PodsRequests(podRequests, counts)
	return w
}

// Partial marks an admitted unit as holding only n pods of pod set name
// (Unit.Partial).
func (w *UnitWrapper) Partial(name string, n int32) *UnitWrapper {
	if w.Unit.Partial == nil {
		w.Unit.Partial = map[string]int32{}
	}
	w.Unit.Partial[name] = n
	return w
}

// Enqueued sets the enqueue time to T0 plus d.
func (w *UnitWrapper) Enqueued(d time.Duration) *UnitWrapper { w.EnqueueTime = T0.Add(d); return w }

// Admitted marks the unit as holding quota since T0 plus d.
func (w *UnitWrapper) Admitted(d time.Duration) *UnitWrapper {
	w.Unit.Admitted, w.AdmitTime = true, T0.Add(d)
	return w
}

// Running marks the unit's pods as running.
func (w *UnitWrapper) Running() *UnitWrapper { w.Unit.Running = true; return w }

// NotRunning says what the admitted unit lacks to be running.
func (w *UnitWrapper) NotRunning(why string) *UnitWrapper { w.Unit.NotRunning = why; return w }

// Obj returns the Unit.
func (w *UnitWrapper) Obj() scheduler.Unit { return w.Unit }

// QueueWrapper builds a scheduler.QueueSpec.
type QueueWrapper struct{ scheduler.QueueSpec }

// MakeQueue starts a Priority queue for the quota of the same name.
func MakeQueue(name string) *QueueWrapper {
	return &QueueWrapper{scheduler.QueueSpec{Name: name, Priority: schedulingv1alpha1.DefaultQueuePriority, Config: policy.DefaultConfig()}}
}

// Quota sets the quota the queue charges.
func (w *QueueWrapper) Quota(q string) *QueueWrapper { w.QueueSpec.Quota = q; return w }

// Priority sets the queue's priority.
func (w *QueueWrapper) Priority(p int32) *QueueWrapper { w.QueueSpec.Priority = p; return w }

// Policy sets the queue policy.
func (w *QueueWrapper) Policy(p schedulingv1alpha1.QueuePolicy) *QueueWrapper {
	w.Config.Policy = p
	return w
}

// Threshold sets Intelligent's priority threshold.
func (w *QueueWrapper) Threshold(t int32) *QueueWrapper { w.Config.PriorityThreshold = t; return w }

// MaxDepth sets max-depth.
func (w *QueueWrapper) MaxDepth(d int) *QueueWrapper { w.Config.MaxDepth = d; return w }

// WaitForPodsRunning sets wait-for-pods-running.
func (w *QueueWrapper) WaitForPodsRunning() *QueueWrapper {
	w.Config.WaitForPodsRunning = true
	return w
}

// Preemption enables in-queue preemption.
func (w *QueueWrapper) Preemption() *QueueWrapper { w.Config.EnablePreemption = true; return w }

// PreemptRunning lets in-queue preemption evict running units.
func (w *QueueWrapper) PreemptRunning() *QueueWrapper { w.Config.PreemptRunning = true; return w }

// PreemptionDelay sets how long a head that could preempt first waits for
// quota to free (koord-queue/preemption-delay; 0: it preempts at once).
func (w *QueueWrapper) PreemptionDelay(d time.Duration) *QueueWrapper {
	w.Config.PreemptionDelay = d
	return w
}

// LowMaxWait sets Intelligent's starvation protection.
func (w *QueueWrapper) LowMaxWait(d time.Duration) *QueueWrapper {
	w.Config.LowPriorityMaxWait = d
	return w
}

// Obj returns the QueueSpec.
func (w *QueueWrapper) Obj() scheduler.QueueSpec { return w.QueueSpec }
