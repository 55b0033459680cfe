// Package spark queues the kubeflow spark-operator's SparkApplications
// (sparkoperator.k8s.io/v1beta2). An application is held back two ways, as
// Koord-Queue does it: spec.suspend, which the spark-operator honours since
// kubeflow/spark-operator#2387, and the annotation
// scheduling.x-k8s.io/suspend: "true", for operators patched to honour it;
// the queue keeps both in step when the application uses the annotation.
//
// Its pod sets are "driver" (one pod, in cluster mode) and "executor" (its
// executors at start), each with the pod the operator and Spark make, read
// from the application without changing it (pods.go): the role's pod
// template, Spark's container sized by Spark, and the init containers,
// sidecars and gpu the operator's webhook adds. Spark's container requests
// cpu: coreRequest, else cores, else 1; memory: memory (default 1g) plus
// memoryOverhead, whose default is Spark's: the overhead factor times
// memory, at least 384 MiB (overheadFactor), and for executors their
// off-heap and PySpark memory; and the custom resources of
// spark.<role>.resource.*. Spark properties in sparkConf stand in for the
// fields they mirror. The executors at start are executor.instances
// (default 1) or, with dynamic allocation, the largest of its initial and
// minimum executors and instances, at least one; executors dynamic
// allocation adds later are not queued.
//
// The templates of the pod sets are made up: admission checks' pod set
// updates do not reach a Spark application's pods. Its node pool's affinity
// does, through the driver's and the executors' affinity and templates
// (EditAffinities).
package spark

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	sparkv1beta2 "github.com/koord-queue/koord-queue/pkg/extensions/spark/v1beta2"
)

// Pod set names, as Spark's spark-role label names its pods.
const (
	DriverPodSet   = "driver"
	ExecutorPodSet = "executor"
)

// labelRole is the label Spark puts on its pods: driver or executor.
const labelRole = "spark-role"

// Spark's defaults (Spark 3, and the spark-operator's defaulting).
const (
	defaultCores          = 1
	defaultMemory         = "1g"
	defaultInstances      = 1
	minMemoryOverheadMiB  = 384
	jvmOverheadFactor     = 0.1
	nonJVMOverheadFactor  = 0.4
	driverPodNameSuffix   = "-driver"
	driverPodNameConf     = "spark.kubernetes.driver.pod.name"
	kubernetesFactorConf  = "spark.kubernetes.memoryOverheadFactor"
	dynamicAllocationConf = "spark.dynamicAllocation.enabled"
	maxExecutorsConf      = "spark.dynamicAllocation.maxExecutors"
	offHeapEnabledConf    = "spark.memory.offHeap.enabled"
	offHeapSizeConf       = "spark.memory.offHeap.size"
	pysparkMemoryConf     = "spark.executor.pyspark.memory"
)

// Integration is the SparkApplication extension, enabled by the name
// "sparkapplication". An application's unit is named after it with the
// suffix "-spark-qu", as Koord-Queue names it.
func Integration() framework.Integration {
	return framework.Integration{
		Name:        "sparkapplication",
		GVK:         sparkv1beta2.GroupVersion.WithKind("SparkApplication"),
		UnitSuffix:  "-spark-qu",
		NewJob:      func() framework.GenericJob { return &Application{} },
		AddToScheme: sparkv1beta2.AddToScheme,
		PodSetOf:    func(p *corev1.Pod) string { return p.Labels[labelRole] },
		PodOwners: func(o client.Object) []framework.PodOwner {
			return (*Application)(o.(*sparkv1beta2.SparkApplication)).podOwners()
		},
	}
}

// Application is a SparkApplication as the queue sees it.
type Application sparkv1beta2.SparkApplication

var (
	_ framework.GenericJob              = (*Application)(nil)
	_ framework.JobWithPriority         = (*Application)(nil)
	_ framework.JobWithMadeUpAffinity   = (*Application)(nil)
	_ framework.JobWithPartialAdmission = (*Application)(nil)
	_ framework.JobWithWarnings         = (*Application)(nil)
)

// Object is the SparkApplication.
func (a *Application) Object() client.Object { return (*sparkv1beta2.SparkApplication)(a) }

