package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestDecideGate: a pod of a queued job is created at koord-queue's gate
// unless its unit's admission covers it; an honest job's pod is left as it
// is; a pod of no queued job is left alone; a bare pod naming a quota is
// refused.
func TestDecideGate(t *testing.T) {
	admitted := wrappers.MakeQueueUnit("j", "ns").PodSet("main", 2, "cpu", "1").Phase(schedulingv1alpha1.Running).Admission("main", 2).Obj()
	waiting := wrappers.MakeQueueUnit("j", "ns").PodSet("main", 2, "cpu", "1").Phase(schedulingv1alpha1.Enqueued).Obj()
	evicted := wrappers.MakeQueueUnit("j", "ns").PodSet("main", 2, "cpu", "1").Phase(schedulingv1alpha1.Enqueued).Admission("main", 2).Obj()
	deleting := admitted.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	// covered is the pod of an honest released job: what each case changes.
	covered := func(change func(*newPod)) newPod {
		p := newPod{Job: true, Queued: true, Unit: admitted, Released: true, PodSet: "main", Taken: 1, Request: qt.Res("cpu", "1")}
		if change != nil {
			change(&p)
		}
		return p
	}
	gated := func(why string) GateVerdict { return GateVerdict{Gate: true, Why: why} }
	cases := map[string]struct {
		pod  newPod
		want GateVerdict
	}{
		"a pod of a released job that its admission covers is left as it is": {
			pod: covered(nil),
		},
		"a pod asking for less than admitted is covered": {
			pod: covered(func(p *newPod) { p.Request = qt.Res("cpu", "500m") }),
		},
		"a pod of a job whose unit waits is gated": {
			pod:  covered(func(p *newPod) { p.Unit, p.Released = waiting, false }),
			want: gated("QueueUnit j is not admitted (Enqueued)"),
		},
		"a pod of a job whose unit was evicted is gated while the unit's admissions are kept": {
			pod:  covered(func(p *newPod) { p.Unit, p.Released = evicted, false }),
			want: gated("QueueUnit j is not admitted (Enqueued)"),
		},
		"a pod of a job whose unit is being deleted is gated": {
			pod:  covered(func(p *newPod) { p.Unit = deleting }),
			want: gated("QueueUnit j is not admitted (Running)"),
		},
		"a pod of a job resumed by someone else before its release is gated": {
			pod:  covered(func(p *newPod) { p.Released = false }),
			want: gated("QueueUnit j has not released its job yet"),
		},
		"a pod of a queued job without a unit yet is gated": {
			pod:  covered(func(p *newPod) { p.Unit, p.Released = nil, false }),
			want: gated("its job's QueueUnit is not created yet"),
		},
		"a pod beyond the pods its pod set was admitted with is gated": {
			pod:  covered(func(p *newPod) { p.Taken = 2 }),
			want: gated("pod set main of QueueUnit j has the 2 pod(s) it was admitted with"),
		},
		"a pod asking for more than each pod was admitted with is gated": {
			pod:  covered(func(p *newPod) { p.Request = qt.Res("cpu", "2") }),
			want: gated("it asks for cpu=2, more than the cpu=1 each pod of pod set main of QueueUnit j was admitted with"),
		},
		"a pod asking for a resource its pod set was not admitted with is gated": {
			pod:  covered(func(p *newPod) { p.Request = qt.Res("cpu", "1", "nvidia.com/gpu", "1") }),
			want: gated("it asks for cpu=1, nvidia.com/gpu=1, more than the cpu=1 each pod of pod set main of QueueUnit j was admitted with"),
		},
		"a pod of a pod set the unit does not have is gated": {
			pod:  covered(func(p *newPod) { p.PodSet = "extra" }),
			want: gated(`QueueUnit j has no pod set "extra"`),
		},
		"a pod naming another unit than its job's is gated": {
			pod:  covered(func(p *newPod) { p.NamedUnit = "other" }),
			want: gated("it names QueueUnit other, not its job's, j"),
		},
		"a pod naming its own job's unit is covered": {
			pod: covered(func(p *newPod) { p.NamedUnit = "j" }),
		},
		"a pod of a made-up pod set (an Argo Workflow's) is covered whatever its number and size": {
			pod: covered(func(p *newPod) { p.MadeUp, p.Taken, p.Request = true, 5, qt.Res("cpu", "8") }),
		},
		"a pod of a made-up pod set is gated while its unit waits": {
			pod:  covered(func(p *newPod) { p.MadeUp, p.Unit, p.Released = true, waiting, false }),
			want: gated("QueueUnit j is not admitted (Enqueued)"),
		},
		"a pod of a job the queue does not manage is left alone": {
			pod: newPod{Job: true, PodSet: "main", Request: qt.Res("cpu", "8")},
		},
		"a pod of no job is left alone": {
			pod: newPod{Request: qt.Res("cpu", "8")},
		},
		"a bare pod that names a quota is refused": {
			pod: newPod{Bare: true, NamesQueue: true, Request: qt.Res("cpu", "8")},
			want: GateVerdict{Refuse: "a pod that names a quota (quota.scheduling.koordinator.sh/name) or a QueueUnit (koord-queue/related-queueunit) must be made by a queued job: " +
				"koord-queue does not queue bare pods. Run it as a Job submitted with spec.suspend: true, which waits for its quota"},
		},
		"a bare pod that names no quota is left alone": {
			pod: newPod{Bare: true, Request: qt.Res("cpu", "8")},
		},
		"a bare pod a queued job lists as its pods' owner (a Spark driver) is judged as the job's": {
			pod:  covered(func(p *newPod) { p.Bare, p.NamesQueue, p.Unit, p.Released = true, true, waiting, false }),
			want: gated("QueueUnit j is not admitted (Enqueued)"),
		},
		"a pod created bound to a node that would be gated is refused, since a gate cannot hold it": {
			pod:  covered(func(p *newPod) { p.Node, p.Unit, p.Released = "node-1", waiting, false }),
			want: GateVerdict{Refuse: "the pod names node node-1, but koord-queue has not admitted it: QueueUnit j is not admitted (Enqueued)"},
		},
		"a pod created bound to a node that its admission covers is left as it is": {
			pod: covered(func(p *newPod) { p.Node = "node-1" }),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, decideGate(tc.pod)); diff != "" {
				t.Errorf("decideGate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStripPodKeepsWhatOpeningTheGateReads: a pod at koord-queue's gate
// keeps in the cache its gates, its unit's name and what it asks for; any
// other pod none of them.
func TestStripPodKeepsWhatOpeningTheGateReads(t *testing.T) {
	gatedPod := wrappers.MakePod("p", "ns").OfUnit("j", "main").Requests("cpu", "2").Obj()
	gatedPod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "other"}, {Name: schedulingv1alpha1.SchedulingGateAdmission}}
	gatedPod.Spec.Overhead = qt.Res("memory", "1Mi")
	plain := wrappers.MakePod("p", "ns").OfUnit("j", "main").Requests("cpu", "2").Obj()
	for name, tc := range map[string]struct {
		pod       *corev1.Pod
		wantGates []corev1.PodSchedulingGate
		wantUnit  string
		wantReq   corev1.ResourceList
	}{
		"gated":     {pod: gatedPod, wantGates: gatedPod.Spec.SchedulingGates, wantUnit: "j", wantReq: qt.Res("cpu", "2", "memory", "1Mi")},
		"not gated": {pod: plain, wantReq: corev1.ResourceList{}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := StripPod(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			stripped := got.(*corev1.Pod)
			if diff := cmp.Diff(tc.wantGates, stripped.Spec.SchedulingGates); diff != "" {
				t.Errorf("gates (-want +got):\n%s", diff)
			}
			if got := stripped.Annotations[schedulingv1alpha1.AnnotationRelatedQueueUnit]; got != "" && got != "ns/"+tc.wantUnit || got == "" && tc.wantUnit != "" {
				t.Errorf("unit annotation %q, want the unit %q", got, tc.wantUnit)
			}
			if diff := cmp.Diff(tc.wantReq, resourcesOfPod(stripped)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func resourcesOfPod(p *corev1.Pod) corev1.ResourceList {
	return resources.PodRequests(&p.Spec)
}
