package extensions

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
)

// managerWrites counts the writes the controllers' manager sends, events
// included, by namespace and as the API server answered them.
var managerWrites = &writeCounter{byNamespace: map[string]map[cluster.Write]int{}}

type writeCounter struct {
	mu          sync.Mutex
	byNamespace map[string]map[cluster.Write]int
}

// verbs are the API verbs of the HTTP methods that write.
var verbs = map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch", http.MethodDelete: "delete"}

// wrap is a rest.Config's WrapTransport: it counts each write rt sends.
func (c *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		verb, ok := verbs[req.Method]
		if !ok {
			return resp, err
		}
		ns, resource, ok := namespacedResource(req.URL.Path)
		if !ok {
			return resp, err
		}
		w := cluster.Write{Verb: verb, Resource: resource}
		if resp != nil {
			w.Code = resp.StatusCode
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.byNamespace[ns] == nil {
			c.byNamespace[ns] = map[cluster.Write]int{}
		}
		c.byNamespace[ns][w]++
		return resp, err
	})
}

// in is a copy of the writes counted in namespace ns.
func (c *writeCounter) in(ns string) map[cluster.Write]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[cluster.Write]int{}
	for w, n := range c.byNamespace[ns] {
		out[w] = n
	}
	return out
}

// namespacedResource reads an API path such as
// /apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/queueunits/u/status:
// namespace ns, resource queueunits/status.
func namespacedResource(path string) (ns, resource string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] != "namespaces" {
			continue
		}
		resource = parts[i+2]
		if i+4 < len(parts) {
			resource += "/" + parts[i+4]
		}
		return parts[i+1], resource, true
	}
	return "", "", false
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestWritesOfAJobsLife: koord-queue-controllers makes 4 writes in a batch
// Job's life, events included: the unit, the release, the unit's status
// once its pod is on a node (Running, PodsReady and the counts in one
// write), and once the Job completes. The test plays koord-queue (it admits
// the unit), kube-scheduler and the kubelet (the pod is bound, runs and
// succeeds) and the Job controller (the Job's status follows its pod). The
// pod webhook holds at koord-queue's gate only pods its admission does not
// cover, so the Job's pod costs no write of its own.
func TestWritesOfAJobsLife(t *testing.T) {
	ctx := context.Background()
	ns := newNamespaceWithPodGate(t)
	j := extensionstest.MakeJob("train", ns).Quota("team-a").Request("cpu", "1").Obj()
	create(t, j)
	unitKey := client.ObjectKey{Namespace: ns, Name: j.Name}
	unitWhere(t, unitKey, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
	admit(t, unitKey)
	jobWhere(t, job.Integration(), client.ObjectKeyFromObject(j), "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })

	// Its pod is made and lands on a node; then the Job controller counts
	// it active, and ready once it runs.
	pod := wrappers.MakePod("train-0", ns).ControlledBy(j, batchv1.SchemeGroupVersion.WithKind("Job")).Node("node-1").Obj()
	create(t, pod)
	unitWhere(t, unitKey, "Running, all its pods on nodes", func(u *schedulingv1alpha1.QueueUnit) bool {
		return u.Status.Phase == schedulingv1alpha1.Running && queueunit.FullyRunning(u) &&
			apimeta.IsStatusConditionTrue(u.Status.Conditions, schedulingv1alpha1.QueueUnitPodsReady) &&
			u.Status.PodState == schedulingv1alpha1.PodState{Running: 1}
	})
	now := metav1.Now()
	updateJobStatus(t, j, func() { j.Status.StartTime, j.Status.Active, j.Status.Ready = &now, 1, ptr.To[int32](0) })
	pod.Status.Phase = corev1.PodRunning
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	updateJobStatus(t, j, func() { j.Status.Ready = ptr.To[int32](1) })

	// The pod succeeds; then the Job does.
	pod.Status.Phase = corev1.PodSucceeded
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	updateJobStatus(t, j, func() {
		j.Status.Active, j.Status.Ready, j.Status.Succeeded, j.Status.CompletionTime = 0, ptr.To[int32](0), 1, &now
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	})
	unitWhere(t, unitKey, "Succeed holding nothing", func(u *schedulingv1alpha1.QueueUnit) bool {
		return u.Status.Phase == schedulingv1alpha1.Succeed && len(u.Status.Admissions) == 0
	})

	// The manager sends its events one at a time, in order: once a later
	// one is written, any this Job's life recorded is counted.
	eventsWritten(t)
	want := map[cluster.Write]int{
		{Verb: "create", Resource: "queueunits", Code: http.StatusCreated}:  1,
		{Verb: "patch", Resource: "jobs", Code: http.StatusOK}:              1,
		{Verb: "patch", Resource: "queueunits/status", Code: http.StatusOK}: 2,
	}
	if diff := cmp.Diff(want, managerWrites.in(ns)); diff != "" {
		t.Errorf("writes of the Job's life (-want +got):\n%s", diff)
	}
}

// eventsWritten makes the manager record an event, a Warning on a Job that
// asks for nothing, in a namespace of its own, and waits until it is
// written.
func eventsWritten(t *testing.T) {
	t.Helper()
	ns := newNamespace(t)
	create(t, extensionstest.MakeJob("barrier", ns).Quota("team-a").Obj())
	eventRecorded(t, ns, "barrier", corev1.EventTypeWarning, framework.ReasonNoRequests, "")
}
