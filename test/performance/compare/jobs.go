package compare

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/performance/checker"
	"github.com/koord-queue/koord-queue/test/performance/generator"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

// JobsConfig is one of the shapes `make perf-compare-jobs` runs: a Kueue
// generator.yaml, whose cohorts, ClusterQueues and workload classes become
// batch Jobs on a kwok cluster for both systems.
type JobsConfig struct {
	// InModule: the generator.yaml is in Kueue's module at ModuleDir;
	// otherwise it is in this repository at RepoDir.
	InModule  bool
	ModuleDir string
	RepoDir   string
	// Timeout bounds each run, from the cluster's start to the last Job
	// complete.
	Timeout time.Duration
}

// JobsConfigs are the shapes perfcomparejobs runs.
var JobsConfigs = map[string]JobsConfig{
	// Kueue's baseline (make test-performance-scheduler's): 15,000 Jobs.
	"baseline": {InModule: true, ModuleDir: "test/performance/scheduler/configs/baseline", Timeout: 40 * time.Minute},
	// A few hundred Jobs in the baseline's shape, for a smoke run.
	"smoke": {RepoDir: "test/performance/compare/configs/jobs-smoke", Timeout: 10 * time.Minute},
	// Kueue's large-scale shape (1,000 ClusterQueues) with 15,000 Jobs.
	"large-scale": {RepoDir: "test/performance/compare/configs/jobs-large-scale", Timeout: 90 * time.Minute},
}

// JobsConfigNames lists JobsConfigs' names.
func JobsConfigNames() []string { return slices.Sorted(maps.Keys(JobsConfigs)) }

// Generator is the config's generator.yaml, given Kueue's module root and
// this repository's.
func (c JobsConfig) Generator(moduleDir, repoRoot string) string {
	dir := filepath.Join(repoRoot, c.RepoDir)
	if c.InModule {
		dir = filepath.Join(moduleDir, c.ModuleDir)
	}
	return filepath.Join(dir, "generator.yaml")
}

// Names the shape's objects share on both systems: each ClusterQueue
// (leaf quota) has a namespace of its own, where its Jobs are created.
const (
	// KueueFlavor is the one ResourceFlavor, with no node labels.
	KueueFlavor = "default-flavor"
	// KueueLocalQueue is the LocalQueue in each leaf's namespace.
	KueueLocalQueue = "lq"
	// KueueQueueLabel names a Job's LocalQueue (Kueue's
	// kueue.x-k8s.io/queue-name).
	KueueQueueLabel = "kueue.x-k8s.io/queue-name"
	kueueAPIVersion = "kueue.x-k8s.io/v1beta2"
)

// Parent and Leaf name the shape's quotas (Kueue's cohorts and
// ClusterQueues) as koord-queue's baseline scenario does.
func Parent(p int) string  { return fmt.Sprintf("cohort-%d", p) }
func Leaf(p, c int) string { return fmt.Sprintf("cq-%d-%d", p, c) }

// Leaves are the leaf quotas, parent by parent.
func (s Shape) Leaves() []string {
	var out []string
	for p := range s.Parents {
		for c := range s.ChildrenPerParent {
			out = append(out, Leaf(p, c))
		}
	}
	return out
}

// Jobs is how many Jobs the shape creates.
func (s Shape) Jobs() int {
	n := 0
	for _, set := range s.Sets {
		n += set.Count
	}
	return n * s.Parents * s.ChildrenPerParent
}

// QuotaScenario is koord-queue's side of the shape: an ElasticQuota tree of
// Parents parents, each with the capacity of its children's guarantees (a
// Kueue cohort has no quota of its own), each leaf guaranteed its nominal
// quota and limited to nominal + borrowing limit, preempting lower
// priorities in its own quota, running or not, when the ClusterQueue does
// (withinClusterQueue: LowerPriority). Its Sets are the Jobs each leaf
// receives; koord-queue runs at QPS 50, burst 100, as Kueue's release
// configures its manager.
func (s Shape) QuotaScenario(name string) scenario.Scenario {
	sc := scenario.Scenario{Name: name, Title: "Kueue's " + name + " shape, as batch Jobs", QPS: 50, Burst: 100}
	for p := range s.Parents {
		sc.Quotas = append(sc.Quotas, scenario.Quota{Name: Parent(p), Min: s.ParentMax, Max: s.ParentMax})
		sc.ClusterCPU += s.ParentMax
		for c := range s.ChildrenPerParent {
			sc.Quotas = append(sc.Quotas, scenario.Quota{Name: Leaf(p, c), Parent: Parent(p), Min: s.ChildMin, Max: s.ChildMax, Preemption: s.Preemption})
		}
	}
	for _, set := range s.Sets {
		sc.Sets = append(sc.Sets, scenario.Set{
			Class: scenario.Class{Name: set.Class, CPU: set.CPU, Runtime: set.Runtime, Priority: set.Priority},
			Count: set.Count, Interval: set.Interval,
		})
	}
	return sc
}

