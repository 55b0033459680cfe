package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// The tests in this file run the real Kubeflow training-operator (the
// release whose API go.mod pins, built by `make tools`) on the local
// cluster: koord-queue releases a TFJob, PyTorchJob or MPIJob, the operator
// creates its pods, kwok runs them to success, and the operator marks the
// job Succeeded.

// kubeflowNamespace is the only namespace whose jobs the training-operator
// manages; elsewhere (TestFrameworksAreQueuedAndReleased) no operator runs
// them.
const kubeflowNamespace = "kubeflow-jobs"

var trainingOperator operator

// needTrainingOperator starts the training-operator for kubeflowNamespace
// the first time a test needs it (see operator.need).
func needTrainingOperator(t *testing.T) {
	t.Helper()
	trainingOperator.need(t, "the Kubeflow training-operator", kubeflowNamespace, func(ctx context.Context) error {
		_, err := localCluster.StartTrainingOperator(ctx, cluster.TrainingOperatorOptions{
			Namespace: kubeflowNamespace,
			Schemes:   []string{"tfjob", "pytorchjob", "mpijob"},
		})
		return err
	})
}

// operatorPods lists the pods a job's operator made for it: those the job
// controls.
func operatorPods(ctx context.Context, ns, kind, name string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := k8sClient.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the pods of %s %s/%s: %w", kind, ns, name, err)
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == kind && ref.Name == name {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// getJob reads a job of integ as the extension sees it.
func getJob(ctx context.Context, integ framework.Integration, ns, name string) (framework.GenericJob, error) {
	job := integ.NewJob()
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job.Object()); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", integ.GVK.Kind, ns, name, err)
	}
	return job, nil
}

// waitSucceeded waits until the operator marks the job Succeeded and the
// extension its unit Succeed, its quota given back; it fails at once if the
// job failed.
func waitSucceeded(t *testing.T, integ framework.Integration, ns, name string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		job, err := getJob(ctx, integ, ns, name)
		if err != nil {
			return err
		}
		msg, ok, finished := job.Finished()
		if finished && !ok {
			t.Fatalf("%s %s failed: %s", integ.GVK.Kind, name, msg)
		}
		u, err := unitPhase(ctx, ns, integ.UnitName(name))
		if err != nil {
			return err
		}
		if !finished || u.Status.Phase != schedulingv1alpha1.Succeed || len(u.Status.Admissions) > 0 {
			pods, err := operatorPods(ctx, ns, integ.GVK.Kind, name)
			if err != nil {
				return err
			}
			return fmt.Errorf("%s %s finished %v (suspended %v, %d of its pods live); its unit: phase %s with %d admissions (%q); want the job Succeeded, its unit Succeed with its quota given back",
				integ.GVK.Kind, name, finished, job.IsSuspended(), countLive(pods, true), u.EffectivePhase(), len(u.Status.Admissions), u.Status.Message)
		}
		return nil
	})
}

