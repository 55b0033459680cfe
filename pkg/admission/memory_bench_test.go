package admission

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/testing/heap"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// memoryUnits is how many units BenchmarkUnitMemory keeps: Kueue's
// large-scale shape.
const memoryUnits = 50_000

// memoryQueues is how many quotas, each with its Queue, the units are
// spread over.
const memoryQueues = 100

// BenchmarkUnitMemory measures what koord-queue's heap keeps per QueueUnit
// at 50,000 units: the informer's copy of the unit (decoded from JSON as
// the informer decodes it, in a map by key as its store keeps it) and the
// Cache's and the core's state of it, fed through UpsertUnit as the
// informer feeds it, after a scheduling cycle and the loop's look at the
// changed units, which leaves the waiting ones owed a write of why they
// wait (owed.go). Units are waiting (none fits: their quotas' max is used
// up), admitted (running, as the API server shows them) or finished
// (Succeed, out of the core; the informer keeps them until their job is
// deleted). Two shapes:
//
//   - harness: the perf harness's unit (test/performance/generator): no pod
//     set, one cpu, a quota label and two of the harness's labels;
//   - job: a job extension's unit for a job of two pod sets (a launcher and
//     four workers asking for cpu, memory and a GPU), owned by the job,
//     with the job's labels and annotations, its templates dropped as the
//     binary's cache drops them (it states its request).
//
// It reports live heap bytes per unit after a collection: object-bytes
// (the informer's copy and its store's entry alone) and bytes (everything):
//
//	go test ./pkg/admission -run XXX -bench UnitMemory -benchtime 1x -count 5
func BenchmarkUnitMemory(b *testing.B) {
	for _, shape := range []struct {
		name string
		unit func(i int) *schedulingv1alpha1.QueueUnit
	}{{"harness", harnessUnit}, {"job", jobUnit}} {
		for _, state := range []struct {
			name string
			set  func(u *schedulingv1alpha1.QueueUnit, at metav1.Time)
		}{{"waiting", waitingStatus}, {"admitted", admittedStatus}, {"finished", finishedStatus}} {
			b.Run(shape.name+"/"+state.name, func(b *testing.B) {
				var objects, total float64
				for range b.N {
					o, t := unitMemory(b, shape.unit, state.set)
					objects += o
					total += t
				}
				b.ReportMetric(objects/float64(b.N), "object-bytes/unit")
				b.ReportMetric(total/float64(b.N), "bytes/unit")
			})
		}
	}
}

// unitMemory builds the world with memoryUnits units of a shape and a
// state and returns the live bytes per unit of the informer's copies
// alone, and of everything.
func unitMemory(b *testing.B, unit func(int) *schedulingv1alpha1.QueueUnit, set func(*schedulingv1alpha1.QueueUnit, metav1.Time)) (objects, total float64) {
	b.Helper()
	lastMemoryWorld = nil
	t0 := time.Unix(1_000_000, 0)
	encoded := make([][]byte, memoryUnits)
	for i := range encoded {
		u := unit(i)
		u.UID = types.UID(fmt.Sprintf("5f0c8b3e-2d1a-4c6e-9b7f-%012d", i))
		u.ResourceVersion = fmt.Sprint(1_000_000 + i)
		u.Generation = 1
		u.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(i) * time.Millisecond))
		set(u, metav1.NewTime(t0.Add(time.Hour)))
		data, err := json.Marshal(u)
		if err != nil {
			b.Fatal(err)
		}
		encoded[i] = data
	}
	start := heap.Live()
	store := make(map[string]*schedulingv1alpha1.QueueUnit)
	compactor := NewUnitCompactor()
	for _, data := range encoded {
		u := &schedulingv1alpha1.QueueUnit{}
		if err := json.Unmarshal(data, u); err != nil {
			b.Fatal(err)
		}
		// As the binary's cache does (app.StripUnit, whose cut of the pod
		// templates these units do not need).
		CutFinished(u)
		compactor.Compact(u)
		store[u.Namespace+"/"+u.Name] = u
	}
	decoded := heap.Live()
	c := NewCache()
	c.UpsertNode(wrappers.Node("n1", "1000000", "1000Ti"))
	for q := range memoryQueues {
		name := fmt.Sprintf("team-%03d", q)
		// Room for the admitted units and no more: the waiting ones wait.
		c.UpsertElasticQuota(wrappers.MakeElasticQuota(name, "quotas").Max("cpu", "100000").Max("memory", "1000Ti").Max("nvidia.com/gpu", "100000").Obj())
		c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: name}})
	}
	c.UpsertElasticQuota(wrappers.MakeElasticQuota("full", "quotas").Max("cpu", "0").Obj())
	c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: "full"}})
	c.cycle(t0, -1)
	c.takeDirty()
	world := heap.Live()
	for _, u := range store {
		c.UpsertUnit(u)
	}
	res := c.cycle(t0.Add(2*time.Hour), -1)
	if len(res.Admissions) > 0 {
		b.Fatalf("%d units admitted, want none", len(res.Admissions))
	}
	// As the loop does: the units that may wait are owed a write of why.
	waiting := c.takeDirty().explain
	for _, w := range res.Waits {
		waiting = append(waiting, w.Unit)
	}
	c.owedWrites.owe(owesMessage, t0, waiting...)
	end := heap.Live()
	runtime.KeepAlive(encoded)
	lastMemoryWorld = []any{store, c}
	return float64(decoded-start) / memoryUnits, float64(decoded-start+end-world) / memoryUnits
}