// IsSuspended reports spec.suspend or the suspend annotation.
func (a *Application) IsSuspended() bool {
	return ptr.Deref(a.Spec.Suspend, false) || a.Annotations[schedulingv1alpha1.AnnotationSuspend] == "true"
}

// Suspend sets spec.suspend, and the annotation when the application uses it.
func (a *Application) Suspend() { a.setSuspend(true) }

// Resume clears spec.suspend, and the annotation when the application uses
// it. An application with dynamic allocation and no maxExecutors is given
// the executors it was queued for as its maximum (see executors).
func (a *Application) Resume() {
	a.setSuspend(false)
	if e, err := a.executors(); err == nil && e.unbounded {
		a.setMaxExecutors(e.count)
	}
}

func (a *Application) setSuspend(s bool) {
	a.Spec.Suspend = ptr.To(s)
	if _, ok := a.Annotations[schedulingv1alpha1.AnnotationSuspend]; ok {
		a.Annotations[schedulingv1alpha1.AnnotationSuspend] = strconv.FormatBool(s)
	}
}

// clusterMode reports whether the driver runs in a pod of its own.
func (a *Application) clusterMode() bool {
	return a.Spec.Mode == "" || a.Spec.Mode == sparkv1beta2.DeployModeCluster
}

// PodSets are the driver, in cluster mode, and the executors at start,
// each with the pod the operator and Spark make for it (podSpec).
func (a *Application) PodSets() ([]framework.PodSet, error) {
	var sets []framework.PodSet
	if a.clusterMode() {
		spec, err := a.podSpec(a.driver())
		if err != nil {
			return nil, fmt.Errorf("spec.driver: %w", err)
		}
		sets = append(sets, madeUp(DriverPodSet, 1, spec))
	}
	spec, err := a.podSpec(a.executor())
	if err != nil {
		return nil, fmt.Errorf("spec.executor: %w", err)
	}
	e, err := a.executors()
	if err != nil {
		return nil, err
	}
	executors := madeUp(ExecutorPodSet, e.count, spec)
	if e.start < e.count {
		executors.MinCount = ptr.To(e.start)
	}
	return append(sets, executors), nil
}

// EditAffinities edits the affinity of the driver's or the executors' pods
// where the spark-operator takes it from: spec.driver.affinity (or the
// executor's), which its webhook sets on the pods it mutates (those of an
// application without a template, or of Spark 2), replacing theirs, and the
// template's, from which Spark 3 makes the pods otherwise. A template that
// is not a pod template is reported: its pods' affinity cannot be read.
func (a *Application) EditAffinities(podSet string, edit func(string, *corev1.Affinity) *corev1.Affinity) []string {
	var spec *sparkv1beta2.SparkPodSpec
	switch podSet {
	case DriverPodSet:
		spec = &a.Spec.Driver.SparkPodSpec
	case ExecutorPodSet:
		spec = &a.Spec.Executor.SparkPodSpec
	default:
		return nil
	}
	field := "spec." + podSet
	spec.Affinity = edit(field+".affinity", spec.Affinity)
	if spec.Template == nil || len(spec.Template.Raw) == 0 {
		return nil
	}
	if err := editTemplateAffinity(spec.Template, field+".template.spec.affinity", edit); err != nil {
		return []string{fmt.Sprintf("%s.template (not a pod template: %v)", field, err)}
	}
	return nil
}

// editTemplateAffinity edits the affinity of a template kept as written. It
// is read as the operator reads it (a corev1.PodTemplateSpec, whose keys Go
// matches in any case); a changed template is written back whole, in that
// form.
func editTemplateAffinity(raw *runtime.RawExtension, path string, edit func(string, *corev1.Affinity) *corev1.Affinity) error {
	var t corev1.PodTemplateSpec
	if err := json.Unmarshal(raw.Raw, &t); err != nil {
		return err
	}
	was := t.Spec.Affinity
	t.Spec.Affinity = edit(path, was.DeepCopy())
	if equality.Semantic.DeepEqual(t.Spec.Affinity, was) {
		return nil
	}
	data, err := json.Marshal(&t)
	if err != nil {
		return err
	}
	raw.Raw = data
	return nil
}

