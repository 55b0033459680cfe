package framework

import (
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// observe is what the reconciler sees of a job, for queueunit.FollowJob:
// its status, and seen, its pods that hold a node or wait for one by pod
// set (podsOf).
func observe(job GenericJob, seen map[string]PodCount) queueunit.JobState {
	msg, ok, finished := job.Finished()
	pods := job.Pods()
	if pods == nil {
		pods = map[string]PodCount{}
	}
	for name, n := range seen {
		c := pods[name]
		c.Scheduled, c.Waiting = n.Scheduled, n.Waiting
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
