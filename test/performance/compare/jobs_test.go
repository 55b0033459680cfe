package compare

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/performance/checker"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

func readShape(t *testing.T, path string) Shape {
	t.Helper()
	cfg, err := ReadKueueGeneratorConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cfg.Shape()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestJobsShapesAreKueues holds the Jobs of each config to its Kueue
// config: as many Jobs as Kueue's runner makes workloads, and koord-queue's
// quota tree in the same shape.
func TestJobsShapesAreKueues(t *testing.T) {
	for _, tc := range []struct {
		config, generator string
		wantJobs          int
	}{
		{"baseline", filepath.Join("testdata", "kueue-v0.17.0-baseline-generator.yaml"), 15000},
		{"smoke", filepath.Join("configs", "jobs-smoke", "generator.yaml"), 360},
		{"large-scale", filepath.Join("configs", "jobs-large-scale", "generator.yaml"), 15000},
	} {
		t.Run(tc.config, func(t *testing.T) {
			cfg, err := ReadKueueGeneratorConfig(tc.generator)
			if err != nil {
				t.Fatal(err)
			}
			shape := readShape(t, tc.generator)
			if shape.Jobs() != tc.wantJobs || shape.Jobs() != cfg.Workloads() {
				t.Errorf("%d Jobs, want %d (Kueue's workloads: %d)", shape.Jobs(), tc.wantJobs, cfg.Workloads())
			}
			sc := shape.QuotaScenario("jobs")
			if err := sc.Validate(); err != nil {
				t.Errorf("koord-queue's side is not a valid scenario: %v", err)
			}
			got, err := ScenarioShape(&sc)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(shape, got); diff != "" {
				t.Errorf("koord-queue's quota tree against Kueue's %s (-want +got):\n%s", tc.config, diff)
			}
		})
	}
}

func TestQuotaScenario(t *testing.T) {
	shape := Shape{
		Parents: 2, ChildrenPerParent: 1, ParentMax: 20, ChildMin: 20, ChildMax: 20, Preemption: true,
		Sets: []ShapeSet{{Class: "small", CPU: 1, Runtime: 200 * time.Millisecond, Priority: 50, Count: 3, Interval: 100 * time.Millisecond}},
	}
	want := scenario.Scenario{
		Name: "jobs", Title: "Kueue's jobs shape, as batch Jobs", QPS: 50, Burst: 100, ClusterCPU: 40,
		Quotas: []scenario.Quota{
			{Name: "cohort-0", Min: 20, Max: 20},
			{Name: "cq-0-0", Parent: "cohort-0", Min: 20, Max: 20, Preemption: true},
			{Name: "cohort-1", Min: 20, Max: 20},
			{Name: "cq-1-0", Parent: "cohort-1", Min: 20, Max: 20, Preemption: true},
		},
		Sets: []scenario.Set{{Class: scenario.Class{Name: "small", CPU: 1, Runtime: 200 * time.Millisecond, Priority: 50}, Count: 3, Interval: 100 * time.Millisecond}},
	}
	if diff := cmp.Diff(want, shape.QuotaScenario("jobs")); diff != "" {
		t.Errorf("QuotaScenario (-want +got):\n%s", diff)
	}
}

func TestKueueObjects(t *testing.T) {
	shape := Shape{Parents: 1, ChildrenPerParent: 2, ParentMax: 40, ChildMin: 20, ChildMax: 40, Preemption: true}
	objs := shape.KueueObjects()
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	want := []string{"ResourceFlavor /default-flavor", "ClusterQueue /cq-0-0", "ClusterQueue /cq-0-1", "LocalQueue perf-cq-0-0/lq", "LocalQueue perf-cq-0-1/lq"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	for _, o := range objs {
		if o.GetAPIVersion() != "kueue.x-k8s.io/v1beta2" {
			t.Errorf("%s %s: apiVersion %s", o.GetKind(), o.GetName(), o.GetAPIVersion())
		}
	}
	cq := objs[1]
	for _, f := range []struct {
		path []string
		want string
	}{
		{[]string{"spec", "cohortName"}, "cohort-0"},
		{[]string{"spec", "preemption", "reclaimWithinCohort"}, "Any"},
		{[]string{"spec", "preemption", "withinClusterQueue"}, "LowerPriority"},
	} {
		if v, _, _ := unstructured.NestedString(cq.Object, f.path...); v != f.want {
			t.Errorf("ClusterQueue's %s = %q, want %q", strings.Join(f.path, "."), v, f.want)
		}
	}
	groups, _, _ := unstructured.NestedSlice(cq.Object, "spec", "resourceGroups")
	wantGroups := []any{map[string]any{
		"coveredResources": []any{"cpu"},
		"flavors": []any{map[string]any{"name": "default-flavor", "resources": []any{map[string]any{
			"name": "cpu", "nominalQuota": "20", "borrowingLimit": "20",
		}}}},
	}}
	if diff := cmp.Diff(wantGroups, groups); diff != "" {
		t.Errorf("ClusterQueue's resource groups (-want +got):\n%s", diff)
	}
	if lq, _, _ := unstructured.NestedString(objs[3].Object, "spec", "clusterQueue"); lq != "cq-0-0" {
		t.Errorf("LocalQueue's clusterQueue = %q, want cq-0-0", lq)
	}
}

func TestJobForEachSystem(t *testing.T) {
	set := ShapeSet{Class: "medium", CPU: 5, Runtime: 500 * time.Millisecond, Priority: 100}
	for _, tc := range []struct {
		system     string
		wantLabels map[string]string
	}{
		{Kueue, map[string]string{checker.LabelClass: "medium", labelJobSystem: "kueue", KueueQueueLabel: "lq"}},
		{KoordQueue, map[string]string{checker.LabelClass: "medium", labelJobSystem: "koord-queue", elasticquotav1alpha1.LabelQuotaName: "cq-1-2"}},
	} {
		t.Run(tc.system, func(t *testing.T) {
			j := Job(tc.system, "cq-1-2", set, 7)
			if diff := cmp.Diff(metav1.ObjectMeta{Name: "medium-00007", Namespace: "perf-cq-1-2", Labels: tc.wantLabels}, j.ObjectMeta); diff != "" {
				t.Errorf("Job's metadata (-want +got):\n%s", diff)
			}
			if !ptr.Deref(j.Spec.Suspend, false) {
				t.Error("Job not created suspended")
			}
			pod := j.Spec.Template
			if got := pod.Annotations[cluster.PodRunTimeAnnotation]; got != "500ms" {
				t.Errorf("pod's run time %q, want 500ms (kwok reads a Go duration)", got)
			}
			if pod.Spec.PriorityClassName != "perf-medium" {
				t.Errorf("pod's priority class %q, want perf-medium", pod.Spec.PriorityClassName)
			}
			if cpu := pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.Value() != 5 {
				t.Errorf("pod asks %s cpu, want 5", cpu.String())
			}
		})
	}
}

func TestPriorityClassesOnePerClass(t *testing.T) {
	shape := readShape(t, filepath.Join("testdata", "kueue-v0.17.0-baseline-generator.yaml"))
	var got []string
	for _, pc := range shape.PriorityClasses() {
		if pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptNever {
			t.Errorf("%s lets kube-scheduler preempt", pc.Name)
		}
		got = append(got, pc.Name+"="+strconv.Itoa(int(pc.Value)))
	}
	if diff := cmp.Diff([]string{"perf-small=50", "perf-medium=100", "perf-large=200"}, got); diff != "" {
		t.Errorf("priority classes (-want +got):\n%s", diff)
	}
}

func TestNodesHoldEveryGuaranteeWithSlack(t *testing.T) {
	for _, tc := range []struct {
		name      string
		shape     Shape
		wantNodes int
		wantCPU   int64
	}{
		{
			name:      "baseline: 600 cpu of guarantees, 1 to 20 cpu pods",
			shape:     readShape(t, filepath.Join("testdata", "kueue-v0.17.0-baseline-generator.yaml")),
			wantNodes: 8, wantCPU: 99,
		},
		{
			name:      "smoke: 80 cpu of guarantees",
			shape:     readShape(t, filepath.Join("configs", "jobs-smoke", "generator.yaml")),
			wantNodes: 2, wantCPU: 99,
		},
		{
			name:      "pods larger than a node of small pods",
			shape:     Shape{Parents: 1, ParentMax: 10, Sets: []ShapeSet{{CPU: 200}}},
			wantNodes: 1, wantCPU: 200,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, cpu := tc.shape.Nodes()
			if n != tc.wantNodes || cpu != tc.wantCPU {
				t.Errorf("Nodes() = %d of %d cpu, want %d of %d", n, cpu, tc.wantNodes, tc.wantCPU)
			}
			if total := int64(n) * cpu; total < int64(tc.shape.Parents)*tc.shape.ParentMax {
				t.Errorf("%d cpu in all, less than the %d cpu of guarantees", total, int64(tc.shape.Parents)*tc.shape.ParentMax)
			}
		})
	}
}

func TestKueueManagerConfig(t *testing.T) {
	var got map[string]any
	if err := yaml.UnmarshalStrict(KueueManagerConfig("kueue-system", 9443, "/certs", "127.0.0.1:1", "127.0.0.1:2"), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "namespace": "kueue-system",
		"health":         map[string]any{"healthProbeBindAddress": "127.0.0.1:1"},
		"metrics":        map[string]any{"bindAddress": "127.0.0.1:2"},
		"webhook":        map[string]any{"port": float64(9443), "host": "127.0.0.1", "certDir": "/certs"},
		"leaderElection": map[string]any{"leaderElect": false},
		"controller": map[string]any{"groupKindConcurrency": map[string]any{
			"Job.batch": float64(5), "Pod": float64(5), "Workload.kueue.x-k8s.io": float64(5), "LocalQueue.kueue.x-k8s.io": float64(1),
			"Cohort.kueue.x-k8s.io": float64(1), "ClusterQueue.kueue.x-k8s.io": float64(1), "ResourceFlavor.kueue.x-k8s.io": float64(1),
		}},
		"clientConnection":       map[string]any{"qps": float64(50), "burst": float64(100)},
		"internalCertManagement": map[string]any{"enable": false},
		"integrations":           map[string]any{"frameworks": []any{"batch/job"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Kueue's Configuration (-want +got):\n%s", diff)
	}
}

func TestToRunning(t *testing.T) {
	t0 := time.Unix(1000, 0)
	created, running, class := map[string]time.Time{}, map[string]time.Time{}, map[string]string{}
	// Ten small Jobs started 1..10 s after creation, one large 4 s after;
	// a Job never seen started and a start of a Job not created by the run
	// are left out.
	for i := 1; i <= 10; i++ {
		key := "ns/small-" + strconv.Itoa(i)
		created[key], running[key], class[key] = t0, t0.Add(time.Duration(i)*time.Second), "small"
	}
	created["ns/large-1"], running["ns/large-1"], class["ns/large-1"] = t0, t0.Add(4*time.Second), "large"
	created["ns/never"], class["ns/never"] = t0, "small"
	running["ns/other"] = t0
	want := map[string]Latency{"small": {Mean: 5.5, P90: 9}, "large": {Mean: 4, P90: 4}}
	if diff := cmp.Diff(want, ToRunning(created, running, class)); diff != "" {
		t.Errorf("ToRunning (-want +got):\n%s", diff)
	}
}

func TestJobRecordCountsEvictionsAndCompletions(t *testing.T) {
	rec := newJobRecord(1)
	t0 := time.Unix(1000, 0)
	job := func(suspend, complete bool) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", Labels: map[string]string{checker.LabelClass: "small"}}, Spec: batchv1.JobSpec{Suspend: ptr.To(suspend)}}
		if complete {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		}
		return j
	}
	rec.creating(job(true, false), t0)
	for i, step := range []struct{ suspend, complete bool }{
		{true, false},  // queued
		{false, false}, // released
		{false, false}, // status written
		{true, false},  // evicted
		{true, false},  // still suspended: the same eviction
		{false, false}, // released again
		{false, true},  // complete
		{false, true},  // seen again
	} {
		rec.observeJob(job(step.suspend, step.complete), t0.Add(time.Duration(i)*time.Second))
	}
	rec.observePod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{batchv1.JobNameLabel: "j"}}, Status: corev1.PodStatus{Phase: corev1.PodPending}}, t0.Add(time.Second))
	rec.observePod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{batchv1.JobNameLabel: "j"}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, t0.Add(2*time.Second))
	rec.observePod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{batchv1.JobNameLabel: "j"}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, t0.Add(5*time.Second))
	created, started, complete, evictions := rec.counts()
	if diff := cmp.Diff([]int{1, 1, 1, 1}, []int{created, started, complete, evictions}); diff != "" {
		t.Errorf("created, started, complete, evictions (-want +got):\n%s", diff)
	}
	select {
	case <-rec.all:
	default:
		t.Error("every Job complete, but all not closed")
	}
	if got := rec.lastComplete(); !got.Equal(t0.Add(6 * time.Second)) {
		t.Errorf("last complete at %v, want %v", got, t0.Add(6*time.Second))
	}
	if diff := cmp.Diff(map[string]Latency{"small": {Mean: 2, P90: 2}}, rec.toRunning(t0.Add(time.Hour), false)); diff != "" {
		t.Errorf("time to running (-want +got):\n%s", diff)
	}
}

