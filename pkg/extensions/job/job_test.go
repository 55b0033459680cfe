package job

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"

	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
)

func TestJob(t *testing.T) {
	none := map[string]framework.PodCount{"main": {}}
	cases := map[string]struct {
		job  *batchv1.Job
		want frameworktest.Want
	}{
		"a suspended job of parallelism pods": {
			job:  extensionstest.MakeJob("j", "ns").Parallelism(4).Obj(),
			want: frameworktest.Want{Suspended: true, PodSets: []framework.PodSet{{Name: "main", Count: 4}}, Pods: none},
		},
		"no parallelism means one pod": {
			job:  extensionstest.MakeJob("j", "ns").Suspend(false).Obj(),
			want: frameworktest.Want{PodSets: []framework.PodSet{{Name: "main", Count: 1}}, Pods: none},
		},
		"fewer remaining completions than parallelism": {
			job: extensionstest.MakeJob("j", "ns").Suspend(false).Parallelism(4).Completions(6).Succeeded(4).Active(2, 1).Obj(),
			want: frameworktest.Want{PodSets: []framework.PodSet{{Name: "main", Count: 2}},
				Pods: map[string]framework.PodCount{"main": {Running: 1, Pending: 1}}},
		},
		"a complete job succeeded": {
			job: extensionstest.MakeJob("j", "ns").Suspend(false).Completions(1).Succeeded(1).Condition(batchv1.JobComplete, "").Obj(),
			want: frameworktest.Want{PodSets: []framework.PodSet{{Name: "main", Count: 0}},
				Finished: true, Succeeded: true, Pods: none},
		},
		"a min-parallelism annotation lets it start with fewer pods": {
			job: extensionstest.MakeJob("j", "ns").Parallelism(4).Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "2").Obj(),
			want: frameworktest.Want{Suspended: true, Pods: none,
				PodSets: []framework.PodSet{{Name: "main", Count: 4, MinCount: ptr.To[int32](2)}}},
		},
		"a minimum above the completions left is all of them": {
			job: extensionstest.MakeJob("j", "ns").Parallelism(4).Completions(6).Succeeded(4).
				Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "3").Obj(),
			want: frameworktest.Want{Suspended: true, Pods: none,
				PodSets: []framework.PodSet{{Name: "main", Count: 2, MinCount: ptr.To[int32](2)}}},
		},
		"released with fewer pods, it asks for its own parallelism": {
			job: extensionstest.MakeJob("j", "ns").Suspend(false).Parallelism(2).
				Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "2").
				Annotation(schedulingv1alpha1.AnnotationOriginalParallelism, "4").Obj(),
			want: frameworktest.Want{Pods: none, PodSets: []framework.PodSet{{Name: "main", Count: 4, MinCount: ptr.To[int32](2)}}},
		},
		"released with fewer pods and completions, it asks for its own": {
			job: extensionstest.MakeJob("j", "ns").Suspend(false).Indexed().Parallelism(2).Completions(2).Succeeded(1).
				Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "1").
				Annotation(schedulingv1alpha1.AnnotationJobCompletionsEqualParallelism, "true").
				Annotation(schedulingv1alpha1.AnnotationOriginalParallelism, "4").Obj(),
			want: frameworktest.Want{Pods: none, PodSets: []framework.PodSet{{Name: "main", Count: 3, MinCount: ptr.To[int32](1)}}},
		},
		"a failed job failed": {
			job: extensionstest.MakeJob("j", "ns").Suspend(false).Condition(batchv1.JobFailed, "backoff limit reached").Obj(),
			want: frameworktest.Want{PodSets: []framework.PodSet{{Name: "main", Count: 1}},
				Finished: true, Message: "backoff limit reached", Pods: none},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := (*Job)(tc.job)
			frameworktest.Check(t, j, tc.want)
			if sets, _ := j.PodSets(); sets[0].Template != &tc.job.Spec.Template {
				t.Errorf("the pod set's template does not point into the Job")
			}
		})
	}
}

func TestSuspendResume(t *testing.T) {
	j := (*Job)(extensionstest.MakeJob("j", "ns").Suspend(false).Obj())
	j.Suspend()
	if !j.IsSuspended() || j.TemplatesLocked() {
		t.Errorf("after Suspend: suspended %v, templates locked %v", j.IsSuspended(), j.TemplatesLocked())
	}
	j.Resume()
	if j.IsSuspended() || !j.TemplatesLocked() {
		t.Errorf("after Resume: suspended %v, templates locked %v", j.IsSuspended(), j.TemplatesLocked())
	}
}

func TestUnlockTemplates(t *testing.T) {
	started := metav1.Now()
	cases := map[string]struct {
		suspend    bool
		wantLocked bool
	}{
		"a suspended Job that ran loses its start time and unlocks": {suspend: true, wantLocked: false},
		"a running Job keeps its start time and stays locked":       {suspend: false, wantLocked: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := (*Job)(extensionstest.MakeJob("j", "ns").Suspend(tc.suspend).Obj())
			j.Status.StartTime = &started
			if !j.TemplatesLocked() {
				t.Fatal("a Job with a start time: templates not locked")
			}
			j.UnlockTemplates()
			if got := j.TemplatesLocked(); got != tc.wantLocked {
				t.Errorf("after UnlockTemplates: locked %v, want %v (start time %v)", got, tc.wantLocked, j.Status.StartTime)
			}
			// The API server refuses to drop a running Job's start time.
			if kept := j.Status.StartTime != nil; kept == tc.suspend {
				t.Errorf("after UnlockTemplates: start time %v on a Job suspended %v; want it kept only while running", j.Status.StartTime, tc.suspend)
			}
		})
	}
}

