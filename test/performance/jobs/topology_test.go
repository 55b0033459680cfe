package jobs

import (
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-queue/koord-queue/pkg/topology"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/performance/checker"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

func pod(job, class, node string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{batchv1.JobNameLabel: job, checker.LabelClass: class}},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

// TestFragmentationCountsJobsWithinOneRack: a Job is within one rack when
// every pod of it runs on a node of one and the same rack; a pod not on a
// node, or on a node without a rack label, keeps its Job out; one-pod Jobs
// and pods of no Job are not counted.
func TestFragmentationCountsJobsWithinOneRack(t *testing.T) {
	rackOf := map[string]string{"n1": "b0-r0", "n2": "b0-r0", "n3": "b0-r1", "bare": ""}
	pods := []corev1.Pod{
		pod("together", "2-pod", "n1"), pod("together", "2-pod", "n2"),
		pod("apart", "2-pod", "n1"), pod("apart", "2-pod", "n3"),
		pod("waiting", "3-pod", "n1"), pod("waiting", "3-pod", "n2"), pod("waiting", "3-pod", ""),
		pod("unlabelled", "3-pod", "bare"), pod("unlabelled", "3-pod", "bare"), pod("unlabelled", "3-pod", "bare"),
		pod("alone", "1-pod", "n3"),
		pod("", "", "n1"),
	}
	placed := placements(pods, rackOf)
	got := map[string][]string{}
	for _, p := range placed {
		got[p.job] = p.racks
	}
	want := map[string][]string{
		"together": {"b0-r0"}, "apart": {"b0-r0", "b0-r1"}, "waiting": {"", "b0-r0"},
		"unlabelled": {""}, "alone": {"b0-r1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("racks by Job (-want +got):\n%s", diff)
	}
	extra := summarize(placed).extra([]string{"1-pod", "2-pod", "3-pod"})
	wantExtra := map[string]float64{
		"multi-pod Jobs measured":                        4,
		"multi-pod Jobs within one rack":                 1,
		"multi-pod Jobs within one rack, percent":        25,
		"multi-pod Jobs within one rack, percent, 2-pod": 50,
		"multi-pod Jobs within one rack, percent, 3-pod": 0,
		"racks per multi-pod Job, average":               1.5,
	}
	if diff := cmp.Diff(wantExtra, extra); diff != "" {
		t.Errorf("figures (-want +got):\n%s", diff)
	}
}

// TestStreamTakesTheClassesInTurn: the sets' Jobs interleave, one every
// interval over the number of sets, until each set has given its count.
func TestStreamTakesTheClassesInTurn(t *testing.T) {
	a, b := scenario.Class{Name: "a"}, scenario.Class{Name: "b"}
	s := &scenario.Scenario{Sets: []scenario.Set{
		{Class: a, Count: 3, Interval: time.Second},
		{Class: b, Count: 1, Interval: time.Second},
	}}
	var got []string
	for _, j := range stream(s) {
		got = append(got, j.class.Name+"-"+string(rune('0'+j.i))+"@"+j.at.String())
	}
	want := []string{"a-0@0s", "b-0@500ms", "a-1@1s", "a-2@1.5s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}
}

// TestJobIsTheClassesPodsAskingTheLevel: a class's Job runs its pods in
// parallel, each with its share of the cpu, for the class's run time
// given as a Go duration (kwok reads nothing else), and its template asks
// for the level only when one is given.
func TestJobIsTheClassesPodsAskingTheLevel(t *testing.T) {
	class := scenario.Class{Name: "8-pod", CPU: 8, Pods: 8, Runtime: 20 * time.Second}
	for level, wantAsk := range map[string]map[string]string{
		"":        nil,
		RackLabel: {topology.AnnotationPodSetRequiredTopologyKueue: RackLabel},
	} {
		j := job("q", class, 3, level)
		want := map[string]string{cluster.PodRunTimeAnnotation: "20s"}
		maps.Copy(want, wantAsk)
		got := []any{j.Name, *j.Spec.Parallelism, *j.Spec.Completions, j.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String(),
			j.Spec.Template.Labels[checker.LabelClass], j.Spec.Template.Annotations}
		wantAll := []any{"8-pod-00003", int32(8), int32(8), "1", "8-pod", want}
		if diff := cmp.Diff(wantAll, got); diff != "" {
			t.Errorf("level %q: name, parallelism, completions, cpu per pod, class, template annotations (-want +got):\n%s", level, diff)
		}
	}
}
