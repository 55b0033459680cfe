package job

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