// KueueObjects are Kueue's side of the shape, in the order to create them:
// the ResourceFlavor, a ClusterQueue per leaf in its parent's cohort (cpu:
// the nominal quota and borrowing limit; reclaimWithinCohort Any and
// withinClusterQueue as the config says, as Kueue's runner makes them), and
// a LocalQueue in each leaf's namespace.
func (s Shape) KueueObjects() []*unstructured.Unstructured {
	within := "Never"
	if s.Preemption {
		within = "LowerPriority"
	}
	objs := []*unstructured.Unstructured{{Object: map[string]any{
		"apiVersion": kueueAPIVersion, "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": KueueFlavor},
	}}}
	for p := range s.Parents {
		for c := range s.ChildrenPerParent {
			leaf := Leaf(p, c)
			objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": kueueAPIVersion, "kind": "ClusterQueue",
				"metadata": map[string]any{"name": leaf},
				"spec": map[string]any{
					"cohortName":        Parent(p),
					"namespaceSelector": map[string]any{},
					"resourceGroups": []any{map[string]any{
						"coveredResources": []any{"cpu"},
						"flavors": []any{map[string]any{
							"name": KueueFlavor,
							"resources": []any{map[string]any{
								"name":           "cpu",
								"nominalQuota":   strconv.FormatInt(s.ChildMin, 10),
								"borrowingLimit": strconv.FormatInt(s.ChildMax-s.ChildMin, 10),
							}},
						}},
					}},
					"preemption": map[string]any{"reclaimWithinCohort": "Any", "withinClusterQueue": within},
				},
			}})
		}
	}
	for _, leaf := range s.Leaves() {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": kueueAPIVersion, "kind": "LocalQueue",
			"metadata": map[string]any{"name": KueueLocalQueue, "namespace": generator.UnitNamespace(leaf)},
			"spec":     map[string]any{"clusterQueue": leaf},
		}})
	}
	return objs
}

// PriorityClassName is the PriorityClass of a class's pods: both systems
// take a Job's priority from its pod template's priority class.
func PriorityClassName(class string) string { return "perf-" + class }

// PriorityClasses are one per class, with the class's priority, and
// preemptionPolicy Never: kube-scheduler never preempts pods for them, so
// every eviction is the queueing system's.
func (s Shape) PriorityClasses() []*schedulingv1.PriorityClass {
	var out []*schedulingv1.PriorityClass
	seen := map[string]bool{}
	for _, set := range s.Sets {
		if seen[set.Class] {
			continue
		}
		seen[set.Class] = true
		out = append(out, &schedulingv1.PriorityClass{
			ObjectMeta:       metav1.ObjectMeta{Name: PriorityClassName(set.Class)},
			Value:            set.Priority,
			PreemptionPolicy: ptr.To(corev1.PreemptNever),
		})
	}
	return out
}

// podCapacity is how many pods a kwok node takes (its allocatable pods).
const podCapacity = 110

// Nodes sizes the kwok cluster for the shape: cpu for every quota's
// guarantee at once plus a quarter (so that a pod the quota admits finds a
// node though the nodes are fragmented), in nodes no larger than the
// smallest class's pods fill to nine tenths of a node's pod capacity (so
// that pods run out of cpu before a node runs out of pod slots), and never
// smaller than the largest pod.
func (s Shape) Nodes() (count int, cpu int64) {
	total := int64(s.Parents) * s.ParentMax * 5 / 4
	smallest, largest := int64(0), int64(1)
	for _, set := range s.Sets {
		if smallest == 0 || set.CPU < smallest {
			smallest = set.CPU
		}
		largest = max(largest, set.CPU)
	}
	cpu = max(min(smallest*podCapacity*9/10, total), largest, 1)
	count = int((total + cpu - 1) / cpu)
	return max(count, 1), cpu
}

// labelJobSystem names the run's system on each Job, for a reader of the
// cluster; neither system reads it.
const labelJobSystem = "perf.koord-queue.io/system"

// Job is Job i of a set in leaf's namespace, for system: suspended, one
// pod asking the class's cpu, which kwok completes after the class's
// runtime, at the class's priority. Kueue's Job names its LocalQueue
// (kueue.x-k8s.io/queue-name), as Kueue's documentation has users do with
// a Job created suspended; koord-queue's names its ElasticQuota.
func Job(system, leaf string, set ShapeSet, i int) *batchv1.Job {
	labels := map[string]string{checker.LabelClass: set.Class, labelJobSystem: DirName(system)}
	if system == Kueue {
		labels[KueueQueueLabel] = KueueLocalQueue
	} else {
		labels[elasticquotav1alpha1.LabelQuotaName] = leaf
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%05d", set.Class, i),
			Namespace: generator.UnitNamespace(leaf),
			Labels:    labels,
		},
		Spec: batchv1.JobSpec{
			Suspend:     ptr.To(true),
			Parallelism: ptr.To[int32](1),
			Completions: ptr.To[int32](1),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{checker.LabelClass: set.Class},
					Annotations: map[string]string{cluster.PodRunTimeAnnotation: set.Runtime.String()},
				},
				Spec: corev1.PodSpec{
					RestartPolicy:     corev1.RestartPolicyNever,
					PriorityClassName: PriorityClassName(set.Class),
					Containers: []corev1.Container{{
						Name: "work", Image: "busybox",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: *resource.NewQuantity(set.CPU, resource.DecimalSI),
						}},
					}},
				},
			},
		},
	}
}

// KueueManagerConfig is the Configuration file of Kueue's manager
// (config.kueue.x-k8s.io/v1beta2): its release's controller_manager_config
// (client QPS 50, burst 100; the same concurrency per kind), with only the
// batch/job integration, no leader election (one replica, as koord-queue
// runs here), internal certificate management off (certDir holds the
// webhook server's pair), and the harness's addresses.
func KueueManagerConfig(namespace string, webhookPort int, certDir, probeAddr, metricsAddr string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: %s
metrics:
  bindAddress: %s
webhook:
  port: %d
  host: 127.0.0.1
  certDir: %s
leaderElection:
  leaderElect: false
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 5
    LocalQueue.kueue.x-k8s.io: 1
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 1
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 50
  burst: 100
internalCertManagement:
  enable: false
integrations:
  frameworks:
  - batch/job
`, namespace, probeAddr, metricsAddr, webhookPort, certDir)
	return []byte(b.String())
}