// madeUp is a pod set of count pods of spec, which the application does not
// hold: pod set updates reach none of its pods.
func madeUp(name string, count int32, spec corev1.PodSpec) framework.PodSet {
	return framework.PodSet{Name: name, Count: count, Template: &corev1.PodTemplateSpec{Spec: spec}, MadeUp: true}
}

// cpuRequest is coreRequest, else cores, else 1, each from its field or
// else from the Spark property it mirrors. (Koord-Queue falls back to
// coreLimit; Spark requests the cores, and Koordinator charges the request.)
func (a *Application) cpuRequest(role string, spec *sparkv1beta2.SparkPodSpec, coreRequest *string) (resource.Quantity, error) {
	raw, field := ptr.Deref(coreRequest, ""), "coreRequest"
	if raw == "" {
		raw, field = a.Spec.SparkConf["spark.kubernetes."+role+".request.cores"], "sparkConf spark.kubernetes."+role+".request.cores"
	}
	if raw == "" && spec.Cores != nil {
		raw, field = spec.Cores.String(), "cores"
		if spec.Cores.Type == intstr.Int && spec.Cores.IntVal < 1 {
			return resource.Quantity{}, fmt.Errorf("cores %d: want at least 1", spec.Cores.IntVal)
		}
	}
	if raw == "" {
		raw, field = a.Spec.SparkConf["spark."+role+".cores"], "sparkConf spark."+role+".cores"
	}
	if raw == "" {
		return *resource.NewQuantity(defaultCores, resource.DecimalSI), nil
	}
	q, err := resource.ParseQuantity(raw)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("%s %q is not a CPU quantity such as 1 or 500m: %w", field, raw, err)
	}
	if q.Sign() <= 0 {
		return resource.Quantity{}, fmt.Errorf("%s %q: want more than 0", field, raw)
	}
	return q, nil
}

// memoryRequest is memory plus its overhead, in whole MiB as Spark sizes
// the pod, and for an executor its off-heap and PySpark memory.
func (a *Application) memoryRequest(role string, spec *sparkv1beta2.SparkPodSpec) (resource.Quantity, error) {
	raw, field := ptr.Deref(spec.Memory, ""), "memory"
	if raw == "" {
		raw, field = a.Spec.SparkConf["spark."+role+".memory"], "sparkConf spark."+role+".memory"
	}
	if raw == "" {
		raw = defaultMemory
	}
	memory, err := mebibytes(raw)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("%s: %w", field, err)
	}
	overhead, err := a.memoryOverhead(role, spec, memory)
	if err != nil {
		return resource.Quantity{}, err
	}
	total := memory + overhead
	if role == "executor" {
		extra, err := a.executorMemoryBeyondOverhead()
		if err != nil {
			return resource.Quantity{}, err
		}
		total += extra
	}
	return *resource.NewQuantity(total<<20, resource.BinarySI), nil
}

// executorMemoryBeyondOverhead is what Spark adds to an executor's pod
// besides memory and overhead: its off-heap memory, when
// spark.memory.offHeap.enabled (spark.memory.offHeap.size, in bytes
// without a unit), and a Python application's spark.executor.pyspark.memory.
func (a *Application) executorMemoryBeyondOverhead() (int64, error) {
	var out int64
	if on, _ := strconv.ParseBool(a.Spec.SparkConf[offHeapEnabledConf]); on {
		if raw := a.Spec.SparkConf[offHeapSizeConf]; raw != "" {
			n, err := sizeMiB(raw, 1)
			if err != nil {
				return 0, fmt.Errorf("sparkConf %s: %w", offHeapSizeConf, err)
			}
			out += n
		}
	}
	if a.Spec.Type == sparkv1beta2.SparkApplicationTypePython {
		if raw := a.Spec.SparkConf[pysparkMemoryConf]; raw != "" {
			n, err := mebibytes(raw)
			if err != nil {
				return 0, fmt.Errorf("sparkConf %s: %w", pysparkMemoryConf, err)
			}
			out += n
		}
	}
	return out, nil
}

