package framework

import (
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// observe is what the reconciler sees of a job, for queueunit.FollowJob.
func observe(job GenericJob) queueunit.JobState {
	msg, ok, finished := job.Finished()
	return queueunit.JobState{
		Suspended: job.IsSuspended(),
		Finished:  finished,
		Succeeded: ok,
		Message:   msg,
		Pods:      job.Pods(),
	}
}