func TestJobRecordCutOffCountsJobsNotStartedAsStartingThen(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rec := newJobRecord(3)
	for i, name := range []string{"a", "b", "c"} {
		rec.creating(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{checker.LabelClass: "small"}}}, t0.Add(time.Duration(i)*time.Second))
	}
	rec.observePod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{batchv1.JobNameLabel: "a"}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, t0.Add(4*time.Second))
	end := t0.Add(10 * time.Second)
	// a started 4 s after it was created; b and c not yet, 9 and 8 s
	// after, at the cut-off.
	if diff := cmp.Diff(map[string]Latency{"small": {Mean: 7, P90: 9}}, rec.toRunning(end, true)); diff != "" {
		t.Errorf("cut off: time to running (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]Latency{"small": {Mean: 4, P90: 4}}, rec.toRunning(end, false)); diff != "" {
		t.Errorf("complete: time to running (-want +got):\n%s", diff)
	}
}

func TestAgentOf(t *testing.T) {
	for ua, want := range map[string]string{
		"kueue/v0.17.0 (linux/amd64) abcdef0":                                         "kueue",
		"kube-controller-manager/v1.34.4 (linux/amd64) kubernetes/abc/job-controller": "kube-controller-manager",
		"perf-generator": "perf-generator",
		"":               "",
	} {
		if got := AgentOf(ua); got != want {
			t.Errorf("AgentOf(%q) = %q, want %q", ua, got, want)
		}
	}
}