// memoryOverhead is memoryOverhead, else the overhead factor times memory,
// at least 384 MiB.
func (a *Application) memoryOverhead(role string, spec *sparkv1beta2.SparkPodSpec, memoryMiB int64) (int64, error) {
	raw, field := ptr.Deref(spec.MemoryOverhead, ""), "memoryOverhead"
	if raw == "" {
		raw, field = a.Spec.SparkConf["spark."+role+".memoryOverhead"], "sparkConf spark."+role+".memoryOverhead"
	}
	if raw != "" {
		mib, err := mebibytes(raw)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", field, err)
		}
		return mib, nil
	}
	factor, err := a.overheadFactor(role)
	if err != nil {
		return 0, err
	}
	return max(int64(factor*float64(memoryMiB)), minMemoryOverheadMiB), nil
}

// overheadFactor is the role's memory overhead factor, as Spark 3.3 and
// later choose it: its Spark property, else the application's default:
// spark.kubernetes.memoryOverheadFactor (which sparkConf sets over
// spec.memoryOverheadFactor: the operator passes the field first), else 0.1
// for a JVM application and 0.4 for Python and R. The driver hands the
// default to the executors.
func (a *Application) overheadFactor(role string) (float64, error) {
	for _, c := range []struct{ field, raw string }{
		{"sparkConf spark." + role + ".memoryOverheadFactor", a.Spec.SparkConf["spark."+role+".memoryOverheadFactor"]},
		{"sparkConf " + kubernetesFactorConf, a.Spec.SparkConf[kubernetesFactorConf]},
		{"memoryOverheadFactor", ptr.Deref(a.Spec.MemoryOverheadFactor, "")},
	} {
		if c.raw == "" {
			continue
		}
		f, err := strconv.ParseFloat(c.raw, 64)
		if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%s %q is not a factor such as 0.1", c.field, c.raw)
		}
		return f, nil
	}
	switch a.Spec.Type {
	case sparkv1beta2.SparkApplicationTypePython, sparkv1beta2.SparkApplicationTypeR:
		return nonJVMOverheadFactor, nil
	}
	return jvmOverheadFactor, nil
}

// executorCount is how many executors an application asks for.
type executorCount struct {
	// count is the most it runs at once: executor.instances, or with
	// dynamic allocation maxExecutors.
	count int32
	// start is how many dynamic allocation starts with: the most of its
	// initial and minimum executors and instances, at least one (count
	// without dynamic allocation). Its unit may be admitted with as few
	// (partial admission) and the application released with maxExecutors
	// lowered to what was admitted (RunWithCounts).
	start int32
	// unbounded is dynamic allocation without maxExecutors: count is start,
	// and the application is released with maxExecutors set to it (Resume),
	// since what it could grow to is not known.
	unbounded bool
}

// executors is how many executors the application asks for. With dynamic
// allocation its unit asks for its maximum, which a partial admission may
// lower down to what it starts with, as the apache/spark-kubernetes-operator's
// Kueue integration reserves it: an executor added later would otherwise
// run on quota nobody was charged.
func (a *Application) executors() (executorCount, error) {
	instances, err := a.count(a.Spec.Executor.Instances, "executor.instances", "spark.executor.instances")
	if err != nil {
		return executorCount{}, err
	}
	if !a.dynamicAllocation() {
		n := ptr.Deref(instances, defaultInstances)
		return executorCount{count: n, start: n}, nil
	}
	var initial, minimum, maximum *int32
	if d := a.Spec.DynamicAllocation; d != nil && d.Enabled {
		// The operator passes these only when it enables dynamic
		// allocation, after sparkConf.
		initial, minimum, maximum = d.InitialExecutors, d.MinExecutors, d.MaxExecutors
	}
	if initial, err = a.count(initial, "dynamicAllocation.initialExecutors", "spark.dynamicAllocation.initialExecutors"); err != nil {
		return executorCount{}, err
	}
	if minimum, err = a.count(minimum, "dynamicAllocation.minExecutors", "spark.dynamicAllocation.minExecutors"); err != nil {
		return executorCount{}, err
	}
	if maximum, err = a.count(maximum, "dynamicAllocation.maxExecutors", maxExecutorsConf); err != nil {
		return executorCount{}, err
	}
	if original, ok := a.originalMaxExecutors(); ok {
		maximum = &original // lowered by a partial admission
	}
	start := max(ptr.Deref(initial, 0), ptr.Deref(minimum, 0), ptr.Deref(instances, 0), 1)
	switch {
	case maximum == nil:
		return executorCount{count: start, start: start, unbounded: true}, nil
	case *maximum == 0:
		return executorCount{}, fmt.Errorf("dynamicAllocation.maxExecutors 0: Spark refuses it; give at least 1")
	case *maximum < start:
		return executorCount{}, fmt.Errorf("dynamic allocation would start with %d executors, more than maxExecutors %d: Spark refuses it", start, *maximum)
	}
	return executorCount{count: *maximum, start: start}, nil
}

