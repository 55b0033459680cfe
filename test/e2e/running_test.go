package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// fillQuota starts a 4-CPU Job that fills quota (max 4 CPU) in ns for
// runTime and waits until its pod runs.
func fillQuota(t *testing.T, ns, quota string, runTime time.Duration) *batchv1.Job {
	t.Helper()
	first := batchJob(ns, "first", quota, "4")
	first.Spec.Template.Annotations = map[string]string{cluster.PodRunTimeAnnotation: runTime.String()}
	create(t, first)
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		if n := livePods(ctx, t, ns, first.Name, true); n == 0 {
			return fmt.Errorf("no pod of %s runs yet", first.Name)
		}
		return nil
	})
	return first
}

// livePods counts the pods of a Job that have not ended (bound to a node
// only, with bound).
func livePods(ctx context.Context, t *testing.T, ns, job string, bound bool) int {
	t.Helper()
	var pods corev1.PodList
	if err := k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: job}); err != nil {
		t.Fatalf("listing the pods of %s: %v", job, err)
	}
	return countLive(pods.Items, bound)
}

// countLive counts the pods that have not ended and are not being deleted
// (bound to a node only, with bound).
func countLive(pods []corev1.Pod, bound bool) int {
	n := 0
	for _, p := range pods {
		ended := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if !ended && p.DeletionTimestamp == nil && (!bound || p.Spec.NodeName != "") {
			n++
		}
	}
	return n
}

// completedAfter checks that every pod of job that succeeded was created
// after t0: none of its work ran before then.
func completedAfter(t *testing.T, ns, job string, t0 time.Time) {
	t.Helper()
	var pods corev1.PodList
	if err := k8sClient.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: job}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded && p.CreationTimestamp.Time.Before(t0.Truncate(time.Second)) {
			t.Errorf("pod %s of %s succeeded, created at %v, before %v", p.Name, job, p.CreationTimestamp.Time, t0)
		}
	}
}

// TestJobSubmittedRunningIsSuspended: with the webhook off, a labelled Job
// submitted running into a full quota is the reconciler's to catch: it is
// suspended and its pods deleted while the Job holding the quota still runs,
// it waits for that Job, then runs and completes.
func TestJobSubmittedRunningIsSuspended(t *testing.T) {
	t.Parallel()
	const ns, quota = "running-backstop", "backstop"
	create(t, namespaceObj(ns))
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	monitor := monitorUsage(ns, quota)
	first := fillQuota(t, ns, quota, 20*time.Second)

	forgot := batchJob(ns, "forgot", quota, "4")
	forgot.Spec.Suspend = nil
	create(t, forgot)
	if ptr.Deref(forgot.Spec.Suspend, false) {
		t.Fatal("the Job was created suspended: no webhook should be called in this namespace")
	}
	submitted := time.Now()

	// Suspended, and its pods gone, while the first Job still holds the quota.
	var sawPod bool
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		j := &batchv1.Job{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(forgot), j); err != nil {
			return err
		}
		live := livePods(ctx, t, ns, forgot.Name, false)
		sawPod = sawPod || live > 0
		if !ptr.Deref(j.Spec.Suspend, false) || live > 0 {
			return fmt.Errorf("forgot: suspend %v, %d pods not ended", ptr.Deref(j.Spec.Suspend, false), live)
		}
		return nil
	})
	cleared := time.Since(submitted)
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(first), first); err != nil {
		t.Fatal(err)
	}
	if first.Status.CompletionTime != nil {
		t.Fatalf("the first Job completed before the one submitted running was suspended: nothing was shown")
	}
	t.Logf("submitted running: suspended with no pod left %v after submission (a pod was seen: %v)", cleared.Round(time.Millisecond), sawPod)
	eventOn(t, ns, forgot.Name, corev1.EventTypeWarning, framework.ReasonSubmittedRunning)

	jobs := waitJobsComplete(t, 2*time.Minute, ns, first.Name, forgot.Name)
	completedAfter(t, ns, forgot.Name, jobs[first.Name].Status.CompletionTime.Time)
	if peak := monitor.Peak(); peak.Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("%s held %s cpu at its peak, over its max of 4", quota, peak.String())
	}
}

