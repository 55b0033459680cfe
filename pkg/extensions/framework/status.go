package framework

import (
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// observe is what the reconciler sees of a job, for queueunit.FollowJob:
// its status, and scheduled, its pods that hold a node by pod set
// (scheduledPods).
func observe(job GenericJob, scheduled map[string]int32) queueunit.JobState {
	msg, ok, finished := job.Finished()
	pods := job.Pods()
	if pods == nil {
		pods = map[string]PodCount{}
	}
	for name, n := range scheduled {
		c := pods[name]
		c.Scheduled = n
		pods[name] = c
	}
	return queueunit.JobState{
		Suspended: job.IsSuspended(),
		Finished:  finished,
		Succeeded: ok,
		Message:   msg,
		Pods:      pods,
	}
}
