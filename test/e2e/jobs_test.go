package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/seeds"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// usageMonitor samples a cpu figure until stopped (monitor), and remembers
// the most it ever saw.
type usageMonitor struct {
	mu   sync.Mutex
	peak resource.Quantity
	stop context.CancelFunc
	done chan struct{}
}

// monitorUsage samples the cpu that the units of quota in ns hold; every
// unit of ns when quota is empty (units of jobs that name no quota carry no
// quota label).
func monitorUsage(ns, quota string) *usageMonitor {
	return monitor(func(ctx context.Context) (resource.Quantity, error) {
		list := &schedulingv1alpha1.QueueUnitList{}
		opts := []client.ListOption{client.InNamespace(ns)}
		if quota != "" {
			opts = append(opts, client.MatchingLabels{elasticquotav1alpha1.LabelQuotaName: quota})
		}
		var used resource.Quantity
		if err := k8sClient.List(ctx, list, opts...); err != nil {
			return used, err
		}
		for _, u := range list.Items {
			for _, a := range u.Status.Admissions {
				used.Add(a.Resources[corev1.ResourceCPU])
			}
		}
		return used, nil
	})
}

// monitor samples cpu every 100ms until stopped (Peak), keeping the most a
// sample without error gave.
func monitor(sample func(context.Context) (resource.Quantity, error)) *usageMonitor {
	ctx, cancel := context.WithCancel(context.Background())
	m := &usageMonitor{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for {
			if used, err := sample(ctx); err == nil {
				m.mu.Lock()
				if used.Cmp(m.peak) > 0 {
					m.peak = used
				}
				m.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return m
}

// Peak stops the monitor and returns the most it saw.
func (m *usageMonitor) Peak() resource.Quantity {
	m.stop()
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peak
}

func waitJobsComplete(t *testing.T, timeout time.Duration, ns string, names ...string) map[string]*batchv1.Job {
	t.Helper()
	jobs := map[string]*batchv1.Job{}
	testenv.Eventually(t, timeout, func(ctx context.Context) error {
		for _, name := range names {
			job := &batchv1.Job{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
				return err
			}
			if job.Status.CompletionTime == nil {
				u := &schedulingv1alpha1.QueueUnit{}
				_ = k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
				return fmt.Errorf("job %s/%s not complete (suspend %v, active %d); its unit: phase %s, %d admissions, message %q",
					ns, name, ptr.Deref(job.Spec.Suspend, false), job.Status.Active, u.EffectivePhase(), len(u.Status.Admissions), u.Status.Message)
			}
			jobs[name] = job
		}
		return nil
	})
	return jobs
}

// TestSeed004JobsOnKwok applies the Koord-Queue documentation's example
// unchanged: team-a has max 4 CPU / 8Gi and two 4-CPU Jobs; the second waits,
// with a reason, and runs after the first completes.
func TestSeed004JobsOnKwok(t *testing.T) {
	monitor := monitorUsage(metav1.NamespaceDefault, "team-a")
	for _, file := range []string{"004-elastic-quota.yaml", "004-jobs.yaml"} {
		objs, err := seeds.Objects(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			create(t, o)
		}
	}
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitView(ctx, metav1.NamespaceDefault, "my-job-blocked")
		if err != nil {
			return err
		}
		if u.Phase != schedulingv1alpha1.Enqueued || u.Reason == "" {
			return fmt.Errorf("my-job-blocked phase %s reason %q, want Enqueued with a reason", u.Phase, u.Reason)
		}
		return nil
	})
	jobs := waitJobsComplete(t, 2*time.Minute, metav1.NamespaceDefault, "my-job", "my-job-blocked")
	if peak := monitor.Peak(); peak.Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("team-a held %s cpu at its peak, over its max of 4", peak.String())
	}
	first, second := jobs["my-job"], jobs["my-job-blocked"]
	if second.Status.StartTime == nil || second.Status.StartTime.Before(first.Status.CompletionTime) {
		t.Errorf("my-job-blocked started at %v, before my-job completed at %v", second.Status.StartTime, first.Status.CompletionTime)
	}
	// The extension follows the Job's completion onto its unit.
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u := &schedulingv1alpha1.QueueUnit{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "my-job-blocked"}, u); err != nil {
			return err
		}
		if u.Status.Phase != schedulingv1alpha1.Succeed || len(u.Status.Admissions) != 0 {
			return fmt.Errorf("unit phase %s with %d admissions, want Succeed with its quota released", u.Status.Phase, len(u.Status.Admissions))
		}
		return nil
	})
	// An honest Job's unit is created with its final spec, spec.queue
	// included: neither binary writes its main resource again.
	for _, name := range []string{"my-job", "my-job-blocked"} {
		u := &schedulingv1alpha1.QueueUnit{}
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: name}, u); err != nil {
			t.Fatal(err)
		}
		if u.Generation != 1 || u.Spec.Queue != "team-a" {
			t.Errorf("unit %s: generation %d, spec.queue %q; want 1 and team-a (written at its creation, never again)", name, u.Generation, u.Spec.Queue)
		}
	}
}

