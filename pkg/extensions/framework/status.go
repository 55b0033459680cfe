package framework

import (
	"strings"
	"time"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// observe is what the reconciler sees of a job, for queueunit.FollowJob:
// its status, when it was released, and seen, its pods that hold a node or
// wait for one by pod set (podsOf).
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
		Suspended:  job.IsSuspended(),
		ReleasedAt: releasedAt(job.Object().GetAnnotations()[schedulingv1alpha1.AnnotationJobDequeueTimestamp]),
		Finished:   finished,
		Succeeded:  ok,
		Message:    msg,
		Pods:       pods,
	}
}

// dequeueTimestampLayout is the layout of the job annotation
// koord-queue/job-dequeue-timestamp: that of Go's time.Time.String, which
// Koord-Queue writes.
const dequeueTimestampLayout = "2006-01-02 15:04:05.999999999 -0700 MST"

// dequeueTimestamp is the value of a job's koord-queue/job-dequeue-timestamp
// when it is released at t.
func dequeueTimestamp(t time.Time) string {
	return t.UTC().Format(dequeueTimestampLayout)
}

// releasedAt reads a job's koord-queue/job-dequeue-timestamp, written by
// dequeueTimestamp or by Koord-Queue (with Go's monotonic clock reading
// after it); zero when it does not parse.
func releasedAt(value string) time.Time {
	value, _, _ = strings.Cut(value, " m=")
	t, err := time.Parse(dequeueTimestampLayout, value)
	if err != nil {
		return time.Time{}
	}
	return t
}
