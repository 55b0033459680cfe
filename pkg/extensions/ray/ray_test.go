package ray

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

func cluster() *rayv1.RayClusterSpec {
	return extensionstest.MakeRayClusterSpec("cpu", "1").WorkerGroup("small", 2, "cpu", "1").WorkerGroup("large", 3, "cpu", "4").Obj()
}

func TestRayJobsAndClusters(t *testing.T) {
	clusterSets := []framework.PodSet{{Name: "head", Count: 1}, {Name: "small", Count: 2}, {Name: "large", Count: 3}}
	// KubeRay makes the default submitter from its own template.
	withSubmitter := append(slices.Clone(clusterSets), framework.PodSet{Name: "submitter", Count: 1, MadeUp: true})
	cases := map[string]struct {
		job  framework.GenericJob
		want frameworktest.Want
	}{
		"a suspended RayCluster: its head and its worker groups": {
			job: (*RayCluster)(extensionstest.MakeRayCluster("rc", "ns", cluster()).Obj()),
			want: frameworktest.Want{Suspended: true, PodSets: clusterSets,
				Pods: map[string]framework.PodCount{"head": {}, "small": {}, "large": {}}},
		},
		"a running RayCluster shares its ready workers out among its groups in order": {
			job: (*RayCluster)(extensionstest.MakeRayCluster("rc", "ns", cluster()).Suspend(false).Ready(3).Obj()),
			want: frameworktest.Want{PodSets: clusterSets,
				Pods: map[string]framework.PodCount{"head": {Running: 1}, "small": {Running: 2}, "large": {Running: 1, Pending: 2}}},
		},
		"a RayJob in K8sJobMode adds its submitter": {
			job: (*RayJob)(extensionstest.MakeRayJob("rj", "ns", cluster()).Obj()),
			want: frameworktest.Want{Suspended: true, PodSets: withSubmitter,
				Pods: map[string]framework.PodCount{"head": {}, "small": {}, "large": {}, "submitter": {}}},
		},
		"a RayJob in HTTPMode has no submitter": {
			job: (*RayJob)(extensionstest.MakeRayJob("rj", "ns", cluster()).SubmissionMode(rayv1.HTTPMode).Obj()),
			want: frameworktest.Want{Suspended: true, PodSets: clusterSets,
				Pods: map[string]framework.PodCount{"head": {}, "small": {}, "large": {}}},
		},
		"a running RayJob": {
			job: (*RayJob)(extensionstest.MakeRayJob("rj", "ns", cluster()).Suspend(false).ReadyCluster(5).
				Deployment(rayv1.JobDeploymentStatusRunning, rayv1.JobStatusRunning).Obj()),
			want: frameworktest.Want{PodSets: withSubmitter,
				Pods: map[string]framework.PodCount{"head": {Running: 1}, "small": {Running: 2}, "large": {Running: 3}, "submitter": {Running: 1}}},
		},
		"a RayJob whose Ray job succeeded": {
			job: (*RayJob)(extensionstest.MakeRayJob("rj", "ns", cluster()).Suspend(false).SubmissionMode(rayv1.HTTPMode).
				Deployment(rayv1.JobDeploymentStatusComplete, rayv1.JobStatusSucceeded).Obj()),
			want: frameworktest.Want{PodSets: clusterSets, Finished: true, Succeeded: true,
				Pods: map[string]framework.PodCount{"head": {Pending: 1}, "small": {Pending: 2}, "large": {Pending: 3}}},
		},
		"a RayJob whose Ray job failed": {
			job: (*RayJob)(extensionstest.MakeRayJob("rj", "ns", cluster()).Suspend(false).SubmissionMode(rayv1.HTTPMode).
				Deployment(rayv1.JobDeploymentStatusComplete, rayv1.JobStatusFailed).Obj()),
			want: frameworktest.Want{PodSets: clusterSets, Finished: true,
				Pods: map[string]framework.PodCount{"head": {Pending: 1}, "small": {Pending: 2}, "large": {Pending: 3}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { frameworktest.Check(t, tc.job, tc.want) })
	}
}

// TestWorkerGroupSize: a worker group asks for as many pods as KubeRay runs
// for it or, in an autoscaling cluster, for the most the autoscaler may
// scale it to, so that the autoscaler changing replicas within
// [minReplicas, maxReplicas] changes nothing the queue sees; its pending
// pods are those KubeRay is to run now.
func TestWorkerGroupSize(t *testing.T) {
	group := func(lo, n, hi int32) *extensionstest.RayClusterSpecWrapper {
		return extensionstest.MakeRayClusterSpec("cpu", "1").WorkerGroup("workers", n, "cpu", "1").Scale(lo, n, hi)
	}
	cases := map[string]struct {
		spec      *extensionstest.RayClusterSpecWrapper
		wantCount int32
		// wantPods of the group, released with one worker ready.
		wantPods framework.PodCount
		wantErr  string
	}{
		"replicas × numOfHosts": {
			spec:      group(0, 2, 4).Hosts(2),
			wantCount: 4, wantPods: framework.PodCount{Running: 1, Pending: 3},
		},
		"replicas under minReplicas: KubeRay runs minReplicas": {
			spec:      group(3, 1, 4),
			wantCount: 3, wantPods: framework.PodCount{Running: 1, Pending: 2},
		},
		"replicas over maxReplicas: KubeRay runs maxReplicas": {
			spec:      group(0, 5, 4),
			wantCount: 4, wantPods: framework.PodCount{Running: 1, Pending: 3},
		},
		"minReplicas over maxReplicas: KubeRay runs maxReplicas": {
			spec:      group(5, 1, 4),
			wantCount: 4, wantPods: framework.PodCount{Running: 1, Pending: 3},
		},
		"autoscaling: maxReplicas × numOfHosts": {
			spec:      group(1, 2, 4).Hosts(2).Autoscaling(),
			wantCount: 8, wantPods: framework.PodCount{Running: 1, Pending: 3},
		},
		"autoscaling, scaled up within its range: the same": {
			spec:      group(1, 3, 4).Hosts(2).Autoscaling(),
			wantCount: 8, wantPods: framework.PodCount{Running: 1, Pending: 5},
		},
		"autoscaling, scaled down to none: the same": {
			spec:      group(0, 0, 4).Hosts(2).Autoscaling(),
			wantCount: 8, wantPods: framework.PodCount{},
		},
		"autoscaling, maxReplicas raised: the new maximum": {
			spec:      group(1, 3, 6).Hosts(2).Autoscaling(),
			wantCount: 12, wantPods: framework.PodCount{Running: 1, Pending: 5},
		},
		"autoscaling without maxReplicas (the API server's default): cannot be queued": {
			spec:    group(1, 2, math.MaxInt32).Autoscaling(),
			wantErr: "worker group workers of an autoscaling cluster (enableInTreeAutoscaling) sets no maxReplicas",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc := (*RayCluster)(extensionstest.MakeRayCluster("rc", "ns", tc.spec.Obj()).Suspend(false).Ready(1).Obj())
			rj := (*RayJob)(extensionstest.MakeRayJob("rj", "ns", tc.spec.Obj()).SubmissionMode(rayv1.HTTPMode).Obj())
			for _, job := range []framework.GenericJob{rc, rj} {
				sets, err := job.PodSets()
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Errorf("%T: PodSets error %v, want one saying %q", job, err, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%T: PodSets: %v", job, err)
				}
				want := []framework.PodSet{{Name: "head", Count: 1}, {Name: "workers", Count: tc.wantCount}}
				if diff := cmp.Diff(want, sets, cmpopts.IgnoreFields(framework.PodSet{}, "Template", "Added")); diff != "" {
					t.Errorf("%T: pod sets (-want +got):\n%s", job, diff)
				}
			}
			if tc.wantErr != "" {
				return
			}
			if diff := cmp.Diff(tc.wantPods, rc.Pods()["workers"]); diff != "" {
				t.Errorf("RayCluster: the group's pods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultSubmitterRequest(t *testing.T) {
	j := (*RayJob)(extensionstest.MakeRayJob("rj", "ns", cluster()).Obj())
	sets, _ := j.PodSets()
	submitter := sets[len(sets)-1]
	got := resources.PodRequests(&submitter.Template.Spec)
	if diff := cmp.Diff(qt.Res("cpu", "500m", "memory", "200Mi"), got); diff != "" {
		t.Errorf("submitter request (-want +got):\n%s", diff)
	}
}

// TestPodSetOfPod: a pod of a Ray cluster counts for the head or for its
// worker group, by the labels KubeRay sets; a RayJob's submitter pod, which
// its submitter Job controls, for the submitter.
func TestPodSetOfPod(t *testing.T) {
	submitterJob := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "rj", Namespace: "ns", UID: "uid-submitter"}}
	cases := map[string]struct {
		pod           *corev1.Pod
		wantCluster   string
		wantRayJob    string
		wantCountable bool
	}{
		"the head, whose group label is headgroup": {
			pod:         wrappers.MakePod("h", "ns").Label(labelNodeType, "head").Label(labelGroup, "headgroup").Obj(),
			wantCluster: "head", wantRayJob: "head",
		},
		"a worker counts for its group": {
			pod:         wrappers.MakePod("w", "ns").Label(labelNodeType, "worker").Label(labelGroup, "small").Obj(),
			wantCluster: "small", wantRayJob: "small",
		},
		"the submitter pod of a RayJob": {
			pod:         wrappers.MakePod("s", "ns").ControlledBy(submitterJob, batchv1.SchemeGroupVersion.WithKind("Job")).Obj(),
			wantCluster: "", wantRayJob: "submitter",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := RayClusterIntegration().PodSetOf(tc.pod); got != tc.wantCluster {
				t.Errorf("RayCluster: pod set %q, want %q", got, tc.wantCluster)
			}
			if got := RayJobIntegration().PodSetOf(tc.pod); got != tc.wantRayJob {
				t.Errorf("RayJob: pod set %q, want %q", got, tc.wantRayJob)
			}
		})
	}
}

// TestRayJobPodOwners: a RayJob's pods are those of the cluster KubeRay made
// for it and of its submitter Job, named after it.
func TestRayJobPodOwners(t *testing.T) {
	clusterKind := schema.GroupKind{Group: "ray.io", Kind: "RayCluster"}
	submitter := schema.GroupKind{Group: "batch", Kind: "Job"}
	withCluster := func(w *extensionstest.RayJobWrapper) *extensionstest.RayJobWrapper {
		w.Status.RayClusterName = "rj-x7k2p"
		return w
	}
	cases := map[string]struct {
		job  *rayv1.RayJob
		want []framework.PodOwner
	}{
		"before KubeRay made its cluster: only its submitter": {
			job:  extensionstest.MakeRayJob("rj", "ns", cluster()).Obj(),
			want: []framework.PodOwner{{Kind: submitter, Name: "rj"}},
		},
		"its cluster and its submitter": {
			job:  withCluster(extensionstest.MakeRayJob("rj", "ns", cluster())).Obj(),
			want: []framework.PodOwner{{Kind: clusterKind, Name: "rj-x7k2p"}, {Kind: submitter, Name: "rj"}},
		},
		"in HTTPMode, no submitter": {
			job:  withCluster(extensionstest.MakeRayJob("rj", "ns", cluster()).SubmissionMode(rayv1.HTTPMode)).Obj(),
			want: []framework.PodOwner{{Kind: clusterKind, Name: "rj-x7k2p"}},
		},
		"on a cluster it selected, not made: only its submitter": {
			job: func() *rayv1.RayJob {
				j := withCluster(extensionstest.MakeRayJob("rj", "ns", cluster())).Obj()
				j.Spec.ClusterSelector = map[string]string{"ray.io/cluster": "shared"}
				return j
			}(),
			want: []framework.PodOwner{{Kind: submitter, Name: "rj"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, RayJobIntegration().PodOwners(tc.job)); diff != "" {
				t.Errorf("pod owners (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWhatKubeRayAdds: the containers KubeRay adds to a cluster's pods are
// what the unit asks for beyond the templates: the wait-gcs-ready init
// container of every worker, and the autoscaler of an autoscaling head,
// with its default requests or those of autoscalerOptions.resources.
func TestWhatKubeRayAdds(t *testing.T) {
	initContainer := []corev1.Container{{Name: "wait-gcs-ready", Resources: fixedResources("200m", "256Mi")}}
	ownResources := corev1.ResourceRequirements{Requests: qt.Res("cpu", "2", "memory", "1Gi")}
	cases := map[string]struct {
		spec *rayv1.RayClusterSpec
		want []framework.AddedContainers
	}{
		"not autoscaling: the workers' init container": {
			spec: extensionstest.MakeRayClusterSpec("cpu", "1").WorkerGroup("workers", 2, "cpu", "1").Obj(),
			want: []framework.AddedContainers{{}, {InitContainers: initContainer}},
		},
		"autoscaling: the head's autoscaler too, with KubeRay's default requests": {
			spec: extensionstest.MakeRayClusterSpec("cpu", "1").WorkerGroup("workers", 2, "cpu", "1").Autoscaling().Obj(),
			want: []framework.AddedContainers{
				{Containers: []corev1.Container{{Name: "autoscaler", Resources: fixedResources("500m", "512Mi")}}},
				{InitContainers: initContainer},
			},
		},
		"autoscaling with autoscalerOptions.resources: those": {
			spec: func() *rayv1.RayClusterSpec {
				s := extensionstest.MakeRayClusterSpec("cpu", "1").WorkerGroup("workers", 2, "cpu", "1").Autoscaling().Obj()
				s.AutoscalerOptions = &rayv1.AutoscalerOptions{Resources: &ownResources}
				return s
			}(),
			want: []framework.AddedContainers{
				{Containers: []corev1.Container{{Name: "autoscaler", Resources: ownResources}}},
				{InitContainers: initContainer},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sets, err := clusterPodSets(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []framework.AddedContainers
			for _, s := range sets {
				got = append(got, s.Added)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("added containers by pod set (-want +got):\n%s", diff)
			}
			for _, s := range sets {
				if len(s.Template.Spec.InitContainers) != 0 || len(s.Template.Spec.Containers) != 1 {
					t.Errorf("pod set %s: the cluster's own template changed: %+v", s.Name, s.Template.Spec)
				}
			}
		})
	}
}

// TestSubmitterAffinity: a RayJob whose submitter KubeRay makes from its
// default gets that default, with the placement, as its submitter template,
// and loses it again when the placement is taken away; its pod set stays
// the made-up default throughout. A template of the user's own is edited
// in place and kept.
func TestSubmitterAffinity(t *testing.T) {
	placed := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"a100"}}}}}}}}
	place := func(string, *corev1.Affinity) *corev1.Affinity { return placed.DeepCopy() }
	unplace := func(string, *corev1.Affinity) *corev1.Affinity { return nil }
	same := func(_ string, a *corev1.Affinity) *corev1.Affinity { return a }
	image := func(j *RayJob) string { return j.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image }
	madeUp := func(t *testing.T, j *RayJob) {
		t.Helper()
		sets, err := j.PodSets()
		if err != nil {
			t.Fatal(err)
		}
		s := sets[len(sets)-1]
		if !s.MadeUp || !cmp.Equal(s.Template, defaultSubmitterTemplate()) {
			t.Errorf("submitter pod set: made up %v, template %+v; want KubeRay's default, made up", s.MadeUp, s.Template)
		}
	}

	t.Run("KubeRay's default", func(t *testing.T) {
		j := (*RayJob)(extensionstest.MakeRayJob("rj", "ns", cluster()).Obj())
		j.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.9"
		if j.EditAffinities(SubmitterPodSet, same); j.Spec.SubmitterPodTemplate != nil {
			t.Fatalf("an edit changing nothing gave the RayJob a submitter template")
		}
		var paths []string
		if got := j.EditAffinities(SubmitterPodSet, func(path string, a *corev1.Affinity) *corev1.Affinity {
			paths = append(paths, path)
			return place(path, a)
		}); got != nil {
			t.Errorf("overridden: %v", got)
		}
		if diff := cmp.Diff([]string{"spec.submitterPodTemplate.spec.affinity"}, paths); diff != "" {
			t.Errorf("paths (-want +got):\n%s", diff)
		}
		want := defaultSubmitterTemplate()
		want.Spec.Containers[0].Image = "rayproject/ray:2.9"
		want.Spec.Affinity = placed
		if diff := cmp.Diff(want, j.Spec.SubmitterPodTemplate); diff != "" {
			t.Errorf("submitter template (-want +got):\n%s", diff)
		}
		madeUp(t, j)
		j.EditAffinities(SubmitterPodSet, unplace)
		if j.Spec.SubmitterPodTemplate != nil {
			t.Errorf("submitter template %+v left after its affinity was taken away", j.Spec.SubmitterPodTemplate)
		}
		madeUp(t, j)
		if image(j) != "rayproject/ray:2.9" {
			t.Errorf("the head's image changed")
		}
	})

	t.Run("a template of the user's own", func(t *testing.T) {
		j := (*RayJob)(extensionstest.MakeRayJob("rj", "ns", cluster()).Obj())
		own := wrappers.PodTemplate("cpu", "1")
		j.Spec.SubmitterPodTemplate = &own
		j.EditAffinities(SubmitterPodSet, place)
		if diff := cmp.Diff(placed, j.Spec.SubmitterPodTemplate.Spec.Affinity); diff != "" {
			t.Errorf("submitter affinity (-want +got):\n%s", diff)
		}
		j.EditAffinities(SubmitterPodSet, unplace)
		if diff := cmp.Diff(&own, j.Spec.SubmitterPodTemplate); diff != "" {
			t.Errorf("submitter template (-want +got):\n%s", diff)
		}
	})

	t.Run("a RayJob on an existing cluster is reported", func(t *testing.T) {
		j := (*RayJob)(extensionstest.MakeRayJob("rj", "ns", nil).Obj())
		j.Spec.ClusterSelector = map[string]string{"ray.io/cluster": "shared"}
		got := j.EditAffinities(SubmitterPodSet, place)
		if want := []string{"spec.submitterPodTemplate (KubeRay makes it from the cluster spec.clusterSelector chooses)"}; !cmp.Equal(want, got) {
			t.Errorf("overridden = %q, want %q", got, want)
		}
		if j.Spec.SubmitterPodTemplate != nil {
			t.Errorf("a submitter template was made up for it")
		}
	})

	t.Run("no submitter, nothing to edit", func(t *testing.T) {
		j := (*RayJob)(extensionstest.MakeRayJob("rj", "ns", cluster()).SubmissionMode(rayv1.HTTPMode).Obj())
		j.EditAffinities(SubmitterPodSet, func(path string, a *corev1.Affinity) *corev1.Affinity {
			t.Errorf("edited %s", path)
			return a
		})
		j.EditAffinities("head", func(path string, a *corev1.Affinity) *corev1.Affinity {
			t.Errorf("edited %s for the head", path)
			return a
		})
	})
}
