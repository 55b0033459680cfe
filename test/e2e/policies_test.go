package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/seeds"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// longJob is a suspended one-pod Job whose pod runs for runTime, with a priority class.
func longJob(ns, name, quota, cpu, priorityClass string, runTime time.Duration) *batchv1.Job {
	job := batchJob(ns, name, quota, cpu)
	job.Spec.Template.Annotations = map[string]string{cluster.PodRunTimeAnnotation: runTime.String()}
	job.Spec.Template.Spec.PriorityClassName = priorityClass
	return job
}

func priorityClasses(t *testing.T) {
	t.Helper()
	for name, value := range map[string]int32{"e2e-high": 100, "e2e-low": 1} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if err := k8sClient.Create(context.Background(), pc); err != nil && !isAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

func unitPhase(ctx context.Context, ns, name string) (*schedulingv1alpha1.QueueUnit, error) {
	u := &schedulingv1alpha1.QueueUnit{}
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	return u, err
}

// TestSeedPoliciesWithJobs applies seed 004's three ElasticQuotas unchanged
// (max 10 CPU each; Priority, Block, Intelligent with threshold 5) and, in
// each, a 6-CPU Job holding quota, a high-priority 8-CPU Job that cannot fit
// and a low-priority 1-CPU Job that could: only Priority lets the small one pass.
func TestSeedPoliciesWithJobs(t *testing.T) {
	priorityClasses(t)
	cases := []struct {
		file, quota   string
		wantSmallRuns bool
	}{
		{"004-elastic-quota-priority.yaml", "priority-queue", true},
		{"004-elastic-quota-block.yaml", "block-queue", false},
		{"004-elastic-quota-intelligent.yaml", "intelligent-queue", false},
	}
	for _, tc := range cases {
		t.Run(tc.quota, func(t *testing.T) {
			objs, err := seeds.Objects(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			objs[0].SetNamespace(metav1.NamespaceDefault)
			create(t, objs[0])
			ns := metav1.NamespaceDefault
			create(t, longJob(ns, tc.quota+"-holder", tc.quota, "6", "e2e-low", time.Minute))
			testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
				u, err := unitPhase(ctx, ns, tc.quota+"-holder")
				if err != nil || len(u.Status.Admissions) == 0 {
					return fmt.Errorf("holder not admitted yet (err %v)", err)
				}
				return nil
			})
			create(t, longJob(ns, tc.quota+"-big", tc.quota, "8", "e2e-high", time.Second))
			testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
				u, err := unitView(ctx, ns, tc.quota+"-big")
				if err != nil || u.Reason == "" {
					return fmt.Errorf("big has no reason to wait yet (err %v)", err)
				}
				return nil
			})
			create(t, longJob(ns, tc.quota+"-small", tc.quota, "1", "e2e-low", time.Second))
			// A unit's status.message is written after a scheduling cycle
			// decided it waits: then a policy that let it pass would have.
			testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
				u, err := unitPhase(ctx, ns, tc.quota+"-small")
				if err != nil {
					return err
				}
				holds := len(u.Status.Admissions) > 0
				if tc.wantSmallRuns && !holds {
					return fmt.Errorf("small still waits: %s", u.Status.Message)
				}
				if !tc.wantSmallRuns && (holds || u.Status.Message == "") {
					return fmt.Errorf("small phase %s message %q, want it decided to wait behind big", u.EffectivePhase(), u.Status.Message)
				}
				return nil
			})
			if u, err := unitPhase(context.Background(), ns, tc.quota+"-small"); !tc.wantSmallRuns && (err != nil || len(u.Status.Admissions) > 0) {
				t.Errorf("small admitted past a blocked head (err %v)", err)
			}
			if u, err := unitView(context.Background(), ns, tc.quota+"-big"); err != nil || u.Phase != schedulingv1alpha1.Enqueued {
				t.Errorf("big phase %s (err %v), want Enqueued: 6 + 8 CPU exceed max 10", u.Phase, err)
			}
		})
	}
}

// TestPreemptionOfRunningJob: with in-queue preemption (and preempt-running)
// a high-priority Job evicts a running low-priority Job: the extension
// suspends it, its pods go, its quota is released, the high Job runs, and
// the low one runs again afterwards.
func TestPreemptionOfRunningJob(t *testing.T) {
	priorityClasses(t)
	ns := "preemption"
	create(t, namespaceObj(ns))
	create(t, wrappers.MakeElasticQuota("preempt-team", ns).Max(corev1.ResourceCPU, "4").
		Annotation(schedulingv1alpha1.AnnotationEnableQueueUnitPreemption, "true").
		Annotation(policy.AnnotationPreemptRunning, "true").Obj())
	monitor := monitorUsage(ns, "preempt-team")
	// low runs long enough that high, which needs all of the quota, can
	// only finish first by preempting it.
	create(t, longJob(ns, "low", "preempt-team", "4", "e2e-low", 20*time.Second))
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitPhase(ctx, ns, "low")
		if err != nil || u.Status.Phase != schedulingv1alpha1.Running {
			return fmt.Errorf("low not Running yet (err %v)", err)
		}
		return nil
	})
	create(t, longJob(ns, "high", "preempt-team", "4", "e2e-high", time.Second))
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u, err := unitPhase(ctx, ns, "low")
		if err != nil {
			return err
		}
		job := &batchv1.Job{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "low"}, job); err != nil {
			return err
		}
		if !ptr.Deref(job.Spec.Suspend, false) && job.Status.CompletionTime == nil {
			return fmt.Errorf("low not suspended (unit phase %s)", u.EffectivePhase())
		}
		return nil
	})
	jobs := waitJobsComplete(t, 2*time.Minute, ns, "high", "low")
	if peak := monitor.Peak(); peak.Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("preempt-team held %s cpu at its peak, over its max of 4", peak.String())
	}
	if high, low := jobs["high"].Status.CompletionTime, jobs["low"].Status.CompletionTime; !high.Before(low) {
		t.Errorf("high completed at %v, low at %v; want high first, having preempted low", high, low)
	}
	eventOn(t, ns, "low", corev1.EventTypeNormal, queueunit.EventPreempted)
}