func TestWritesByAgent(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	lines := []string{
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"kueue/v0.17.0 (linux/amd64) x","objectRef":{"resource":"workloads","subresource":"status"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"kueue/v0.17.0 (linux/amd64) x","objectRef":{"resource":"workloads","subresource":"status"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseComplete","verb":"update","userAgent":"koord-queue-controllers/v0.0.0","objectRef":{"resource":"jobs"},"responseStatus":{"code":409}}`,
		`{"stage":"ResponseComplete","verb":"create","userAgent":"kube-scheduler/v1.34.4","objectRef":{"resource":"pods","subresource":"binding"},"responseStatus":{"code":201}}`,
		`{"stage":"ResponseComplete","verb":"create","userAgent":"kube-scheduler/v1.34.4"}`,
		`{"stage":"Panic","verb":"create","userAgent":"kwok/v0.8.0","objectRef":{"resource":"pods"}}`,
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := WritesByAgent(log)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]int{
		"kueue":                   {"patch workloads/status 200": 2},
		"koord-queue-controllers": {"update jobs 409": 1},
		"kube-scheduler":          {"create pods/binding 201": 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WritesByAgent (-want +got):\n%s", diff)
	}
}

// TestEventsOf: events of QueueUnits and Workloads, and of Jobs from
// anyone but the Job controller, are counted as often as they happened,
// by sender, kind and reason; the cluster's other events are not.
func TestEventsOf(t *testing.T) {
	event := func(sender, reporting, kind, reason string, count int32, series int32) corev1.Event {
		e := corev1.Event{Source: corev1.EventSource{Component: sender}, ReportingController: reporting,
			InvolvedObject: corev1.ObjectReference{Kind: kind}, Reason: reason, Count: count}
		if series > 0 {
			e.Series = &corev1.EventSeries{Count: series}
		}
		return e
	}
	got := EventsOf([]corev1.Event{
		event("koord-queue", "", "QueueUnit", "Preempted", 1, 0),
		event("koord-queue", "", "QueueUnit", "Preempted", 3, 0),
		event("", "kueue-admission", "Workload", "Preempted", 0, 0),
		event("", "kueue-admission", "Workload", "Pending", 1, 5),
		event("koord-queue-controllers", "", "Job", "Suspended", 2, 0),
		event("job-controller", "", "Job", "Completed", 1, 0),
		event("default-scheduler", "", "Pod", "Scheduled", 1, 0),
	})
	want := map[string]int{
		"koord-queue QueueUnit Preempted":       4,
		"kueue-admission Workload Preempted":    1,
		"kueue-admission Workload Pending":      5,
		"koord-queue-controllers Job Suspended": 2,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventsOf (-want +got):\n%s", diff)
	}
	ms := []Measurement{
		{System: KoordQueue, Jobs: 10, Events: map[string]int{"koord-queue QueueUnit Preempted": 4, "x Job Suspended": 1}},
		{System: KoordQueue, Jobs: 20, Events: map[string]int{"koord-queue QueueUnit Preempted": 2}},
		{System: KoordQueue, Jobs: 10, Error: "failed", Events: map[string]int{"koord-queue QueueUnit Preempted": 100}},
		{System: Kueue, Jobs: 10, Events: map[string]int{"kueue-admission Workload Preempted": 100}},
	}
	wantRows := []KindPerJob{{Kind: "koord-queue QueueUnit Preempted", PerJob: 0.25}, {Kind: "x Job Suspended", PerJob: 0.05}}
	if diff := cmp.Diff(wantRows, EventsPerJob(ms, KoordQueue)); diff != "" {
		t.Errorf("EventsPerJob (-want +got):\n%s", diff)
	}
}

func jobsMeasurement(system string, pair int, wall float64, writes map[string]map[string]int) Measurement {
	return Measurement{
		System: system, Pair: pair, Position: 1, WallSeconds: wall, Jobs: 10, Evictions: 1,
		ToRunning:  map[string]Latency{"small": {Mean: wall / 10, P90: wall / 5}},
		CPUSeconds: wall / 2, Cores: 0.5, PeakRSSMiB: 100, ServerCPUSeconds: 30, NodeCPUSeconds: 20,
		WritesByAgent: writes,
	}
}

func TestBuildJobsTable(t *testing.T) {
	ms := []Measurement{
		jobsMeasurement(Kueue, 1, 100, map[string]map[string]int{
			"kueue":                   {"create workloads 201": 10, "patch workloads/status 200": 20},
			"kube-controller-manager": {"create pods 201": 10, "update jobs/status 200": 20},
			"kube-scheduler":          {"create pods/binding 201": 10},
			"perf-generator":          {"create jobs 201": 10},
		}),
		jobsMeasurement(KoordQueue, 1, 50, map[string]map[string]int{
			"koord-queue":             {"patch queueunits/status 200": 10},
			"koord-queue-controllers": {"create queueunits 201": 10, "update jobs 200": 10},
			"kube-controller-manager": {"create pods 201": 10, "update jobs/status 200": 20},
			"kwok":                    {"patch pods/status 200": 5},
		}),
	}
	tab := BuildJobsTable(ms)
	got := map[string][2]float64{}
	var names []string
	for _, r := range tab.Rows {
		names = append(names, r.Name)
		got[r.Name] = [2]float64{r.KueueMedian, r.KoordQueueMedian}
	}
	wantNames := []string{
		"wall: first Job created to last complete (s)",
		"mean time to pods running, small (s)",
		"p90 time to pods running, small (s)",
		"CPU (s), the system's components together",
		"cores used (CPU s / wall)",
		"peak RSS (MiB), the components' peaks summed",
		"API writes per Job, the system's components",
		"API writes per Job, kube-controller-manager",
		"API writes per Job, kube-scheduler",
		"API writes per Job, kwok",
		"API writes per Job, the system's and the cluster's components",
		"Jobs complete",
		"evictions (Jobs suspended again)",
		"kube-apiserver + etcd CPU (s)",
		"kube-controller-manager + kube-scheduler + kwok CPU (s)",
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}
	want := map[string][2]float64{
		"wall: first Job created to last complete (s)":                  {100, 50},
		"mean time to pods running, small (s)":                          {10, 5},
		"p90 time to pods running, small (s)":                           {20, 10},
		"API writes per Job, the system's components":                   {3, 3},
		"API writes per Job, kube-scheduler":                            {1, 0},
		"API writes per Job, kwok":                                      {0, 0.5},
		"API writes per Job, the system's and the cluster's components": {7, 6.5},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, got[name], cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("%s: Kueue, koord-queue (-want +got):\n%s", name, diff)
		}
	}
}

func TestBuildJobsTableBoundsWhatACutOffRunReached(t *testing.T) {
	kueue := jobsMeasurement(Kueue, 1, 200, map[string]map[string]int{"kueue": {"create workloads 201": 5, "patch workloads/status 200": 15}})
	// Cut off with 5 of its 10 Jobs complete: its writes are over the 10.
	kueue.CutOff, kueue.Jobs, kueue.JobsInShape = true, 5, 10
	koordQueue := jobsMeasurement(KoordQueue, 1, 50, map[string]map[string]int{"koord-queue": {"patch queueunits/status 200": 10}})
	koordQueue.JobsInShape = 10
	tab := BuildJobsTable([]Measurement{kueue, koordQueue})
	md := tab.Markdown()
	for _, want := range []string{
		"| wall: first Job created to last complete (s) | ≥ 200.0 | 50.0 | ≤ 0.25 |",
		"| API writes per Job, the system's components | ≥ 2.00 | 1.00 | ≤ 0.50 |",
		"| Jobs complete | ≥ 5 | 10 | ≤ 2.00 |",
		// A cut-off run's cores bound nothing.
		"| cores used (CPU s / wall) | — | 0.500 | — |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}

	// Both cut off: no ratio.
	koordQueue.CutOff = true
	md = BuildJobsTable([]Measurement{kueue, koordQueue}).Markdown()
	if want := "| wall: first Job created to last complete (s) | ≥ 200.0 | ≥ 50.0 | — |"; !strings.Contains(md, want) {
		t.Errorf("Markdown lacks %q:\n%s", want, md)
	}
}

func TestRatioBound(t *testing.T) {
	for _, tc := range []struct {
		kueueAtLeast, koordQueueAtLeast bool
		bound                           string
		ok                              bool
	}{
		{false, false, "", true},
		// koord-queue's whole over Kueue's lower bound: at most the ratio.
		{true, false, "≤ ", true},
		{false, true, "≥ ", true},
		{true, true, "", false},
	} {
		bound, ok := ratioBound(tc.kueueAtLeast, tc.koordQueueAtLeast)
		if bound != tc.bound || ok != tc.ok {
			t.Errorf("ratioBound(%v, %v) = %q, %v; want %q, %v", tc.kueueAtLeast, tc.koordQueueAtLeast, bound, ok, tc.bound, tc.ok)
		}
	}
}

func TestWritesPerJobByKind(t *testing.T) {
	ms := []Measurement{
		jobsMeasurement(KoordQueue, 1, 50, map[string]map[string]int{
			"koord-queue":             {"patch queueunits/status 200": 10},
			"koord-queue-controllers": {"create queueunits 201": 10, "update jobs 200": 20},
			"kube-scheduler":          {"create pods/binding 201": 10},
			"perf-generator":          {"create jobs 201": 10},
		}),
		jobsMeasurement(KoordQueue, 2, 50, map[string]map[string]int{
			"koord-queue":             {"patch queueunits/status 200": 20},
			"koord-queue-controllers": {"create queueunits 201": 10, "update jobs 200": 10},
			"kube-scheduler":          {"create pods/binding 201": 10},
		}),
		{System: KoordQueue, Pair: 3, Error: "failed", Jobs: 10, WritesByAgent: map[string]map[string]int{"koord-queue": {"patch queueunits/status 200": 1000}}},
		jobsMeasurement(Kueue, 1, 50, map[string]map[string]int{"kueue": {"create workloads 201": 10}}),
	}
	want := []KindPerJob{
		{"koord-queue", "patch queueunits/status 200", 1.5},
		{"koord-queue-controllers", "update jobs 200", 1.5},
		{"koord-queue-controllers", "create queueunits 201", 1},
		{"kube-scheduler", "create pods/binding 201", 1},
	}
	if diff := cmp.Diff(want, WritesPerJobByKind(ms, KoordQueue)); diff != "" {
		t.Errorf("WritesPerJobByKind (-want +got):\n%s", diff)
	}
}
