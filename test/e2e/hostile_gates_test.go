package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestHostileGates: pods a queued Job makes that its unit's admission does
// not cover are created at koord-queue's scheduling gate, so none of them
// reaches a node, whatever the tenant does to the Job, and the CPU the
// tenant's pods hold on nodes (Terminating ones included) never passes its
// quota's max.
func TestHostileGates(t *testing.T) {
	t.Parallel()
	t.Run("un-suspend by update", testUnsuspendByUpdate)
	t.Run("grow by parallelism", testGrowByParallelism)
}

// gatedNamespace creates ns, served by the job and pod webhooks, with a
// quota of the same name of max cpu, and a tenant of it whose pods on
// nodes are watched.
func gatedNamespace(t *testing.T, ns, cpu string) (*tenant, *podsOnNodes) {
	t.Helper()
	nsObj := withWebhook(namespaceObj(ns))
	nsObj.Labels[podGateLabel] = "on"
	create(t, nsObj)
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, cpu).Obj())
	return newTenant(t, ns), watchPodsOnNodes(t, ns)
}

// testUnsuspendByUpdate: a tenant un-suspends its waiting Job by patches,
// again each time it is suspended, while its quota is full. The Job
// controller makes pods whenever it syncs the Job un-suspended; created at
// the gate, none of them is scheduled. Once the quota frees, the Job is
// admitted and runs.
func testUnsuspendByUpdate(t *testing.T) {
	const ns = "hostile-unsuspend"
	tn, held := gatedNamespace(t, ns, "4")

	// The quota is full, held by a Job that runs until it is deleted.
	filler := batchJob(ns, "filler", ns, "4")
	filler.Spec.Template.Annotations = map[string]string{cluster.PodRunTimeAnnotation: "1h"}
	tn.create(t, filler)
	waitAdmitted(t, ns, filler.Name)

	// The tenant's Job waits: four pods of one CPU, each of which, once on
	// a node, stays Terminating for a minute after its deletion.
	waiting := batchJob(ns, "waiting", ns, "1")
	waiting.Spec.Parallelism, waiting.Spec.Completions = ptr.To[int32](4), ptr.To[int32](4)
	waiting.Spec.Template.Annotations = map[string]string{cluster.PodRunTimeAnnotation: "2s", podDeleteDelayAnnotation: "60s"}
	tn.create(t, waiting)
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		_, err := unitPhase(ctx, ns, waiting.Name)
		return err
	})

	// The tenant un-suspends its Job again as soon as it is suspended, as
	// fast as the API server answers, until the Job controller has made pods
	// of it: a single un-suspension races koord-queue-controllers, which may
	// suspend the Job again before the Job controller syncs it.
	unsuspend := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))
	patches, deadline := 0, time.Now().Add(time.Minute)
	for made, _, _ := held.of(waiting.Name); len(made) < 4 && time.Now().Before(deadline); made, _, _ = held.of(waiting.Name) {
		if err := tn.c.Patch(context.Background(), &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: waiting.Name}}, unsuspend); err != nil {
			t.Fatalf("the tenant un-suspending its Job (patch %d): %v", patches+1, err)
		}
		patches++
	}
	// Suspended again by koord-queue-controllers, its pods deleted.
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		var j batchv1.Job
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(waiting), &j); err != nil {
			return err
		}
		if live := livePods(ctx, t, ns, waiting.Name, false); !ptr.Deref(j.Spec.Suspend, false) || live > 0 {
			return fmt.Errorf("%s suspend %v, %d pods not ended", waiting.Name, ptr.Deref(j.Spec.Suspend, false), live)
		}
		return nil
	})
	made, gated, bound := held.of(waiting.Name)
	t.Logf("%d un-suspensions: the Job controller made %d pods of %s, %d of them gated", patches, len(made), waiting.Name, len(gated))
	if len(bound) > 0 {
		t.Errorf("pods of %s, whose unit waits, were scheduled: %v", waiting.Name, bound)
	}
	if len(made) == 0 {
		t.Errorf("the Job controller made no pod of %s in %d un-suspensions within a minute: the case tried nothing", waiting.Name, patches)
	}

	// The quota frees: the Job is admitted, runs and completes.
	if err := k8sClient.Delete(context.Background(), filler, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	waitJobsComplete(t, 3*time.Minute, ns, waiting.Name)
	held.notOver(t, "4")
}

