package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/queue"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// v18Unit creates the QueueUnit Koord-Queue v1.8 makes for a job
// (wrappers.KoordQueueV18Unit): Running for a job it released, else
// Enqueued.
func v18Unit(t *testing.T, job client.Object, gvk metav1.GroupVersionKind, unitName string, sets []schedulingv1alpha1.PodSet, running bool) client.ObjectKey {
	t.Helper()
	phase := schedulingv1alpha1.Enqueued
	if running {
		phase = schedulingv1alpha1.Running
	}
	u := wrappers.KoordQueueV18Unit(job, gvk, unitName, sets, phase)
	status := u.Status
	create(t, u)
	key := client.ObjectKeyFromObject(u)
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		if err := k8sClient.Get(ctx, key, u); err != nil {
			return err
		}
		u.Status = status
		return k8sClient.Status().Update(ctx, u)
	})
	return key
}

// TestTakeoverFromKoordQueue switches a cluster from Koord-Queue v1.8 to
// koord-queue with jobs running: both binaries are stopped, the objects
// Koord-Queue leaves are made in its exact shapes (a Job and a PyTorchJob it
// released, running, their units Running with status.admissions; two Jobs
// still suspended, their units Enqueued; the Queue it made for the
// ElasticQuota, without our label), and both binaries are started again.
// The running jobs run on untouched (same pods, never suspended), their
// units follow them to Succeed and give the quota back, the waiting Jobs
// are admitted in their order without the quota's max ever being passed,
// and the Queue follows its ElasticQuota's policy from then on.
func TestTakeoverFromKoordQueue(t *testing.T) {
	needTrainingOperator(t)
	const (
		ns    = "takeover"
		quota = "takeover"
	)
	create(t, namespaceObj(ns))
	koordQueue.Stop(10 * time.Second)
	extensions.Stop(10 * time.Second)
	restarted := false
	t.Cleanup(func() {
		if !restarted { // later tests need both binaries
			startBoth(t)
		}
	})

	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	// Koord-Queue copies the quota's annotations onto its Queue, and
	// Koordinator annotates every quota it manages with
	// quota-koord-queue-enable.
	v18Queue := &schedulingv1alpha1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: quota, Namespace: schedulingv1alpha1.QueueNamespace,
			Annotations: map[string]string{queue.AnnotationKoordQueueEnable: ""}},
		Spec: schedulingv1alpha1.QueueSpec{QueuePolicy: schedulingv1alpha1.QueuePolicyPriority, Priority: ptr.To[int32](1000)},
	}
	create(t, v18Queue)
	monitor := monitorUsage("", quota) // every namespace

	// A Job Koord-Queue released: running, 1 cpu, for 40 s.
	running := batchJob(ns, "running", quota, "1")
	running.Spec.Suspend = ptr.To(false)
	running.Annotations = wrappers.KoordQueueV18Annotations(true)
	running.Spec.Template.Annotations = map[string]string{cluster.PodRunTimeAnnotation: "40s"}
	create(t, running)
	jobGVK := metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	runningUnit := v18Unit(t, running, jobGVK, running.Name,
		[]schedulingv1alpha1.PodSet{{Name: running.Name, Count: 1, Template: *running.Spec.Template.DeepCopy()}}, true)

	// A PyTorchJob Koord-Queue released: a master and a worker of 1 cpu.
	pt := extensionstest.MakePyTorchJob("pt", kubeflowNamespace).Quota(quota).Suspend(false).
		Replica(kftraining.PyTorchJobReplicaTypeMaster, 1, "cpu", "1").Replica(kftraining.PyTorchJobReplicaTypeWorker, 1, "cpu", "1").
		Container(kftraining.PyTorchJobDefaultContainerName).PodAnnotation(cluster.PodRunTimeAnnotation, "40s").Obj()
	pt.Annotations = wrappers.KoordQueueV18Annotations(true)
	pt.Annotations["scheduling.x-k8s.io/suspend"] = "false"
	create(t, pt)
	var ptSets []schedulingv1alpha1.PodSet
	for _, rt := range []kftraining.ReplicaType{kftraining.PyTorchJobReplicaTypeMaster, kftraining.PyTorchJobReplicaTypeWorker} {
		spec := pt.Spec.PyTorchReplicaSpecs[rt]
		ptSets = append(ptSets, schedulingv1alpha1.PodSet{Name: strings.ToLower(string(rt)), Count: ptr.Deref(spec.Replicas, 1), Template: *spec.Template.DeepCopy()})
	}
	ptUnit := v18Unit(t, pt, metav1.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}, pt.Name+"-py-qu", ptSets, true)

	// Two Jobs Koord-Queue queued and has not released: 1 cpu each, the
	// first created first. Only one fits beside the running jobs.
	var waiting []*batchv1.Job
	for _, name := range []string{"waiting-1", "waiting-2"} {
		j := batchJob(ns, name, quota, "1")
		j.Annotations = wrappers.KoordQueueV18Annotations(false)
		create(t, j)
		v18Unit(t, j, jobGVK, j.Name, []schedulingv1alpha1.PodSet{{Name: j.Name, Count: 1, Template: *j.Spec.Template.DeepCopy()}}, false)
		waiting = append(waiting, j)
	}

	// Everything Koord-Queue left runs before the switch: the pods of the
	// running jobs exist, and are the ones that must run on.
	var runningPods, ptPods []types.UID
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		runningPods, ptPods = nil, nil
		var pods corev1.PodList
		if err := k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: running.Name}); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
				runningPods = append(runningPods, p.UID)
			}
		}
		made, err := operatorPods(ctx, kubeflowNamespace, "PyTorchJob", pt.Name)
		if err != nil {
			return err
		}
		for _, p := range made {
			if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
				ptPods = append(ptPods, p.UID)
			}
		}
		if len(runningPods) != 1 || len(ptPods) != 2 {
			return fmt.Errorf("%d pod(s) of Job %s and %d of PyTorchJob %s run, want 1 and 2", len(runningPods), running.Name, len(ptPods), pt.Name)
		}
		return nil
	})

	switched := time.Now()
	startBoth(t)
	restarted = true

	t.Run("the Queue Koord-Queue made follows its ElasticQuota", func(t *testing.T) {
		eq := &elasticquotav1alpha1.ElasticQuota{}
		testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: quota}, eq); err != nil {
				return err
			}
			if eq.Labels == nil {
				eq.Labels = map[string]string{}
			}
			eq.Labels[schedulingv1alpha1.LabelQueuePolicy] = string(schedulingv1alpha1.QueuePolicyBlock)
			return k8sClient.Update(ctx, eq)
		})
		testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
			q := &schedulingv1alpha1.Queue{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(v18Queue), q); err != nil {
				return err
			}
			if q.Spec.QueuePolicy != schedulingv1alpha1.QueuePolicyBlock {
				return fmt.Errorf("queue %s policy %s, want Block as its ElasticQuota now says", q.Name, q.Spec.QueuePolicy)
			}
			return nil
		})
	})

	t.Run("running jobs run on and their units finish", func(t *testing.T) {
		for _, c := range []struct {
			key  client.ObjectKey
			pods func(ctx context.Context) ([]corev1.Pod, error)
			was  []types.UID
		}{
			{runningUnit, func(ctx context.Context) ([]corev1.Pod, error) {
				var pods corev1.PodList
				err := k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: running.Name})
				return pods.Items, err
			}, runningPods},
			{ptUnit, func(ctx context.Context) ([]corev1.Pod, error) {
				return operatorPods(ctx, kubeflowNamespace, "PyTorchJob", pt.Name)
			}, ptPods},
		} {
			testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
				u := &schedulingv1alpha1.QueueUnit{}
				if err := k8sClient.Get(ctx, c.key, u); err != nil {
					return err
				}
				if u.Status.Phase != schedulingv1alpha1.Succeed {
					return fmt.Errorf("unit %s phase %s (%s), want Succeed", c.key, u.Status.Phase, u.Status.Message)
				}
				if len(u.Status.Admissions) != 0 {
					return fmt.Errorf("unit %s succeeded still holding %v", c.key, u.Status.Admissions)
				}
				return nil
			})
			pods, err := c.pods(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var uids []types.UID
			for _, p := range pods {
				uids = append(uids, p.UID)
				if p.Status.Phase != corev1.PodSucceeded {
					t.Errorf("pod %s of unit %s is %s, want Succeeded", p.Name, c.key, p.Status.Phase)
				}
			}
			slices.Sort(uids)
			if !slices.Equal(uids, slices.Sorted(slices.Values(c.was))) {
				t.Errorf("unit %s: pods %v after the switch, %v before: want the same pods, never replaced", c.key, uids, c.was)
			}
		}
		eventsOfReason(t, ns, framework.ReasonUnitNameTaken, framework.ReasonSubmittedRunning, framework.ReasonUnitNotAdoptable)
		eventsOfReason(t, kubeflowNamespace, framework.ReasonUnitNameTaken, framework.ReasonSubmittedRunning, framework.ReasonUnitNotAdoptable)
	})

	t.Run("waiting jobs are admitted in their order", func(t *testing.T) {
		done := waitJobsComplete(t, 3*time.Minute, ns, waiting[0].Name, waiting[1].Name)
		first, second := done[waiting[0].Name], done[waiting[1].Name]
		if second.Status.StartTime.Before(first.Status.StartTime) {
			t.Errorf("%s started at %v, before %s at %v", waiting[1].Name, second.Status.StartTime, waiting[0].Name, first.Status.StartTime)
		}
		completedAfter(t, ns, waiting[0].Name, switched)
		completedAfter(t, ns, waiting[1].Name, switched)
	})

	if peak := monitor.Peak(); peak.Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("quota %s held %s cpu at its peak, over its max of 4", quota, peak.String())
	}
}

// startBoth starts koord-queue and koord-queue-controllers again.
func startBoth(t *testing.T) {
	t.Helper()
	var err error
	if koordQueue, err = startKoordQueue(); err != nil {
		t.Fatal(err)
	}
	if extensions, err = startExtensions(); err != nil {
		t.Fatal(err)
	}
}

// eventsOfReason fails the test for every event in ns of one of reasons.
func eventsOfReason(t *testing.T, ns string, reasons ...string) {
	t.Helper()
	var events corev1.EventList
	if err := k8sClient.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		for _, r := range reasons {
			if e.Reason == r {
				t.Errorf("event %s on %s %s: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
			}
		}
	}
}