// TestKubeflowJobsRunWithTheTrainingOperator: for each training job kind,
// two jobs of 3 CPU each in a quota of 4: koord-queue releases the first,
// the training-operator creates its pods, they run and succeed on kwok, the
// operator marks the job Succeeded and its unit turns Succeed; only then is
// the second admitted (no pod of it exists before), and it runs to success
// in turn.
func TestKubeflowJobsRunWithTheTrainingOperator(t *testing.T) {
	needTrainingOperator(t)
	ns := kubeflowNamespace
	cases := []struct {
		integ string
		job   func(name, quota string) client.Object
	}{
		{"tfjob", func(name, quota string) client.Object {
			return extensionstest.MakeTFJob(name, ns).Quota(quota).
				Replica(kftraining.TFJobReplicaTypePS, 1, "cpu", "1").Replica(kftraining.TFJobReplicaTypeWorker, 2, "cpu", "1").
				Container(kftraining.TFJobDefaultContainerName).Obj()
		}},
		{"pytorchjob", func(name, quota string) client.Object {
			return extensionstest.MakePyTorchJob(name, ns).Quota(quota).
				Replica(kftraining.PyTorchJobReplicaTypeMaster, 1, "cpu", "1").Replica(kftraining.PyTorchJobReplicaTypeWorker, 2, "cpu", "1").
				Container(kftraining.PyTorchJobDefaultContainerName).Obj()
		}},
		{"mpijob", func(name, quota string) client.Object {
			return extensionstest.MakeMPIJob(name, ns).Quota(quota).
				Replica(kftraining.MPIJobReplicaTypeLauncher, 1, "cpu", "1").Replica(kftraining.MPIJobReplicaTypeWorker, 2, "cpu", "1").
				Container(kftraining.MPIJobDefaultContainerName).Obj()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.integ, func(t *testing.T) {
			t.Parallel()
			integ := integration(t, tc.integ)
			kind := integ.GVK.Kind
			quota := tc.integ + "-team"
			create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
			monitor := monitorUsage(ns, quota)
			// Job names are unique in the namespace: the operator names
			// pods and Services after them.
			first, second := tc.integ+"-first", tc.integ+"-second"
			create(t, tc.job(first, quota))
			waitReleased(t, integ, ns, first)
			create(t, tc.job(second, quota))

			// The second waits, with a reason, and has no pod while the
			// first holds the quota. Its pods are listed before the first's
			// unit is read: a pod seen then existed while the first held it.
			var sawFirstRun, sawSecondWait bool
			testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
				secondPods, err := operatorPods(ctx, ns, kind, second)
				if err != nil {
					return err
				}
				u, err := unitPhase(ctx, ns, integ.UnitName(first))
				if err != nil {
					return err
				}
				if queueunit.HoldsQuota(u) && len(secondPods) > 0 {
					t.Fatalf("%d pods of %s exist while %s holds the quota", len(secondPods), second, first)
				}
				firstPods, err := operatorPods(ctx, ns, kind, first)
				if err != nil {
					return err
				}
				sawFirstRun = sawFirstRun || countLive(firstPods, true) == 3
				if u.Status.Phase != schedulingv1alpha1.Succeed {
					if view, err := unitView(ctx, ns, integ.UnitName(second)); err == nil {
						sawSecondWait = sawSecondWait || view.Phase == schedulingv1alpha1.Enqueued && view.Reason != ""
					}
					return fmt.Errorf("%s: unit phase %s, %d pods of it made by the operator (%d live); waiting for it to succeed",
						first, u.EffectivePhase(), len(firstPods), countLive(firstPods, true))
				}
				return nil
			})
			if !sawFirstRun {
				t.Errorf("never saw the 3 pods of %s run at once", first)
			}
			if !sawSecondWait {
				t.Errorf("never saw %s wait in the queue with a reason while %s ran", second, first)
			}
			waitSucceeded(t, integ, ns, first)
			waitReleased(t, integ, ns, second)
			waitSucceeded(t, integ, ns, second)

			// Every pod the operator made ran on a node and succeeded.
			for _, name := range []string{first, second} {
				testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
					pods, err := operatorPods(ctx, ns, kind, name)
					if err != nil {
						return err
					}
					if len(pods) != 3 {
						return fmt.Errorf("%s has %d pods, want 3", name, len(pods))
					}
					for _, p := range pods {
						if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodSucceeded {
							return fmt.Errorf("pod %s: node %q phase %s, want bound and Succeeded", p.Name, p.Spec.NodeName, p.Status.Phase)
						}
					}
					return nil
				})
			}
			if peak := monitor.Peak(); peak.Cmp(resource.MustParse("4")) > 0 {
				t.Errorf("%s held %s cpu at its peak, over its max of 4", quota, peak.String())
			}
		})
	}
}

