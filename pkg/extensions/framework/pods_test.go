package framework

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

var (
	jobGVK     = batchv1.SchemeGroupVersion.WithKind("Job")
	clusterGVK = schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"}
)

// jobNamed is a batch Job standing in for a job of any kind.
func jobNamed(name string, uid types.UID) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid}}
}

// byLabel names a pod's pod set by its label "set".
func byLabel(pod *corev1.Pod) string { return pod.Labels["set"] }

// TestCountPods: a pod counts for its pod set as scheduled while it holds
// a node (assigned one, neither failed nor being deleted; one that
// succeeded still counts), as waiting while no node took it yet (neither
// finished nor being deleted).
func TestCountPods(t *testing.T) {
	job := jobNamed("train", "uid-1")
	pod := func(name, set string) *wrappers.PodWrapper {
		return wrappers.MakePod(name, "ns").ControlledBy(job, jobGVK).Label("set", set)
	}
	cases := map[string]struct {
		integ Integration
		pods  []*corev1.Pod
		want  map[string]PodCount
	}{
		"pods on nodes are scheduled, by pod set": {
			integ: Integration{PodSetOf: byLabel},
			pods: []*corev1.Pod{
				pod("w-0", "worker").Node("n1").Phase(corev1.PodRunning).Obj(),
				pod("w-1", "worker").Node("n2").Obj(),
				pod("m-0", "master").Node("n1").Phase(corev1.PodRunning).Obj(),
			},
			want: map[string]PodCount{"worker": {Scheduled: 2}, "master": {Scheduled: 1}},
		},
		"a pod no node took waits": {
			integ: Integration{PodSetOf: byLabel},
			pods:  []*corev1.Pod{pod("w-0", "worker").Obj(), pod("w-1", "worker").Node("n1").Obj()},
			want:  map[string]PodCount{"worker": {Scheduled: 1, Waiting: 1}},
		},
		"a pod that failed or is being deleted counts for nothing": {
			integ: Integration{PodSetOf: byLabel},
			pods: []*corev1.Pod{
				pod("w-0", "worker").Node("n1").Phase(corev1.PodFailed).Obj(),
				pod("w-1", "worker").Node("n1").Phase(corev1.PodRunning).Deleting().Obj(),
				pod("w-2", "worker").Deleting().Obj(),
				pod("w-3", "worker").Phase(corev1.PodFailed).Obj(),
			},
			want: map[string]PodCount{},
		},
		"a pod that succeeded on a node still counts": {
			integ: Integration{PodSetOf: byLabel},
			pods:  []*corev1.Pod{pod("w-0", "worker").Node("n1").Phase(corev1.PodSucceeded).Obj()},
			want:  map[string]PodCount{"worker": {Scheduled: 1}},
		},
		"without PodSetOf every pod is of pod set main": {
			pods: []*corev1.Pod{pod("a", "x").Node("n1").Obj(), pod("b", "y").Node("n1").Obj(), pod("c", "z").Obj()},
			want: map[string]PodCount{"main": {Scheduled: 2, Waiting: 1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var pods []corev1.Pod
			for _, p := range tc.pods {
				pods = append(pods, *p)
			}
			if diff := cmp.Diff(tc.want, countPods(tc.integ, pods)); diff != "" {
				t.Errorf("pods by pod set (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStripPod: the cache keeps a pod stripped, and counting reads the same
// of it as of the whole pod.
func TestStripPod(t *testing.T) {
	whole := wrappers.MakePod("w-0", "ns").ControlledBy(jobNamed("train", "uid-1"), jobGVK).Label("set", "worker").
		Node("n1").Phase(corev1.PodRunning).Deleting().Obj()
	whole.Annotations = map[string]string{"big": "annotation"}
	whole.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	whole.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	got, err := StripPod(whole)
	if err != nil {
		t.Fatal(err)
	}
	stripped := got.(*corev1.Pod)
	if diff := cmp.Diff(whole, stripped, cmpopts.IgnoreFields(metav1.ObjectMeta{}, "Annotations", "ManagedFields"),
		cmpopts.IgnoreFields(corev1.Pod{}, "Spec.Containers", "Spec.RestartPolicy", "Status.Conditions")); diff != "" {
		t.Errorf("stripped pod lost what counting reads (-whole +stripped):\n%s", diff)
	}
	if stripped.Annotations != nil || stripped.ManagedFields != nil || len(stripped.Spec.Containers) != 0 || stripped.Status.Conditions != nil {
		t.Errorf("stripped pod keeps more than counting reads: %+v", stripped)
	}
	if diff := cmp.Diff(PodOwnerIndex(whole), PodOwnerIndex(stripped)); diff != "" {
		t.Errorf("owner index (-whole +stripped):\n%s", diff)
	}
	if other, _ := StripPod(&corev1.Node{}); other == nil {
		t.Error("StripPod dropped an object that is not a pod")
	}
}

// TestPodsFromTheCache: the reconciler finds a job's pods through
// the pod index: its own (by UID, not those of an earlier job of the same
// name) and, for a kind with PodOwners, those of what it made.
func TestPodsFromTheCache(t *testing.T) {
	job := jobNamed("train", "uid-now")
	earlier := jobNamed("train", "uid-earlier")
	cluster := &metav1.ObjectMeta{Name: "train-cluster", Namespace: "ns", UID: "uid-cluster"}
	clusterObj := &corev1.Pod{ObjectMeta: *cluster} // any object stands in as an owner
	pods := []client.Object{
		wrappers.MakePod("own-0", "ns").ControlledBy(job, jobGVK).Node("n1").Obj(),
		wrappers.MakePod("own-1", "ns").ControlledBy(job, jobGVK).Obj(),
		wrappers.MakePod("earlier-0", "ns").ControlledBy(earlier, jobGVK).Node("n1").Obj(),
		wrappers.MakePod("other-0", "ns").ControlledBy(jobNamed("other", "uid-other"), jobGVK).Node("n1").Obj(),
		wrappers.MakePod("cluster-0", "ns").ControlledBy(clusterObj, clusterGVK).Label("set", "workers").Node("n1").Obj(),
		wrappers.MakePod("elsewhere-0", "other-ns").ControlledBy(jobNamed("train", "uid-now"), jobGVK).Node("n1").Obj(),
	}
	scheme := runtime.NewScheme()
	if err := batchv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	viaCluster := Integration{GVK: jobGVK, NewJob: func() GenericJob { return nil }, PodSetOf: byLabel,
		PodOwners: func(o client.Object) []PodOwner {
			return []PodOwner{{Kind: clusterGVK.GroupKind(), Name: o.GetName() + "-cluster"}}
		}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(pods, job)...).
		WithIndex(&corev1.Pod{}, IndexPodOwner, PodOwnerIndex).
		WithIndex(&batchv1.Job{}, IndexJobPodOwners, viaCluster.JobPodOwnersIndex).Build()

	cases := map[string]struct {
		integ    Integration
		wantPods map[string]PodCount
		// wantJobs are the jobs each pod's events wake.
		wantJobs map[string][]string
	}{
		"a job that controls its pods": {
			integ:    Integration{GVK: jobGVK},
			wantPods: map[string]PodCount{"main": {Scheduled: 1, Waiting: 1}},
			wantJobs: map[string][]string{"own-0": {"ns/train"}, "earlier-0": {"ns/train"}, "other-0": {"ns/other"},
				"cluster-0": nil, "elsewhere-0": {"other-ns/train"}},
		},
		"a job whose pods its cluster controls": {
			integ:    viaCluster,
			wantPods: map[string]PodCount{"workers": {Scheduled: 1}},
			wantJobs: map[string][]string{"own-0": nil, "cluster-0": {"ns/train"}, "elsewhere-0": nil},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &JobReconciler{client: c, integ: tc.integ}
			got, err := r.podsOf(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantPods, got); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
			gotJobs := map[string][]string{}
			for _, p := range pods {
				if _, ok := tc.wantJobs[p.GetName()]; !ok {
					continue
				}
				var names []string
				for _, req := range r.jobsOfPod(context.Background(), p) {
					names = append(names, req.String())
				}
				gotJobs[p.GetName()] = names
			}
			if diff := cmp.Diff(tc.wantJobs, gotJobs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("jobs woken by each pod (-want +got):\n%s", diff)
			}
		})
	}
}
