package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// Names stay in their namespace, through the whole controller: the real
// Cache, Loop and Writer run worlds whose units come from several
// namespaces and share quotas and queues (reclaim between quotas a and b,
// in-queue preemption, wait-for-pods-running), and after every step
// nothing a namespace reads names a unit of another: its units' status
// message and conditions, the events on them, and the visibility API's
// reasons for the units it may see.

// namesEvent is an event as the recorder got it, with the namespace of the
// object it is about.
type namesEvent struct {
	namespace, name, message string
}

// namesRecorder keeps every event with its object's namespace.
type namesRecorder struct {
	events []namesEvent
}

func (r *namesRecorder) Event(obj runtime.Object, _, _, message string) {
	m, _ := obj.(metav1.Object)
	r.events = append(r.events, namesEvent{namespace: m.GetNamespace(), name: m.GetName(), message: message})
}

func (r *namesRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	r.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

func (r *namesRecorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventType, reason, format string, args ...any) {
	r.Eventf(obj, eventType, reason, format, args...)
}

// namesWorld is a propWorld without faults whose units come from four
// namespaces, named so that no text contains a name by chance.
type namesWorld struct {
	*propWorld
	recorder *namesRecorder
	// keys of every unit ever created.
	keys []string
}

func newNamesWorld(t *testing.T, seed int64) *namesWorld {
	w := &namesWorld{propWorld: emptyPropWorld(t, seed), recorder: &namesRecorder{}}
	w.createQuotasAndNodes(func(string) map[string]string {
		annotations := map[string]string{policy.AnnotationPreemptionDelay: "0"}
		if w.rng.Intn(2) == 0 {
			annotations[schedulingv1alpha1.AnnotationEnableQueueUnitPreemption] = "true"
			annotations[policy.AnnotationPreemptRunning] = fmt.Sprint(w.rng.Intn(2) == 0)
		}
		if w.rng.Intn(3) == 0 {
			annotations[schedulingv1alpha1.AnnotationWaitForPodsRunning] = "true"
		}
		return annotations
	})
	w.start()
	w.writer.recorder = w.recorder
	return w
}

// newUnit is a unit of one of four namespaces ("tenant-2/job0042z").
func (w *namesWorld) newUnit() {
	w.nextUnit++
	u := &schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("tenant-%d", w.rng.Intn(4)), Name: fmt.Sprintf("job%04dz", w.nextUnit),
			Labels: map[string]string{elasticquotav1alpha1.LabelQuotaName: leafQuotas[w.rng.Intn(len(leafQuotas))]}},
		Spec: schedulingv1alpha1.QueueUnitSpec{Resource: cpu(1 + w.rng.Int63n(3)), Priority: ptr.To(int32(w.rng.Intn(4)))},
	}
	w.must(w.api.Create(context.Background(), u))
	key := u.Namespace + "/" + u.Name
	w.undelivered[key] = true
	w.keys = append(w.keys, key)
}

// followOne is an extension following one unit's job (propWorld.follow):
// an evicted job's pods go, a released one runs, a running one may finish.
func (w *namesWorld) followOne() string {
	var holding []schedulingv1alpha1.QueueUnit
	for _, u := range w.units() {
		if queueunit.HoldsQuota(&u) {
			holding = append(holding, u)
		}
	}
	if len(holding) == 0 {
		return "follow: no job"
	}
	return w.follow(holding[w.rng.Intn(len(holding))], w.rng.Intn(3) == 0)
}

func (w *namesWorld) step() string {
	switch r := w.rng.Intn(100); {
	case r < 20:
		w.newUnit()
		return "new unit"
	case r < 40:
		w.cycle()
		return "cycle"
	case r < 65:
		return w.writeOne()
	case r < 85:
		return w.deliverOne()
	case r < 97:
		return w.followOne()
	default:
		w.clock.Step(time.Second)
		return "tick"
	}
}

// checkNames: nothing a namespace reads names a unit of another.
func (w *namesWorld) checkNames(stepNo int, what string) {
	w.t.Helper()
	check := func(reader, where, text string) {
		w.t.Helper()
		for _, k := range w.keys {
			ns, name, _ := strings.Cut(k, "/")
			if ns != reader && strings.Contains(text, name) {
				w.t.Fatalf("step %d (%s): %s, read by namespace %s, names %s: %q\nlast steps:\n%s",
					stepNo, what, where, reader, k, text, strings.Join(w.recent, "\n"))
			}
		}
	}
	if strings.HasPrefix(what, "write") { // only koord-queue's writes change what it says
		for _, u := range w.units() {
			key := u.Namespace + "/" + u.Name
			check(u.Namespace, "the status message of "+key, u.Status.Message)
			for _, c := range u.Status.Conditions {
				check(u.Namespace, fmt.Sprintf("the %s condition of %s", c.Type, key), c.Message)
			}
		}
	}
	for _, key := range w.keys {
		ns, name, _ := strings.Cut(key, "/")
		if v, ok := w.cache.QueueUnit(ns, name); ok {
			check(ns, "the visibility reason of "+key, v.Reason)
		}
	}
	for _, e := range w.recorder.events {
		if strings.HasPrefix(e.message, "preempted") {
			w.seen["preempted"]++
		}
		check(e.namespace, "an event on "+e.namespace+"/"+e.name, e.message)
	}
	w.recorder.events = w.recorder.events[:0]
	for _, q := range leafQuotas {
		views, _ := w.cache.QueueUnits(q, "", 0, 0)
		for _, v := range views {
			check(v.Namespace, "the visibility reason of "+v.Namespace+"/"+v.Name+" in queue "+q, v.Reason)
		}
	}
}

func TestNamesStayInTheirNamespace(t *testing.T) {
	preempted := 0
	for seed := range int64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			w := newNamesWorld(t, seed)
			for range 12 {
				w.newUnit()
			}
			for i := range 300 {
				what := w.step()
				w.remember(what)
				w.checkNames(i, what)
			}
			t.Logf("seed %d: %v", seed, w.seen)
			preempted += w.seen["preempted"]
		})
	}
	if preempted == 0 {
		t.Error("no unit was preempted: the worlds test nothing of preemption")
	}
}