// TestWebhookSuspendsJobsAtCreation: with the webhook on, a labelled Job
// submitted running is suspended as it is created, so it never creates a pod
// before its unit is admitted.
func TestWebhookSuspendsJobsAtCreation(t *testing.T) {
	t.Parallel()
	const ns, quota = "running-webhook", "webhook"
	nsObj := namespaceObj(ns)
	nsObj.Labels = map[string]string{webhookOnLabel: "on"}
	create(t, nsObj)
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	// The webhook serves once the process is up: wait for a dry run to come
	// back suspended.
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		probe := batchJob(ns, "probe", quota, "1")
		probe.Spec.Suspend = nil
		if err := k8sClient.Create(ctx, probe, client.DryRunAll); err != nil {
			return err
		}
		if !ptr.Deref(probe.Spec.Suspend, false) {
			return fmt.Errorf("a dry run came back running: the webhook does not answer yet")
		}
		return nil
	})
	first := fillQuota(t, ns, quota, 15*time.Second)

	forgot := batchJob(ns, "forgot", quota, "4")
	forgot.Spec.Suspend = nil
	create(t, forgot)
	if !ptr.Deref(forgot.Spec.Suspend, false) {
		t.Fatal("the Job was created running: the webhook did not suspend it")
	}
	// No pod of it while the first Job runs. The pods are listed before the
	// first Job is read: a pod seen then existed while that Job ran.
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		n := livePods(ctx, t, ns, forgot.Name, false)
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(first), first); err != nil {
			return err
		}
		if first.Status.CompletionTime != nil {
			return nil
		}
		if n > 0 {
			t.Fatalf("%d pods of the Job exist while the first Job holds the quota", n)
		}
		return fmt.Errorf("waiting for the first Job %s to complete; no pod of %s meanwhile", first.Name, forgot.Name)
	})
	jobs := waitJobsComplete(t, 2*time.Minute, ns, forgot.Name)
	if jobs[forgot.Name].Status.StartTime.Before(first.Status.CompletionTime) {
		t.Errorf("forgot started at %v, before the first Job completed at %v", jobs[forgot.Name].Status.StartTime, first.Status.CompletionTime)
	}
}

// TestReleasedJobSurvivesRestart: a Job koord-queue released keeps running
// when koord-queue-controllers restarts; it is not taken for a job
// submitted running.
func TestReleasedJobSurvivesRestart(t *testing.T) {
	const ns, quota = "running-restart", "restart-ext"
	create(t, namespaceObj(ns))
	create(t, wrappers.MakeElasticQuota(quota, ns).Max(corev1.ResourceCPU, "4").Obj())
	first := fillQuota(t, ns, quota, 10*time.Second)
	var pods corev1.PodList
	if err := k8sClient.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: first.Name}); err != nil {
		t.Fatal(err)
	}

	extensions.Kill()
	var err error
	if extensions, err = startExtensions(); err != nil {
		t.Fatal(err)
	}
	jobs := waitJobsComplete(t, time.Minute, ns, first.Name)
	if got := jobs[first.Name]; ptr.Deref(got.Spec.Suspend, false) || got.Status.Succeeded != 1 {
		t.Errorf("after the restart: suspend %v, %d succeeded; want running on to success", ptr.Deref(got.Spec.Suspend, false), got.Status.Succeeded)
	}
	var after corev1.PodList
	if err := k8sClient.List(context.Background(), &after, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: first.Name}); err != nil {
		t.Fatal(err)
	}
	if len(after.Items) != 1 || len(pods.Items) != 1 || after.Items[0].UID != pods.Items[0].UID {
		t.Errorf("pods before the restart %d, after %d: want the one pod that ran before it, never replaced", len(pods.Items), len(after.Items))
	}
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u := &schedulingv1alpha1.QueueUnit{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(first), u); err != nil {
			return err
		}
		if u.Status.Phase != schedulingv1alpha1.Succeed {
			return fmt.Errorf("unit phase %s, want Succeed", u.Status.Phase)
		}
		return nil
	})
}

// eventOn waits for an event of reason on the object called name.
func eventOn(t *testing.T, ns, name, eventType, reason string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		var events corev1.EventList
		if err := k8sClient.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == name && e.Type == eventType && e.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("no %s event %s on %s/%s", eventType, reason, ns, name)
	})
}