// TestKoordQueueRestartMidRun kills koord-queue while Jobs queue and run,
// starts it again, and checks every Job still completes and the quota was
// never over-admitted.
func TestKoordQueueRestartMidRun(t *testing.T) {
	const jobs = 10
	ns := "restart"
	create(t, namespaceObj(ns))
	create(t, wrappers.MakeElasticQuota("restart-team", ns).Max(corev1.ResourceCPU, "3").Obj())
	monitor := monitorUsage(ns, "restart-team")
	var names []string
	for i := range jobs {
		name := fmt.Sprintf("job-%02d", i)
		names = append(names, name)
		create(t, batchJob(ns, name, "restart-team", "1"))
	}
	// Once some units are admitted, kill koord-queue as a crash would.
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		list := &schedulingv1alpha1.QueueUnitList{}
		if err := k8sClient.List(ctx, list, client.InNamespace(ns)); err != nil {
			return err
		}
		admitted := 0
		for _, u := range list.Items {
			if len(u.Status.Admissions) > 0 {
				admitted++
			}
		}
		if admitted == 0 {
			return errors.New("nothing admitted yet")
		}
		return nil
	})
	koordQueue.Kill()
	var err error
	if koordQueue, err = startKoordQueue(); err != nil {
		t.Fatal(err)
	}
	waitJobsComplete(t, 3*time.Minute, ns, names...)
	if peak := monitor.Peak(); peak.Cmp(resource.MustParse("3")) > 0 {
		t.Errorf("restart-team held %s cpu at its peak, over its max of 3", peak.String())
	}
}

// TestNamespaceNamedQuotaOnKwok: Jobs that name no quota, in a namespace
// that has an ElasticQuota of its own name, are queued to that quota, as
// koord-scheduler charges their pods: the second waits for the first, says
// which rule chose its quota, and both run on kwok.
func TestNamespaceNamedQuotaOnKwok(t *testing.T) {
	ns := "ns-named"
	create(t, namespaceObj(ns))
	create(t, wrappers.MakeElasticQuota(ns, ns).Max(corev1.ResourceCPU, "1").Obj())
	monitor := monitorUsage(ns, "")
	for _, name := range []string{"first", "second"} {
		job := batchJob(ns, name, "", "1")
		delete(job.Labels, elasticquotav1alpha1.LabelQuotaName)
		create(t, job)
	}
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitView(ctx, ns, "second")
		if err != nil {
			return err
		}
		if u.Queue != ns || u.QuotaRule != string(queueunit.QuotaByNamespaceName) {
			return fmt.Errorf("second is in queue %q by rule %q, want queue %q by rule %q", u.Queue, u.QuotaRule, ns, queueunit.QuotaByNamespaceName)
		}
		return nil
	})
	jobs := waitJobsComplete(t, 2*time.Minute, ns, "first", "second")
	if peak := monitor.Peak(); peak.Cmp(resource.MustParse("1")) > 0 {
		t.Errorf("quota %s held %s cpu at its peak, over its max of 1", ns, peak.String())
	}
	a, b := jobs["first"], jobs["second"]
	if a.Status.StartTime.After(b.Status.StartTime.Time) {
		a, b = b, a
	}
	if b.Status.StartTime.Before(a.Status.CompletionTime) {
		t.Errorf("%s started at %v, before %s completed at %v: both ran at once in a 1-cpu quota", b.Name, b.Status.StartTime, a.Name, a.Status.CompletionTime)
	}
}

// batchJob is a suspended Job of one pod asking for cpu, labelled with its quota.
func batchJob(ns, name, quota, cpu string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{elasticquotav1alpha1.LabelQuotaName: quota}},
		Spec: batchv1.JobSpec{
			Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "work", Image: "busybox",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
				}},
			}},
		},
	}
}