// count is a field's executor count, else the Spark property's; nil when
// neither is set.
func (a *Application) count(field *int32, fieldName, conf string) (*int32, error) {
	if field != nil {
		if *field < 0 {
			return nil, fmt.Errorf("%s %d: want at least 0", fieldName, *field)
		}
		return field, nil
	}
	raw, ok := a.Spec.SparkConf[conf]
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("sparkConf %s %q: want a whole number of executors", conf, raw)
	}
	return ptr.To(int32(n)), nil
}

// dynamicAllocation reports whether the application may change its
// executors: spec.dynamicAllocation.enabled, else the Spark property (the
// operator passes sparkConf, and the field only when it is enabled).
func (a *Application) dynamicAllocation() bool {
	if d := a.Spec.DynamicAllocation; d != nil && d.Enabled {
		return true
	}
	on, _ := strconv.ParseBool(a.Spec.SparkConf[dynamicAllocationConf])
	return on
}

// setMaxExecutors sets maxExecutors where the operator reads it first: the
// field when the field enables dynamic allocation, else sparkConf.
func (a *Application) setMaxExecutors(n int32) {
	if d := a.Spec.DynamicAllocation; d != nil && d.Enabled {
		d.MaxExecutors = ptr.To(n)
		return
	}
	if a.Spec.SparkConf == nil {
		a.Spec.SparkConf = map[string]string{}
	}
	a.Spec.SparkConf[maxExecutorsConf] = strconv.Itoa(int(n))
}

// RunWithCounts lowers maxExecutors to the executors admitted, keeping the
// application's own in koord-queue/original-max-executors (once: one
// lowered already keeps the first).
func (a *Application) RunWithCounts(counts map[string]int32) {
	n, ok := counts[ExecutorPodSet]
	if !ok {
		return
	}
	if _, lowered := a.originalMaxExecutors(); !lowered {
		e, err := a.executors()
		if err != nil || e.unbounded {
			return // not admitted partially: its unit has no minimum
		}
		if a.Annotations == nil {
			a.Annotations = map[string]string{}
		}
		a.Annotations[schedulingv1alpha1.AnnotationOriginalMaxExecutors] = strconv.Itoa(int(e.count))
	}
	a.setMaxExecutors(n)
}

// RestoreCounts puts back the maxExecutors RunWithCounts lowered.
func (a *Application) RestoreCounts() bool {
	if _, ok := a.Annotations[schedulingv1alpha1.AnnotationOriginalMaxExecutors]; !ok {
		return false
	}
	n, ok := a.originalMaxExecutors()
	delete(a.Annotations, schedulingv1alpha1.AnnotationOriginalMaxExecutors)
	if ok {
		a.setMaxExecutors(n)
	}
	return true
}

// originalMaxExecutors is the maxExecutors a partial admission lowered, if
// it did.
func (a *Application) originalMaxExecutors() (int32, bool) {
	raw, ok := a.Annotations[schedulingv1alpha1.AnnotationOriginalMaxExecutors]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 1 {
		return 0, false // not ours: the spec says what it asks for
	}
	return int32(n), true
}

// ReasonUnboundedExecutors is the warning of dynamic allocation without
// maxExecutors.
const ReasonUnboundedExecutors = "UnboundedDynamicAllocation"

