// Package generator creates a performance scenario's objects: the node that
// gives the root quota its capacity, namespaces, the ElasticQuota tree, and
// each leaf quota's units on the scenario's schedule.
package generator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/performance/checker"
	"github.com/koord-queue/koord-queue/test/performance/runner"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

// QuotaNamespace holds the scenario's ElasticQuotas.
const QuotaNamespace = "koord-queue-perf"

// burstWorkers create a set whose units arrive all at once.
const burstWorkers = 8

// UnitNamespace holds a leaf quota's units.
func UnitNamespace(leaf string) string { return "perf-" + leaf }

// Prepare creates what exists before koord-queue starts: the namespaces
// and a Ready node with the scenario's cluster cpu.
func Prepare(ctx context.Context, c client.Client, s *scenario.Scenario) error {
	if err := CreateNamespaces(ctx, c, s); err != nil {
		return err
	}
	return CreateNode(ctx, c, s)
}

// CreateNamespaces creates koord-queue's namespace, the quotas' and one per
// leaf quota.
func CreateNamespaces(ctx context.Context, c client.Client, s *scenario.Scenario) error {
	names := []string{schedulingv1alpha1.QueueNamespace, QuotaNamespace}
	for _, leaf := range s.Leaves() {
		names = append(names, UnitNamespace(leaf.Name))
	}
	for _, name := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// CreateNode creates a Ready node with the scenario's cluster cpu: the
// root quota's capacity. Nothing runs on it.
func CreateNode(ctx context.Context, c client.Client, s *scenario.Scenario) error {
	node := Node(s)
	status := node.Status
	if err := c.Create(ctx, node); err != nil {
		return fmt.Errorf("creating node: %w", err)
	}
	node.Status = status
	if err := c.Status().Update(ctx, node); err != nil {
		return fmt.Errorf("making the node Ready: %w", err)
	}
	return nil
}

// Node is the one node: its allocatable cpu is the scenario's cluster cpu.
func Node(s *scenario.Scenario) *corev1.Node {
	return wrappers.Node("perf-node", strconv.FormatInt(s.ClusterCPU, 10), "64Ti")
}

// CreateQuotas creates the quota tree and waits until koord-queue has made
// a Queue for every quota, so no unit waits for its queue.
func CreateQuotas(ctx context.Context, c client.Client, s *scenario.Scenario) error {
	names := make([]string, 0, len(s.Quotas))
	for _, q := range s.Quotas {
		if err := c.Create(ctx, ElasticQuota(s, q)); err != nil {
			return fmt.Errorf("creating ElasticQuota %s: %w", q.Name, err)
		}
		names = append(names, q.Name)
	}
	return waitForQueues(ctx, c, names, time.Minute, func(schedulingv1alpha1.Queue) bool { return true })
}

// CreateChurnQuotas creates the extra ElasticQuotas the scenario's churn
// patches (scenario.ChurnQuotas: 1 cpu each, under the root, no units) and
// waits until koord-queue has made their Queues and written their first
// status, so that work is done before the first unit arrives.
func CreateChurnQuotas(ctx context.Context, c client.Client, s *scenario.Scenario) error {
	names := s.ChurnQuotas()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(burstWorkers)
	for _, name := range names {
		g.Go(func() error {
			if err := c.Create(gctx, wrappers.MakeElasticQuota(name, QuotaNamespace).Max(corev1.ResourceCPU, "1").Obj()); err != nil {
				return fmt.Errorf("creating ElasticQuota %s: %w", name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return waitForQueues(ctx, c, names, 5*time.Minute, func(q schedulingv1alpha1.Queue) bool { return len(q.Status.Conditions) > 0 })
}

// waitForQueues waits until koord-queue has made a Queue of each name, each
// as done says.
func waitForQueues(ctx context.Context, c client.Client, names []string, timeout time.Duration, done func(schedulingv1alpha1.Queue) bool) error {
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		queues := &schedulingv1alpha1.QueueList{}
		if err := c.List(ctx, queues, client.InNamespace(schedulingv1alpha1.QueueNamespace)); err != nil {
			return false, err
		}
		have := map[string]bool{}
		for _, q := range queues.Items {
			have[q.Name] = done(q)
		}
		missing = missing[:0]
		for _, name := range names {
			if !have[name] {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for koord-queue to make and report Queues (%d of %d missing, first %v): %w",
			len(missing), len(names), missing[:min(len(missing), 5)], err)
	}
	return nil
}

// ElasticQuota is the object that stands for q.
func ElasticQuota(s *scenario.Scenario, q scenario.Quota) *elasticquotav1alpha1.ElasticQuota {
	eq := wrappers.MakeElasticQuota(q.Name, QuotaNamespace).
		Min(corev1.ResourceCPU, strconv.FormatInt(q.Min, 10)).
		Max(corev1.ResourceCPU, strconv.FormatInt(q.Max, 10))
	if q.Parent != "" {
		eq.Parent(q.Parent)
	}
	if s.IsParent(q.Name) {
		eq.Label(elasticquotav1alpha1.LabelQuotaIsParent, "true")
	}
	if q.Preemption {
		eq.Annotation(schedulingv1alpha1.AnnotationEnableQueueUnitPreemption, "true")
		eq.Annotation(policy.AnnotationPreemptRunning, "true")
	}
	if q.Topology != "" {
		eq.Annotation(schedulingv1alpha1.AnnotationTopology, q.Topology)
	}
	return eq.Obj()
}

// Arrival is when unit i of set is created, after the generator starts:
// (i+1) × interval as Kueue's generator does, or at once for a set without
// an interval.
func Arrival(set scenario.Set, i int) time.Duration {
	return time.Duration(i+1) * set.Interval
}

// Unit is the unit number i of a class in a leaf quota.
// A class that declares its run time gives the unit
// spec.maximumExecutionTimeSeconds.
func Unit(leaf string, class scenario.Class, i int) *schedulingv1alpha1.QueueUnit {
	u := wrappers.MakeQueueUnit(fmt.Sprintf("%s-%05d", class.Name, i), UnitNamespace(leaf)).
		Quota(leaf).
		Priority(class.Priority).
		Request(corev1.ResourceCPU, strconv.FormatInt(class.CPU, 10)).
		Label(checker.LabelClass, class.Name).
		Label(runner.LabelRuntime, strconv.FormatInt(class.Runtime.Milliseconds(), 10)).
		Obj()
	if class.Declared > 0 {
		u.Spec.MaximumExecutionTimeSeconds = ptr.To(int32(class.Declared / time.Second))
	}
	return u
}

// WithJobPodSet gives u the pod set koord-queue-controllers writes into the
// unit of a one-pod batch Job asking for the class's cpu, as the API server
// defaulted the Job: its pod template, with the Job controller's labels, and
// the request it already carries (spec.resource, spec.request).
func WithJobPodSet(u *schedulingv1alpha1.QueueUnit, class scenario.Class) *schedulingv1alpha1.QueueUnit {
	cpu := resource.MustParse(strconv.FormatInt(class.CPU, 10))
	uid := string(uuid.NewUUID()) // the Job's
	u.Spec.PodSets = []schedulingv1alpha1.PodSet{{
		Name:  schedulingv1alpha1.DefaultPodSetName,
		Count: 1,
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
				"batch.kubernetes.io/controller-uid": uid,
				"batch.kubernetes.io/job-name":       u.Name,
				"controller-uid":                     uid,
				"job-name":                           u.Name,
			}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name:                     "main",
					Image:                    "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
					Command:                  []string{"sh", "-c", "sleep " + strconv.FormatFloat(class.Runtime.Seconds(), 'f', -1, 64)},
					Resources:                corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu}},
					TerminationMessagePath:   corev1.TerminationMessagePathDefault,
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					ImagePullPolicy:          corev1.PullIfNotPresent,
				}},
				RestartPolicy:                 corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds),
				DNSPolicy:                     corev1.DNSClusterFirst,
				SecurityContext:               &corev1.PodSecurityContext{},
				SchedulerName:                 corev1.DefaultSchedulerName,
			},
		},
	}}
	return u
}

