package kubeflow

import (
	"testing"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

func TestTrainingJobs(t *testing.T) {
	cases := map[string]struct {
		job          framework.GenericJob
		want         frameworktest.Want
		wantPriority string
	}{
		"a TFJob has a pod set per replica type, by name": {
			job: NewTFJob(extensionstest.MakeTFJob("tf", "ns").
				Replica(kftraining.TFJobReplicaTypeWorker, 2, "cpu", "1").
				Replica(kftraining.TFJobReplicaTypePS, 1, "cpu", "1").
				Replica(kftraining.TFJobReplicaTypeChief, 1, "cpu", "1").Obj()),
			want: frameworktest.Want{Suspended: true,
				PodSets: []framework.PodSet{{Name: "chief", Count: 1}, {Name: "ps", Count: 1}, {Name: "worker", Count: 2}},
				Pods:    map[string]framework.PodCount{"chief": {}, "ps": {}, "worker": {}}},
		},
		"a PyTorchJob suspended by the annotation": {
			job: NewPyTorchJob(extensionstest.MakePyTorchJob("py", "ns").SuspendAnnotation().
				Replica(kftraining.PyTorchJobReplicaTypeMaster, 1).Obj()),
			want: frameworktest.Want{Suspended: true, PodSets: []framework.PodSet{{Name: "master", Count: 1}},
				Pods: map[string]framework.PodCount{"master": {}}},
		},
		"a running MPIJob counts active pods as running and the rest as pending": {
			job: NewMPIJob(extensionstest.MakeMPIJob("mpi", "ns").Suspend(false).
				Replica(kftraining.MPIJobReplicaTypeLauncher, 1).
				Replica(kftraining.MPIJobReplicaTypeWorker, 4).
				Active(kftraining.MPIJobReplicaTypeLauncher, 1).
				Active(kftraining.MPIJobReplicaTypeWorker, 3).Obj()),
			want: frameworktest.Want{
				PodSets: []framework.PodSet{{Name: "launcher", Count: 1}, {Name: "worker", Count: 4}},
				Pods:    map[string]framework.PodCount{"launcher": {Running: 1}, "worker": {Running: 3, Pending: 1}}},
		},
		"the scheduling policy's priority class": {
			job: NewTFJob(extensionstest.MakeTFJob("tf", "ns").PriorityClass("high").
				Replica(kftraining.TFJobReplicaTypeWorker, 1).Obj()),
			want: frameworktest.Want{Suspended: true, PodSets: []framework.PodSet{{Name: "worker", Count: 1}},
				Pods: map[string]framework.PodCount{"worker": {}}},
			wantPriority: "high",
		},
		"a succeeded job": {
			job: NewPyTorchJob(extensionstest.MakePyTorchJob("py", "ns").Suspend(false).
				Replica(kftraining.PyTorchJobReplicaTypeMaster, 1).
				Condition(kftraining.JobRunning, "").Condition(kftraining.JobSucceeded, "done").Obj()),
			want: frameworktest.Want{PodSets: []framework.PodSet{{Name: "master", Count: 1}},
				Finished: true, Succeeded: true, Message: "done", Pods: map[string]framework.PodCount{"master": {}}},
		},
		"a failed job": {
			job: NewTFJob(extensionstest.MakeTFJob("tf", "ns").Suspend(false).
				Replica(kftraining.TFJobReplicaTypeWorker, 1).Condition(kftraining.JobFailed, "oom").Obj()),
			want: frameworktest.Want{PodSets: []framework.PodSet{{Name: "worker", Count: 1}},
				Finished: true, Message: "oom", Pods: map[string]framework.PodCount{"worker": {}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			frameworktest.Check(t, tc.job, tc.want)
			if class, _ := tc.job.(framework.JobWithPriority).PriorityClass(); class != tc.wantPriority {
				t.Errorf("Priority class = %q, want %q", class, tc.wantPriority)
			}
		})
	}
}

func TestSuspendResumeKeepTheAnnotationInStep(t *testing.T) {
	j := extensionstest.MakePyTorchJob("py", "ns").SuspendAnnotation().Replica(kftraining.PyTorchJobReplicaTypeMaster, 1).Obj()
	job := NewPyTorchJob(j)
	job.Resume()
	if job.IsSuspended() || j.Annotations[schedulingv1alpha1.AnnotationSuspend] != "false" || *j.Spec.RunPolicy.Suspend {
		t.Errorf("after Resume: suspended %v, annotation %q", job.IsSuspended(), j.Annotations[schedulingv1alpha1.AnnotationSuspend])
	}
	job.Suspend()
	if !job.IsSuspended() || j.Annotations[schedulingv1alpha1.AnnotationSuspend] != "true" {
		t.Errorf("after Suspend: suspended %v, annotation %q", job.IsSuspended(), j.Annotations[schedulingv1alpha1.AnnotationSuspend])
	}

	plain := extensionstest.MakeTFJob("tf", "ns").Replica(kftraining.TFJobReplicaTypeWorker, 1).Obj()
	NewTFJob(plain).Resume()
	if _, ok := plain.Annotations[schedulingv1alpha1.AnnotationSuspend]; ok {
		t.Errorf("Resume added the annotation to a job that did not use it")
	}
}

// TestPodSetOfPod: a pod of a training job counts for the pod set of its
// replica type, named as the unit names its pod sets.
func TestPodSetOfPod(t *testing.T) {
	cases := map[string]struct {
		label string
		want  string
	}{
		"the training operator's lower-case label": {label: "worker", want: "worker"},
		"a replica type as the spec spells it":     {label: "Master", want: "master"},
		"the MPIJob launcher":                      {label: "launcher", want: "launcher"},
		"no label: no pod set of the job":          {want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := wrappers.MakePod("p", "ns")
			if tc.label != "" {
				pod.Label(kftraining.ReplicaTypeLabel, tc.label)
			}
			for _, integ := range []framework.Integration{TFJobIntegration(), PyTorchJobIntegration(), MPIJobIntegration()} {
				if got := integ.PodSetOf(pod.Obj()); got != tc.want {
					t.Errorf("%s: pod set %q, want %q", integ.Name, got, tc.want)
				}
			}
		})
	}
}
