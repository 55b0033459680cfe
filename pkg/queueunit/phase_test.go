package queueunit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// crdPhases are the phases the QueueUnit CRD accepts, read from the
// generated CRD, so that a phase added to the API fails this test until it
// is classified.
func crdPhases(t *testing.T) []schedulingv1alpha1.QueueUnitPhase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "scheduling.x-k8s.io_queueunits.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	var phases []schedulingv1alpha1.QueueUnitPhase
	for _, v := range crd.Spec.Versions {
		for _, e := range v.Schema.OpenAPIV3Schema.Properties["status"].Properties["phase"].Enum {
			var p string
			if err := yaml.Unmarshal(e.Raw, &p); err != nil {
				t.Fatal(err)
			}
			phases = append(phases, schedulingv1alpha1.QueueUnitPhase(p))
		}
	}
	if len(phases) == 0 {
		t.Fatal("the CRD lists no phases")
	}
	return phases
}

// TestEveryPhaseIsOneOfWaitingAdmittedFinished: both binaries read a phase
// the same way, and no phase leaves a job neither held nor released.
func TestEveryPhaseIsOneOfWaitingAdmittedFinished(t *testing.T) {
	want := map[schedulingv1alpha1.QueueUnitPhase]string{
		"": "waiting", schedulingv1alpha1.Enqueued: "waiting", schedulingv1alpha1.Reserved: "waiting", schedulingv1alpha1.TimeoutBackoff: "waiting",
		schedulingv1alpha1.Dequeued: "admitted", schedulingv1alpha1.Running: "admitted",
		schedulingv1alpha1.SchedReady: "admitted", schedulingv1alpha1.SchedSucceed: "admitted", schedulingv1alpha1.SchedFailed: "admitted",
		schedulingv1alpha1.Succeed: "finished", schedulingv1alpha1.Failed: "finished",
	}
	got := map[schedulingv1alpha1.QueueUnitPhase]string{}
	for _, p := range crdPhases(t) {
		var kinds []string
		if Waiting(p) {
			kinds = append(kinds, "waiting")
		}
		if Admitted(p) {
			kinds = append(kinds, "admitted")
		}
		if Finished(p) {
			kinds = append(kinds, "finished")
		}
		if len(kinds) != 1 {
			t.Errorf("phase %q is %v, want exactly one of waiting, admitted, finished", p, kinds)
			continue
		}
		got[p] = kinds[0]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
}

func TestHoldsQuota(t *testing.T) {
	admissions := []schedulingv1alpha1.Admission{{Name: "main", Replicas: 1}}
	evicted := []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitEvicted, Status: metav1.ConditionTrue, Reason: schedulingv1alpha1.EvictedByPreemption}}
	cases := map[string]struct {
		status schedulingv1alpha1.QueueUnitStatus
		want   bool
	}{
		"new":                                   {},
		"enqueued":                              {status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Enqueued}},
		"reserved for its checks":               {status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Reserved, Admissions: admissions}, want: true},
		"dequeued":                              {status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Dequeued, Admissions: admissions}, want: true},
		"running":                               {status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Running, Admissions: admissions}, want: true},
		"SchedReady":                            {status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.SchedReady}, want: true},
		"SchedFailed":                           {status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.SchedFailed}, want: true},
		"evicted, its pods not gone":            {status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Enqueued, Admissions: admissions, Conditions: evicted}, want: true},
		"evicted, its pods gone":                {status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Enqueued, Conditions: evicted}},
		"backing off with its admissions kept":  {status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.TimeoutBackoff, Admissions: admissions}, want: true},
		"succeeded, admissions not yet cleared": {status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Succeed, Admissions: admissions}},
		"failed":                                {status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Failed}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &schedulingv1alpha1.QueueUnit{Status: tc.status}
			if got := HoldsQuota(u); got != tc.want {
				t.Errorf("HoldsQuota = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRequest(t *testing.T) {
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	podSets := []schedulingv1alpha1.PodSet{{Name: "main", Count: 3, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu("500m")}}},
	}}}}
	cases := map[string]struct {
		spec schedulingv1alpha1.QueueUnitSpec
		want corev1.ResourceList
	}{
		"resource first":           {spec: schedulingv1alpha1.QueueUnitSpec{Resource: cpu("4"), Request: cpu("2"), PodSets: podSets}, want: cpu("4")},
		"else request":             {spec: schedulingv1alpha1.QueueUnitSpec{Request: cpu("2"), PodSets: podSets}, want: cpu("2")},
		"else the pod sets":        {spec: schedulingv1alpha1.QueueUnitSpec{PodSets: podSets}, want: cpu("1500m")},
		"nothing asks for nothing": {want: corev1.ResourceList{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Request(&schedulingv1alpha1.QueueUnit{Spec: tc.spec})
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCoversMadeJob(t *testing.T) {
	finished := []metav1.Condition{{Type: schedulingv1alpha1.QueueUnitFinished, Status: metav1.ConditionTrue, LastTransitionTime: metav1.Unix(150, 0)}}
	deleted := metav1.Unix(200, 0)
	cases := map[string]struct {
		unit schedulingv1alpha1.QueueUnit
		want bool
	}{
		"admitted": {unit: schedulingv1alpha1.QueueUnit{Status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Dequeued}}, want: true},
		"running":  {unit: schedulingv1alpha1.QueueUnit{Status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Running}}, want: true},
		"waiting":  {unit: schedulingv1alpha1.QueueUnit{Status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Enqueued}}},
		"admitted but being deleted": {unit: schedulingv1alpha1.QueueUnit{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted},
			Status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Running}}},
		"finished, whenever its jobs were made": {unit: schedulingv1alpha1.QueueUnit{Status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Succeed, Conditions: finished}}},
		"failed":                                {unit: schedulingv1alpha1.QueueUnit{Status: schedulingv1alpha1.QueueUnitStatus{Phase: schedulingv1alpha1.Failed, Conditions: finished}}},
	}
	for name, tc := range cases {
		if got := CoversMadeJob(&tc.unit); got != tc.want {
			t.Errorf("%s: covers %v, want %v", name, got, tc.want)
		}
	}
}