// Generate creates every leaf quota's units: each set on its own
// schedule, unit i at start + (i+1) × interval as Kueue's generator does,
// or all at once when the interval is zero. It returns when all exist.
func Generate(ctx context.Context, c client.Client, s *scenario.Scenario) error {
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(s.Leaves())*len(s.Sets))
	for _, leaf := range s.Leaves() {
		for _, set := range s.Sets {
			wg.Go(func() {
				if err := generateSet(ctx, c, leaf.Name, set, s.JobPodSets, start); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// preloadWorkers create a failover scenario's units.
const preloadWorkers = 32

// Preload creates every unit of the sets that have a state (a failover
// scenario's), all at once, as a running cluster holds them: waiting;
// admitted, with the status koord-queue writes (queueunit.Admit, in the
// queue of its quota's name); or finished, as the runner leaves a unit
// that ran. It returns when all exist.
func Preload(ctx context.Context, c client.Client, s *scenario.Scenario) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(preloadWorkers)
	for _, leaf := range s.Leaves() {
		for _, set := range s.Sets {
			if set.State == "" {
				continue
			}
			for i := range set.Count {
				g.Go(func() error { return preload(ctx, c, leaf.Name, set, i) })
			}
		}
	}
	return g.Wait()
}

func preload(ctx context.Context, c client.Client, leaf string, set scenario.Set, i int) error {
	u := Unit(leaf, set.Class, i)
	if err := c.Create(ctx, u); err != nil {
		return fmt.Errorf("creating unit %d of class %s in %s: %w", i, set.Class.Name, leaf, err)
	}
	if set.State == scenario.Waiting {
		return nil
	}
	queueunit.Admit(u, leaf, queueunit.Request(u), nil, nil, metav1.Now())
	if set.State == scenario.Finished {
		u.Status.Phase = schedulingv1alpha1.Succeed
		u.Status.Admissions = nil
		u.Status.Message = "finished (performance runner)"
	}
	if err := c.Status().Update(ctx, u); err != nil {
		return fmt.Errorf("writing the %s status of unit %d of class %s in %s: %w", set.State, i, set.Class.Name, leaf, err)
	}
	return nil
}

func generateSet(ctx context.Context, c client.Client, leaf string, set scenario.Set, jobPodSets bool, start time.Time) error {
	create := func(ctx context.Context, i int) error {
		u := Unit(leaf, set.Class, i)
		if jobPodSets {
			u = WithJobPodSet(u, set.Class)
		}
		if err := c.Create(ctx, u); err != nil {
			return fmt.Errorf("creating unit %d of class %s in %s: %w", i, set.Class.Name, leaf, err)
		}
		return nil
	}
	if set.Interval == 0 {
		// All at once, by a few workers; the first error stops the rest.
		g, ctx := errgroup.WithContext(ctx)
		g.SetLimit(burstWorkers)
		for i := range set.Count {
			g.Go(func() error { return create(ctx, i) })
		}
		return g.Wait()
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := range set.Count {
		timer.Reset(time.Until(start.Add(Arrival(set, i))))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		if err := create(ctx, i); err != nil {
			return err
		}
	}
	return nil
}