// Warnings warns of dynamic allocation without maxExecutors: the
// application is released with the executors it starts with as its
// maximum.
func (a *Application) Warnings() []framework.Warning {
	e, err := a.executors()
	if err != nil || !e.unbounded {
		return nil
	}
	return []framework.Warning{{Reason: ReasonUnboundedExecutors, Message: fmt.Sprintf(
		"Dynamic allocation without maxExecutors: the application is queued for the %d executors it starts with and released with maxExecutors %d. "+
			"Set spec.dynamicAllocation.maxExecutors to let it grow: it is then queued for that many, and may start with fewer when its quota has less room", e.count, e.count)}}
}

// PriorityClass is batchSchedulerOptions.priorityClassName, else the
// driver's priority class.
func (a *Application) PriorityClass() (name, field string) {
	if o := a.Spec.BatchSchedulerOptions; o != nil && ptr.Deref(o.PriorityClassName, "") != "" {
		return *o.PriorityClassName, "spec.batchSchedulerOptions.priorityClassName"
	}
	return ptr.Deref(a.Spec.Driver.PriorityClassName, ""), "spec.driver.priorityClassName"
}

// Finished reports the COMPLETED and FAILED states, which the operator
// reaches only when it will not run the application again.
func (a *Application) Finished() (string, bool, bool) {
	s := a.Status.AppState
	switch s.State {
	case sparkv1beta2.ApplicationStateCompleted:
		return "the Spark application completed", true, true
	case sparkv1beta2.ApplicationStateFailed:
		msg := s.ErrorMessage
		if msg == "" {
			msg = "the Spark application failed"
		}
		return msg, false, true
	}
	return "", false, false
}

// Pods counts the driver from the application's state and the executors
// from their states.
func (a *Application) Pods() map[string]framework.PodCount {
	out := map[string]framework.PodCount{}
	if a.clusterMode() {
		var d framework.PodCount
		switch a.Status.AppState.State {
		case sparkv1beta2.ApplicationStateRunning:
			d.Running = 1
		case sparkv1beta2.ApplicationStateSubmitted, sparkv1beta2.ApplicationStatePendingRerun, sparkv1beta2.ApplicationStateResuming:
			if !a.IsSuspended() {
				d.Pending = 1
			}
		}
		out[DriverPodSet] = d
	}
	var e framework.PodCount
	if stopped(a.Status.AppState.State) {
		// The operator no longer follows the executors of a stopped
		// application, so their states may be stale; pods that are still
		// on nodes are counted from the pods themselves.
		out[ExecutorPodSet] = e
		return out
	}
	for _, s := range a.Status.ExecutorState {
		switch s {
		case sparkv1beta2.ExecutorStateRunning:
			e.Running++
		case sparkv1beta2.ExecutorStatePending:
			e.Pending++
		}
	}
	out[ExecutorPodSet] = e
	return out
}

// stopped reports the states in which the operator runs nothing of the
// application: not yet submitted, suspended, or over.
func stopped(s sparkv1beta2.ApplicationStateType) bool {
	switch s {
	case sparkv1beta2.ApplicationStateNew, sparkv1beta2.ApplicationStateSuspended, sparkv1beta2.ApplicationStateCompleted,
		sparkv1beta2.ApplicationStateFailed, sparkv1beta2.ApplicationStateFailedSubmission:
		return true
	}
	return false
}

// podOwners are what controls the application's pods: the application
// controls its driver (when the operator sets that owner reference), and
// the driver its executors (Spark sets it). The driver is named as the
// operator names it: <application>-driver unless Spark's property says.
func (a *Application) podOwners() []framework.PodOwner {
	driver := a.Status.DriverInfo.PodName
	if driver == "" {
		driver = a.Spec.SparkConf[driverPodNameConf]
	}
	if driver == "" {
		driver = a.Name + driverPodNameSuffix
	}
	return []framework.PodOwner{
		{Kind: sparkv1beta2.GroupVersion.WithKind("SparkApplication").GroupKind(), Name: a.Name, UID: a.UID},
		{Kind: corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), Name: driver},
	}
}
