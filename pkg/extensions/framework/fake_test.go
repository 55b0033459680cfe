package framework

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fakeJob is a GenericJob for tests: a Pod stands in for the job's object.
type fakeJob struct {
	pod       *corev1.Pod
	suspended bool
	sets      []PodSet
	finished  bool
}

var _ GenericJob = (*fakeJob)(nil)

func newFakeJob(namespace string, labels map[string]string) *fakeJob {
	return &fakeJob{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: namespace, Labels: labels}}}
}

func (j *fakeJob) Object() client.Object          { return j.pod }
func (j *fakeJob) IsSuspended() bool              { return j.suspended }
func (j *fakeJob) Suspend()                       { j.suspended = true }
func (j *fakeJob) Resume()                        { j.suspended = false }
func (j *fakeJob) PodSets() ([]PodSet, error)     { return j.sets, nil }
func (j *fakeJob) Finished() (string, bool, bool) { return "", false, j.finished }
func (j *fakeJob) Pods() map[string]PodCount      { return nil }
func (j *fakeJob) ownedBy(ref metav1.OwnerReference) {
	j.pod.OwnerReferences = append(j.pod.OwnerReferences, ref)
}

// customJob says by itself whether the queue manages it.
type customJob struct {
	*fakeJob
	managed bool
}

var _ JobWithManagedCheck = customJob{}

func (j customJob) IsManaged() bool { return j.managed }