// TestPyTorchJobPreemptedWhileRunning: in a quota with in-queue preemption
// of running units, a high-priority PyTorchJob that needs the whole quota
// evicts a running low-priority one. The extension suspends it, the
// training-operator deletes its pods, and its unit holds the quota until
// none of them runs any more: the high job is never admitted while a pod of
// the low one runs. The high job runs to success, then the low one is
// resumed, the operator creates new pods, and it succeeds too.
func TestPyTorchJobPreemptedWhileRunning(t *testing.T) {
	needTrainingOperator(t)
	priorityClasses(t)
	ns, quota := kubeflowNamespace, "pytorch-preempt"
	integ := integration(t, "pytorchjob")
	kind := integ.GVK.Kind
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").
		Annotation(schedulingv1alpha1.AnnotationEnableQueueUnitPreemption, "true").
		Annotation(policy.AnnotationPreemptRunning, "true").Obj())
	monitor := monitorUsage(ns, quota)
	job := func(name, priorityClass string) *extensionstest.TrainingJobWrapper[*kftraining.PyTorchJob] {
		return extensionstest.MakePyTorchJob(name, ns).Quota(quota).PriorityClass(priorityClass).
			Replica(kftraining.PyTorchJobReplicaTypeMaster, 1, "cpu", "2").Replica(kftraining.PyTorchJobReplicaTypeWorker, 1, "cpu", "2").
			Container(kftraining.PyTorchJobDefaultContainerName)
	}
	// low runs long enough that high can only finish first by preempting it.
	const low, high = "preempted", "preempting"
	create(t, job(low, "e2e-low").PodAnnotation(cluster.PodRunTimeAnnotation, "20s").Obj())
	firstRun := map[types.UID]bool{}
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitPhase(ctx, ns, integ.UnitName(low))
		if err != nil {
			return err
		}
		pods, err := operatorPods(ctx, ns, kind, low)
		if err != nil {
			return err
		}
		if u.Status.Phase != schedulingv1alpha1.Running || countLive(pods, true) != 2 {
			return fmt.Errorf("%s: unit phase %s, %d of its 2 pods run", low, u.EffectivePhase(), countLive(pods, true))
		}
		for _, p := range pods {
			firstRun[p.UID] = true
		}
		return nil
	})

	overlap := watchOverlap(ns, integ.UnitName(high), kind, low)
	create(t, job(high, "e2e-high").Obj())
	// Suspended; the operator deletes its pods; only then is the quota given back.
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitPhase(ctx, ns, integ.UnitName(low))
		if err != nil {
			return err
		}
		pods, err := operatorPods(ctx, ns, kind, low)
		if err != nil {
			return err
		}
		if len(u.Status.Admissions) == 0 && countLive(pods, true) > 0 {
			t.Fatalf("%s's unit gave its quota back while %d of its pods still run", low, countLive(pods, true))
		}
		j, err := getJob(ctx, integ, ns, low)
		if err != nil {
			return err
		}
		if !j.IsSuspended() || len(pods) > 0 || len(u.Status.Admissions) > 0 {
			return fmt.Errorf("%s: suspended %v, %d pods (%d live), unit phase %s with %d admissions; want it suspended, its pods gone and its quota given back",
				low, j.IsSuspended(), len(pods), countLive(pods, true), u.EffectivePhase(), len(u.Status.Admissions))
		}
		return nil
	})
	eventOn(t, ns, low, corev1.EventTypeNormal, "SuccessfulDeletePod") // the operator's

	waitSucceeded(t, integ, ns, high)
	waitSucceeded(t, integ, ns, low)
	if err := overlap.Stop(); err != nil {
		t.Error(err)
	}
	pods, err := operatorPods(context.Background(), ns, kind, low)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if firstRun[p.UID] {
			t.Errorf("pod %s of %s is from before the preemption; want every pod made anew on resume", p.Name, low)
		}
	}
	if peak := monitor.Peak(); peak.Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("%s held %s cpu at its peak, over its max of 4", quota, peak.String())
	}
	eventOn(t, ns, integ.UnitName(low), corev1.EventTypeNormal, queueunit.EventPreempted)
}

// overlapWatch samples, until stopped, whether a unit holds quota while
// pods of an evicted job still run.
type overlapWatch struct {
	stop context.CancelFunc
	done chan struct{}
	err  error
}

// watchOverlap starts sampling whether unit (of the preempting job) holds
// quota while a pod of the job kind/name (the preempted one) runs. The
// unit is read before and after the pods are listed: holding quota both
// times, it held it when the pods were listed.
func watchOverlap(ns, unit, kind, name string) *overlapWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &overlapWatch{stop: cancel, done: make(chan struct{})}
	holds := func() bool {
		u, err := unitPhase(ctx, ns, unit)
		return err == nil && queueunit.HoldsQuota(u)
	}
	go func() {
		defer close(w.done)
		ticker := time.NewTicker(50 * time.Millisecond)
		defer ticker.Stop()
		for {
			before := holds()
			pods, err := operatorPods(ctx, ns, kind, name)
			if err == nil && before && countLive(pods, true) > 0 && holds() {
				w.err = fmt.Errorf("%s held quota while %d pods of %s ran", unit, countLive(pods, true), name)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return w
}

// Stop ends the sampling and says whether an overlap was seen.
func (w *overlapWatch) Stop() error {
	w.stop()
	<-w.done
	return w.err
}
