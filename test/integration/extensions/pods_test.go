package extensions

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// TestPodsOnNodesAreCounted: for an admitted job of each framework, pods
// made as its framework's controller makes them drive its unit's
// admissions[].running, by pod set: a pod counts once a node took it, a
// pending or failed one does not, nor one of another job. PodsReady says
// which pod set is short until every one is whole.
func TestPodsOnNodesAreCounted(t *testing.T) {
	for _, d := range drivers() {
		t.Run(d.integ.Name, func(t *testing.T) {
			t.Parallel()
			testPodsOnNodesAreCounted(t, d)
		})
	}
}

func testPodsOnNodesAreCounted(t *testing.T, d driver) {
	ns := newNamespace(t)
	obj := d.newJob(ns)
	create(t, obj)
	jobKey := client.ObjectKeyFromObject(obj)
	unitKey := client.ObjectKey{Namespace: ns, Name: d.integ.UnitName(obj.GetName())}
	unitWhere(t, unitKey, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
	admit(t, unitKey)
	jobWhere(t, d.integ, jobKey, "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })
	updateJobStatus(t, obj, func() { d.running(obj) })

	// Every pod set has its pods on nodes but the first, one of whose pods
	// is pending. A pod that failed on a node and a pod of another job of
	// the kind do not count.
	first := d.wantPodSets[0]
	want := map[string]int64{}
	var pending *corev1.Pod
	for _, ps := range d.wantPodSets {
		want[ps.Name] = 0
		for i := range int(ps.Count) {
			p := d.pod(obj, ps.Name, i)
			if ps == first && i == int(ps.Count)-1 {
				pending = p
			} else {
				p.Spec.NodeName = "node-1"
				want[ps.Name]++
			}
			create(t, p)
		}
	}
	failed := d.pod(obj, first.Name, 99)
	failed.Spec.NodeName = "node-1"
	create(t, failed)
	failed.Status.Phase = corev1.PodFailed
	if err := k8s.Status().Update(context.Background(), failed); err != nil {
		t.Fatal(err)
	}
	other := obj.DeepCopyObject().(client.Object)
	other.SetName("other")
	other.SetUID(obj.GetUID() + "-other")
	stranger := d.pod(other, first.Name, 0)
	stranger.Spec.NodeName = "node-1"
	create(t, stranger)

	short := fmt.Sprintf("pod set %s has %d of %d pods scheduled", first.Name, first.Count-1, first.Count)
	unitWhere(t, unitKey, fmt.Sprintf("running %v, PodsReady false: %s", want, short), func(u *schedulingv1alpha1.QueueUnit) bool {
		return cmp.Equal(want, admittedRunning(u)) && podsReady(u) == "False: "+short
	})

	// A node takes the pending pod: every pod set is whole.
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pending.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-2"}}
	if err := k8s.SubResource("binding").Create(context.Background(), pending, binding); err != nil {
		t.Fatalf("binding pod %s: %v", pending.Name, err)
	}
	want[first.Name]++
	unitWhere(t, unitKey, fmt.Sprintf("running %v, PodsReady true", want), func(u *schedulingv1alpha1.QueueUnit) bool {
		return cmp.Equal(want, admittedRunning(u)) && apimeta.IsStatusConditionTrue(u.Status.Conditions, schedulingv1alpha1.QueueUnitPodsReady)
	})
}

// admittedRunning is each admission's running count.
func admittedRunning(u *schedulingv1alpha1.QueueUnit) map[string]int64 {
	out := map[string]int64{}
	for _, a := range u.Status.Admissions {
		out[a.Name] = a.Running
	}
	return out
}

// podsReady is the PodsReady condition as "Status: message".
func podsReady(u *schedulingv1alpha1.QueueUnit) string {
	c := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitPodsReady)
	if c == nil {
		return ""
	}
	return string(c.Status) + ": " + c.Message
}