// TestPartialAdmissionAnnotations: annotations a Job cannot be queued with
// make it invalid, saying why (it is held until fixed).
func TestPartialAdmissionAnnotations(t *testing.T) {
	cases := map[string]struct {
		job     *batchv1.Job
		wantErr string
	}{
		"not a number": {
			job:     extensionstest.MakeJob("j", "ns").Parallelism(4).Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "half").Obj(),
			wantErr: `annotation koord-queue/job-min-parallelism is "half": it must be a whole number of pods, at least 1`,
		},
		"zero": {
			job:     extensionstest.MakeJob("j", "ns").Parallelism(4).Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "0").Obj(),
			wantErr: `annotation koord-queue/job-min-parallelism is "0": it must be a whole number of pods, at least 1`,
		},
		"completions kept equal on a Job that is not Indexed": {
			job: extensionstest.MakeJob("j", "ns").Parallelism(4).Completions(4).
				Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "2").
				Annotation(schedulingv1alpha1.AnnotationJobCompletionsEqualParallelism, "true").Obj(),
			wantErr: `annotation koord-queue/job-completions-equal-parallelism is "true": that needs an Indexed Job whose completions equal its parallelism`,
		},
		"completions kept equal, but they are not": {
			job: extensionstest.MakeJob("j", "ns").Indexed().Parallelism(4).Completions(8).
				Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "2").
				Annotation(schedulingv1alpha1.AnnotationJobCompletionsEqualParallelism, "true").Obj(),
			wantErr: `annotation koord-queue/job-completions-equal-parallelism is "true": that needs an Indexed Job whose completions equal its parallelism`,
		},
		"not a boolean": {
			job: extensionstest.MakeJob("j", "ns").Parallelism(4).
				Annotation(schedulingv1alpha1.AnnotationJobMinParallelism, "2").
				Annotation(schedulingv1alpha1.AnnotationJobCompletionsEqualParallelism, "yes please").Obj(),
			wantErr: `annotation koord-queue/job-completions-equal-parallelism is "yes please": it must be "true" or "false"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := (*Job)(tc.job).PodSets()
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("PodSets error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestRunWithCountsAndRestore: a partial admission lowers parallelism (and
// completions kept equal to it), remembering the Job's own on the Job, and
// suspending puts it back, as Kueue's RunWithPodSetsInfo and
// RestorePodSetsInfo do.
func TestRunWithCountsAndRestore(t *testing.T) {
	type state struct {
		Parallelism, Completions *int32
		Original                 string
	}
	read := func(j *Job) state {
		return state{j.Spec.Parallelism, j.Spec.Completions, j.Annotations[schedulingv1alpha1.AnnotationOriginalParallelism]}
	}
	cases := map[string]struct {
		job         *batchv1.Job
		runs        []int32 // RunWithCounts with these, in turn
		wantRunning state
		wantRestore state
	}{
		"parallelism is lowered and put back": {
			job:         extensionstest.MakeJob("j", "ns").Parallelism(4).Completions(10).Obj(),
			runs:        []int32{2},
			wantRunning: state{ptr.To[int32](2), ptr.To[int32](10), "4"},
			wantRestore: state{ptr.To[int32](4), ptr.To[int32](10), ""},
		},
		"completions kept equal follow parallelism": {
			job: extensionstest.MakeJob("j", "ns").Indexed().Parallelism(4).Completions(4).
				Annotation(schedulingv1alpha1.AnnotationJobCompletionsEqualParallelism, "true").Obj(),
			runs:        []int32{3},
			wantRunning: state{ptr.To[int32](3), ptr.To[int32](3), "4"},
			wantRestore: state{ptr.To[int32](4), ptr.To[int32](4), ""},
		},
		"lowered again, the Job's own parallelism is kept, not the lowered one": {
			job:         extensionstest.MakeJob("j", "ns").Parallelism(4).Obj(),
			runs:        []int32{2, 3},
			wantRunning: state{ptr.To[int32](3), nil, "4"},
			wantRestore: state{ptr.To[int32](4), nil, ""},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := (*Job)(tc.job)
			for _, n := range tc.runs {
				j.RunWithCounts(map[string]int32{"main": n})
			}
			if diff := cmp.Diff(tc.wantRunning, read(j)); diff != "" {
				t.Errorf("after RunWithCounts (-want +got):\n%s", diff)
			}
			if !j.RestoreCounts() {
				t.Error("RestoreCounts reported no change")
			}
			if diff := cmp.Diff(tc.wantRestore, read(j)); diff != "" {
				t.Errorf("after RestoreCounts (-want +got):\n%s", diff)
			}
			if j.RestoreCounts() {
				t.Error("RestoreCounts changed a Job it had restored")
			}
		})
	}
}
