package queueunit_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestAdmitPartially: a partial admission writes the pods admitted as each
// pod set's replicas, with what they ask for, and says so; read back, the
// admissions give the same counts and charge (what a restart finds).
func TestAdmitPartially(t *testing.T) {
	type want struct {
		Admissions []schedulingv1alpha1.Admission
		Message    string
		Partial    map[string]int32
		Held       corev1.ResourceList
	}
	cases := []struct {
		name    string
		unit    *schedulingv1alpha1.QueueUnit
		partial map[string]int32
		checks  []string
		want    want
	}{
		{
			name:    "fewer pods of one pod set",
			unit:    wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1", "memory", "1Gi").MinCount(2).Obj(),
			partial: map[string]int32{"main": 3},
			want: want{
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 3, Resources: qt.Res("cpu", "3", "memory", "3Gi")}},
				Message:    "admitted by queue team-a: 3 of 4 pods of pod set main (partial admission)",
				Partial:    map[string]int32{"main": 3},
				Held:       qt.Res("cpu", "3", "memory", "3Gi"),
			},
		},
		{
			name: "fewer pods of two pod sets; a third keeps all its pods",
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("launcher", 1, "cpu", "1").
				PodSet("ps", 4, "cpu", "1").MinCount(2).PodSet("worker", 8, "cpu", "2").MinCount(4).Obj(),
			partial: map[string]int32{"ps": 3, "worker": 6},
			want: want{
				Admissions: []schedulingv1alpha1.Admission{
					{Name: "launcher", Replicas: 1, Resources: qt.Res("cpu", "1")},
					{Name: "ps", Replicas: 3, Resources: qt.Res("cpu", "3")},
					{Name: "worker", Replicas: 6, Resources: qt.Res("cpu", "12")},
				},
				Message: "admitted by queue team-a: 3 of 4 pods of pod set ps, 6 of 8 pods of pod set worker (partial admission)",
				Partial: map[string]int32{"ps": 3, "worker": 6},
				Held:    qt.Res("cpu", "16"),
			},
		},
		{
			name:    "with admission checks the reservation says how many",
			unit:    wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(2).Obj(),
			partial: map[string]int32{"main": 2},
			checks:  []string{"prov"},
			want: want{
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2, Resources: qt.Res("cpu", "2")}},
				Message:    "quota reserved in queue team-a for 2 of 4 pods of pod set main (partial admission); waiting for admission checks [prov]",
				Partial:    map[string]int32{"main": 2},
				Held:       qt.Res("cpu", "2"),
			},
		},
		{
			name: "a whole admission is written as before",
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(2).Obj(),
			want: want{
				Admissions: []schedulingv1alpha1.Admission{{Name: "main", Replicas: 4, Resources: qt.Res("cpu", "4")}},
				Message:    "admitted by queue team-a",
				Held:       qt.Res("cpu", "4"),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.unit
			if !queueunit.Admissible(u, "team-a", queueunit.Request(u), tc.partial) {
				t.Fatal("not admissible as decided")
			}
			queueunit.Admit(u, "team-a", queueunit.Request(u), tc.partial, tc.checks, now)
			got := want{Admissions: u.Status.Admissions, Message: u.Status.Message, Partial: queueunit.PartialCounts(u), Held: queueunit.Held(u)}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(resources.Equal)); diff != "" {
				t.Errorf("after Admit (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(queueunit.HeldWith(u, tc.partial), got.Held, cmp.Comparer(resources.Equal)); diff != "" {
				t.Errorf("read back, the charge is not the one decided (-decided +read back):\n%s", diff)
			}
		})
	}
}