// lastMemoryWorld keeps the last world built alive, for a heap profile
// (-memprofile) written after the benchmark.
var lastMemoryWorld []any

// harnessUnit is unit i of the perf harness's shape, in one of
// memoryQueues quotas.
func harnessUnit(i int) *schedulingv1alpha1.QueueUnit {
	team := fmt.Sprintf("team-%03d", i%memoryQueues)
	return wrappers.MakeQueueUnit(fmt.Sprintf("small-%05d", i), team).Quota(team).Priority(50).
		Request(corev1.ResourceCPU, "1").
		Label("perf.koord-queue.io/class", "small").Label("perf.koord-queue.io/runtime-ms", "200").Obj()
}

// jobUnit is unit i of a job of two pod sets, as a job extension writes
// it and the binary's cache keeps it.
func jobUnit(i int) *schedulingv1alpha1.QueueUnit {
	team := fmt.Sprintf("team-%03d", i%memoryQueues)
	job := fmt.Sprintf("train-%05d", i)
	jobUID := types.UID(fmt.Sprintf("6e3c3a49-2f0e-4a57-9a47-%012d", i))
	u := wrappers.MakeQueueUnit(job+"-pytorchjob", team).Quota(team).Priority(100).
		Label("app", "trainer").Label("team", team).Label("training.kubeflow.org/job-name", job).
		ConsumerOf("kubeflow.org/v1", "PyTorchJob").
		PodSet("master", 1).PodSet("worker", 4).Obj()
	u.Annotations = map[string]string{
		"scheduling.x-k8s.io/suspend": "true",
		"koord-queue/job-type":        "PyTorchJob",
	}
	u.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: job, UID: jobUID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	u.Spec.ConsumerRef.UID = jobUID
	u.Spec.ConsumerRef.Name = job
	u.Spec.Queue = team
	for i := range u.Spec.PodSets {
		u.Spec.PodSets[i].Template = corev1.PodTemplateSpec{} // dropped by the cache: the unit states its request
	}
	u.Spec.Resource = qt.Res("cpu", "17", "memory", "68Gi", "nvidia.com/gpu", "4")
	u.Spec.Request = qt.Res("cpu", "17", "memory", "68Gi", "nvidia.com/gpu", "4")
	return u
}

// waitingStatus: a unit in the "full" quota (whose max is 0), told why it
// waits.
func waitingStatus(u *schedulingv1alpha1.QueueUnit, _ metav1.Time) {
	u.Labels[elasticquotav1alpha1.LabelQuotaName] = "full"
	u.Spec.Queue = ""
	queueunit.Explain(u, "waiting for quota in full: insufficient cpu (asks 1, 0 of max 0 free)")
}

// admittedStatus: a unit admitted by koord-queue, its pods running.
func admittedStatus(u *schedulingv1alpha1.QueueUnit, at metav1.Time) {
	queueunit.Admit(u, elasticquotav1alpha1.QuotaNameFromLabels(u.Labels), queueunit.Request(u), nil, nil, at)
	queueunit.FollowJob(u, queueunit.JobState{Pods: runningPods(u, true)}, at)
}

// finishedStatus: a unit admitted, run and finished.
func finishedStatus(u *schedulingv1alpha1.QueueUnit, at metav1.Time) {
	admittedStatus(u, at)
	queueunit.FollowJob(u, queueunit.JobState{Finished: true, Succeeded: true, Pods: runningPods(u, false)}, metav1.NewTime(at.Add(time.Minute)))
}

// runningPods is every pod of u's pod sets on a node, or none.
func runningPods(u *schedulingv1alpha1.QueueUnit, running bool) map[string]queueunit.PodCount {
	pods := map[string]queueunit.PodCount{}
	for _, a := range u.Status.Admissions {
		if running {
			pods[a.Name] = queueunit.PodCount{Running: int32(a.Replicas), Scheduled: int32(a.Replicas)}
		} else {
			pods[a.Name] = queueunit.PodCount{}
		}
	}
	return pods
}