// testGrowByParallelism: a tenant raises the parallelism of its running
// Job, which fills its quota, by one. The Job controller makes the new pod
// before koord-queue-controllers suspends the Job to queue it again at its
// new size; created at the gate (its pod set has the pods it was admitted
// with), it is not scheduled, and the Job's old pods, Terminating for
// podGrace, are all the tenant holds.
//
// Whether the Job controller makes the pod first is a race with
// koord-queue-controllers, which both see the raise at once. When
// koord-queue-controllers wins, the tenant lowers the Job back to its
// quota, waits for it to run again and raises it again, up to
// growAttempts times.
func testGrowByParallelism(t *testing.T) {
	const (
		ns           = "hostile-grow"
		growAttempts = 4
	)
	tn, held := gatedNamespace(t, ns, "4")
	job := lingeringJob(ns, "grower", ns, "2", 2)
	job.Spec.Completions = ptr.To[int32](4) // immutable; room to raise parallelism
	tn.create(t, job)
	setParallelism := func(n int) {
		t.Helper()
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"parallelism":%d}}`, n)))
		if err := tn.c.Patch(context.Background(), &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name}}, patch); err != nil {
			t.Fatalf("the tenant setting its Job's parallelism to %d: %v", n, err)
		}
	}

	var grown, gated, bound []string
	for attempt := 1; ; attempt++ {
		testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
			if n := boundPods(ctx, t, ns, job.Name); n < 2 {
				return fmt.Errorf("%d of the 2 pods of %s run", n, job.Name)
			}
			return nil
		})
		made, _, _ := held.of(job.Name)
		setParallelism(3)
		// Suspended and queued again at 6 cpu, which its quota cannot give.
		testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
			var j batchv1.Job
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
				return err
			}
			u, err := unitPhase(ctx, ns, job.Name)
			switch {
			case err != nil:
				return err
			case !ptr.Deref(j.Spec.Suspend, false):
				return fmt.Errorf("%s is not suspended again yet", job.Name)
			case queueunit.HoldsQuota(u) || u.Spec.Resource.Cpu().Cmp(resource.MustParse("6")) != 0:
				return fmt.Errorf("%s's unit asks for %s cpu, holds quota %v: not queued again at 6 cpu yet", job.Name, u.Spec.Resource.Cpu(), queueunit.HoldsQuota(u))
			case boundPods(ctx, t, ns, job.Name) > 0:
				return fmt.Errorf("pods of %s still on their nodes", job.Name)
			}
			return nil
		})
		var after []string
		after, gated, bound = held.of(job.Name)
		grown = slices.DeleteFunc(slices.Clone(after), func(name string) bool { return slices.Contains(made, name) })
		t.Logf("raise %d to 3 pods: the Job controller made %v, gated %v", attempt, grown, gated)
		if len(grown) > 0 || attempt == growAttempts {
			break
		}
		setParallelism(2) // queued again at 4 cpu, admitted once the old pods are gone
	}
	if len(grown) == 0 {
		t.Errorf("the Job controller made no pod of %s before it was suspended in %d raises: the case tried nothing", job.Name, growAttempts)
	}
	for _, name := range grown {
		if slices.Contains(bound, name) {
			t.Errorf("pod %s, made past the 2 pods %s was admitted with, was scheduled", name, job.Name)
		}
	}
	held.notOver(t, "4")
}

// podsOnNodes watches the pods of a namespace and keeps, at every change,
// the most CPU those bound to a node and not finished (Terminating
// included) ask for at once, as the scheduler counts a pod. A watch sees
// every state a pod passes through, which sampling may miss.
type podsOnNodes struct {
	mu     sync.Mutex
	pods   map[string]*corev1.Pod
	peak   resource.Quantity
	peakAt []string
	// jobs are the pods ever seen of each Job.
	jobs map[string]*jobPods
}

// jobPods are the pods of a Job ever seen, ever created at koord-queue's
// gate, and ever bound to a node.
type jobPods struct{ made, gated, bound map[string]bool }

// watchPodsOnNodes starts watching the pods of ns until the test ends.
func watchPodsOnNodes(t *testing.T, ns string) *podsOnNodes {
	t.Helper()
	w := &podsOnNodes{pods: map[string]*corev1.Pod{}, jobs: map[string]*jobPods{}}
	c, err := client.NewWithWatch(localCluster.Config, client.Options{Scheme: k8sClient.Scheme(), Mapper: k8sClient.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started, done := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(done)
		rv, first := "", true
		for ctx.Err() == nil {
			var list corev1.PodList
			if rv == "" {
				if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
					if first {
						started <- err
						return
					}
					continue
				}
				rv = list.ResourceVersion
				for i := range list.Items {
					w.seen(&list.Items[i], false)
				}
			}
			watcher, err := c.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err != nil {
				rv = ""
				continue
			}
			if first {
				first = false
				started <- nil
			}
			for e := range watcher.ResultChan() {
				pod, ok := e.Object.(*corev1.Pod)
				switch {
				case e.Type == watch.Error:
					rv = ""
				case !ok:
				case e.Type == watch.Bookmark:
					rv = pod.ResourceVersion
				default:
					rv = pod.ResourceVersion
					w.seen(pod, e.Type == watch.Deleted)
				}
			}
			watcher.Stop()
		}
	}()
	if err := <-started; err != nil {
		cancel()
		t.Fatalf("watching the pods of %s: %v", ns, err)
	}
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func (w *podsOnNodes) seen(pod *corev1.Pod, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	job := pod.Labels[batchv1.JobNameLabel]
	if w.jobs[job] == nil {
		w.jobs[job] = &jobPods{made: map[string]bool{}, gated: map[string]bool{}, bound: map[string]bool{}}
	}
	j := w.jobs[job]
	j.made[pod.Name] = true
	if slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == schedulingv1alpha1.SchedulingGateAdmission
	}) {
		j.gated[pod.Name] = true
	}
	if pod.Spec.NodeName != "" {
		j.bound[pod.Name] = true
	}
	if deleted {
		delete(w.pods, pod.Name)
	} else {
		w.pods[pod.Name] = pod
	}
	var sum resource.Quantity
	var holding []string
	for _, p := range w.pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		sum.Add(resources.PodRequests(&p.Spec)[corev1.ResourceCPU])
		holding = append(holding, p.Name)
	}
	if sum.Cmp(w.peak) > 0 {
		slices.Sort(holding)
		w.peak, w.peakAt = sum, holding
	}
}

// notOver fails t if the namespace's pods ever held more than max cpu on
// nodes at once, naming the pods that did.
func (w *podsOnNodes) notOver(t *testing.T, max string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.peak.Cmp(resource.MustParse(max)) > 0 {
		t.Errorf("the tenant's pods held %s cpu on nodes at their peak (%v), over its quota's max of %s", w.peak.String(), w.peakAt, max)
		return
	}
	t.Logf("the tenant's pods held at most %s cpu on nodes", w.peak.String())
}

// of returns the pods of job ever seen, ever gated and ever bound to a
// node, by name.
func (w *podsOnNodes) of(job string) (made, gated, bound []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	j := w.jobs[job]
	if j == nil {
		return nil, nil, nil
	}
	return slices.Sorted(maps.Keys(j.made)), slices.Sorted(maps.Keys(j.gated)), slices.Sorted(maps.Keys(j.bound))
}