// TestPartialCounts: only admissions of pod sets with a minCount, in a unit
// whose pod sets ask for its request, read as a partial admission; anything
// else holds its Request, as before.
func TestPartialCounts(t *testing.T) {
	cases := []struct {
		name        string
		unit        *schedulingv1alpha1.QueueUnit
		wantPartial map[string]int32
		wantHeld    corev1.ResourceList
	}{
		{
			name:        "admitted with fewer pods than a pod set with a minCount asks",
			unit:        wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(2).Admission("main", 2).Obj(),
			wantPartial: map[string]int32{"main": 2},
			wantHeld:    qt.Res("cpu", "2"),
		},
		{
			name:        "evicted, its pods not gone yet: it still holds what it was admitted with",
			unit:        wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(2).Admission("main", 2).Phase(schedulingv1alpha1.Enqueued).Obj(),
			wantPartial: map[string]int32{"main": 2},
			wantHeld:    qt.Res("cpu", "2"),
		},
		{
			name:     "admitted whole",
			unit:     wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(2).Admission("main", 4).Obj(),
			wantHeld: qt.Res("cpu", "4"),
		},
		{
			name:     "no minCount: a unit resized while admitted holds its new size, as before",
			unit:     wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").Admission("main", 2).Obj(),
			wantHeld: qt.Res("cpu", "4"),
		},
		{
			name: "a spec.resource its pod sets do not add up to: it holds that",
			unit: func() *schedulingv1alpha1.QueueUnit {
				u := wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(2).Admission("main", 2).Obj()
				u.Spec.Resource = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
				return u
			}(),
			wantHeld: qt.Res("cpu", "3"),
		},
		{
			name:     "waiting",
			unit:     wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(2).Obj(),
			wantHeld: qt.Res("cpu", "4"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantPartial, queueunit.PartialCounts(tc.unit)); diff != "" {
				t.Errorf("PartialCounts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantHeld, queueunit.Held(tc.unit), cmp.Comparer(resources.Equal)); diff != "" {
				t.Errorf("Held (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMayAdmitPartially: a unit may be admitted with fewer pods only when a
// pod set has a minCount below its count and its pod sets are its request.
func TestMayAdmitPartially(t *testing.T) {
	cases := []struct {
		name string
		unit *schedulingv1alpha1.QueueUnit
		want bool
	}{
		{name: "a minCount below the count", unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(2).Obj(), want: true},
		{name: "a minCount equal to the count", unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(4).Obj()},
		{name: "no minCount", unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").Obj()},
		{name: "spec.resource equal to its pod sets, as extensions write it",
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(2).Request("cpu", "4").Obj(), want: true},
		{name: "spec.resource other than its pod sets",
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(2).Request("cpu", "2").Obj()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := queueunit.MayAdmitPartially(tc.unit); got != tc.want {
				t.Errorf("MayAdmitPartially = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAdmissiblePartially: counts decided for a partial admission are
// written only while the unit's pod sets still allow them; otherwise its
// admissions would not read back as what was charged.
func TestAdmissiblePartially(t *testing.T) {
	job := func() *wrappers.QueueUnitWrapper {
		return wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1")
	}
	cases := []struct {
		name    string
		unit    *schedulingv1alpha1.QueueUnit
		partial map[string]int32
		want    bool
	}{
		{name: "allowed", unit: job().MinCount(2).Obj(), partial: map[string]int32{"main": 2}, want: true},
		{name: "its minCount was taken away", unit: job().Obj(), partial: map[string]int32{"main": 2}},
		{name: "a pod set it no longer has", unit: job().MinCount(2).Obj(), partial: map[string]int32{"workers": 2}},
		{name: "its count is now the count decided", unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2, "cpu", "1").MinCount(1).Obj(),
			partial: map[string]int32{"main": 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := queueunit.Admissible(tc.unit, "team-a", queueunit.Request(tc.unit), tc.partial); got != tc.want {
				t.Errorf("Admissible = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestChargedKeepsTheAdmittedSize: a unit that holds quota is charged what
// it was admitted with, whatever its spec says since (a new size is charged
// only by a new admission, with a fit check).
func TestChargedKeepsTheAdmittedSize(t *testing.T) {
	admittedAt := func(u *schedulingv1alpha1.QueueUnit, partial map[string]int32) *wrappers.QueueUnitWrapper {
		queueunit.Admit(u, "team", queueunit.Request(u), partial, nil, metav1.Now())
		return &wrappers.QueueUnitWrapper{QueueUnit: *u}
	}
	resizedTo := func(w *wrappers.QueueUnitWrapper, count int32) *schedulingv1alpha1.QueueUnit {
		u := w.Obj()
		u.Spec.PodSets[0].Count = count
		u.Spec.Resource = resources.PodSetsRequests(u.Spec.PodSets)
		u.Spec.Request = u.Spec.Resource.DeepCopy()
		return u
	}
	unit := func(count int32) *schedulingv1alpha1.QueueUnit {
		return resizedTo(wrappers.MakeQueueUnit("u", "ns").PodSet("main", count, "cpu", "1"), count)
	}
	cases := []struct {
		name        string
		unit        *schedulingv1alpha1.QueueUnit
		wantCharged corev1.ResourceList
		wantResized bool
	}{
		{name: "as admitted", unit: admittedAt(unit(2), nil).Obj(), wantCharged: qt.Res("cpu", "2")},
		{name: "grown from 2 to 6 pods while admitted: charged 2", unit: resizedTo(admittedAt(unit(2), nil), 6),
			wantCharged: qt.Res("cpu", "2"), wantResized: true},
		{name: "shrunk from 4 to 2 pods while admitted: charged 4 until it leaves", unit: resizedTo(admittedAt(unit(4), nil), 2),
			wantCharged: qt.Res("cpu", "4"), wantResized: true},
		{name: "evicted, its pods not gone, grown meanwhile: charged what it was admitted with", unit: func() *schedulingv1alpha1.QueueUnit {
			u := resizedTo(admittedAt(unit(2), nil), 6)
			u.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Job", Name: "j"} // its pods are its extension's to report gone
			queueunit.Evict(u, schedulingv1alpha1.EvictedByPreemption, "preempted", metav1.Now())
			return u
		}(), wantCharged: qt.Res("cpu", "2"), wantResized: true},
		{name: "admitted partially, 2 of 4", unit: func() *schedulingv1alpha1.QueueUnit {
			u := wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(2).Obj()
			u.Spec.Resource = resources.PodSetsRequests(u.Spec.PodSets)
			return admittedAt(u, map[string]int32{"main": 2}).Obj()
		}(), wantCharged: qt.Res("cpu", "2")},
		{name: "admissions that record no resources (an older writer's): what it asks for",
			unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").Admission("main", 2).Phase(schedulingv1alpha1.Running).Obj(), wantCharged: qt.Res("cpu", "4")},
		{name: "a spec.resource its pod sets do not add up to: it holds that", unit: func() *schedulingv1alpha1.QueueUnit {
			u := admittedAt(unit(2), nil).Obj()
			u.Spec.Resource = qt.Res("cpu", "3")
			return u
		}(), wantCharged: qt.Res("cpu", "3")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantCharged, queueunit.Charged(tc.unit), cmp.Comparer(resources.Equal)); diff != "" {
				t.Errorf("Charged (-want +got):\n%s", diff)
			}
			if got := queueunit.ResizedSinceAdmitted(tc.unit); got != tc.wantResized {
				t.Errorf("ResizedSinceAdmitted = %v, want %v", got, tc.wantResized)
			}
		})
	}
}

// TestAdmittedPods: what a unit's admission covers of one pod set, the
// rule the pod gate lets pods through by.
func TestAdmittedPods(t *testing.T) {
	type want struct {
		Count  int32
		PerPod corev1.ResourceList
		OK     bool
	}
	admitted := func() *wrappers.QueueUnitWrapper {
		return wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").MinCount(2).PodSet("ps", 1, "cpu", "2").Phase(schedulingv1alpha1.Running)
	}
	cases := []struct {
		name   string
		unit   *schedulingv1alpha1.QueueUnit
		podSet string
		want   want
	}{
		{name: "whole admission: the pod set's count", unit: admitted().Admission("main", 4).Obj(), podSet: "main",
			want: want{Count: 4, PerPod: qt.Res("cpu", "1"), OK: true}},
		{name: "partial admission: the replicas admitted", unit: admitted().Admission("main", 2).Obj(), podSet: "main",
			want: want{Count: 2, PerPod: qt.Res("cpu", "1"), OK: true}},
		{name: "admissions not written: the count", unit: admitted().Obj(), podSet: "ps",
			want: want{Count: 1, PerPod: qt.Res("cpu", "2"), OK: true}},
		{name: "replicas above the count: the count", unit: admitted().Admission("ps", 9).Obj(), podSet: "ps",
			want: want{Count: 1, PerPod: qt.Res("cpu", "2"), OK: true}},
		{name: "no such pod set", unit: admitted().Obj(), podSet: "other"},
		{name: "waiting", unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").Phase(schedulingv1alpha1.Enqueued).Obj(), podSet: "main"},
		{name: "evicted, its admissions kept until its pods are gone", unit: wrappers.MakeQueueUnit("u", "ns").PodSet("main", 4, "cpu", "1").
			Phase(schedulingv1alpha1.Enqueued).Admission("main", 4).Obj(), podSet: "main"},
		{name: "finished", unit: admitted().Phase(schedulingv1alpha1.Succeed).Obj(), podSet: "main"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got want
			got.Count, got.PerPod, got.OK = queueunit.AdmittedPods(tc.unit, tc.podSet)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(resources.Equal)); diff != "" {
				t.Errorf("AdmittedPods (-want +got):\n%s", diff)
			}
		})
	}
}
