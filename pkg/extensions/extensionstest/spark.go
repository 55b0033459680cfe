package extensionstest

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	sparkv1beta2 "github.com/koord-queue/koord-queue/pkg/extensions/spark/v1beta2"
)

// SparkApplicationWrapper builds a SparkApplication.
type SparkApplicationWrapper struct{ sparkv1beta2.SparkApplication }

// MakeSparkApplication starts a suspended Scala application in cluster mode
// with no sizes set: Spark's defaults apply.
func MakeSparkApplication(name, namespace string) *SparkApplicationWrapper {
	return &SparkApplicationWrapper{sparkv1beta2.SparkApplication{
		ObjectMeta: meta(name, namespace),
		Spec: sparkv1beta2.SparkApplicationSpec{
			Type:         sparkv1beta2.SparkApplicationTypeScala,
			SparkVersion: "3.5.3",
			Mode:         sparkv1beta2.DeployModeCluster,
			Suspend:      ptr.To(true),
		},
	}}
}

// Quota labels the application with a quota.
func (w *SparkApplicationWrapper) Quota(q string) *SparkApplicationWrapper {
	quotaLabel(&w.ObjectMeta, q)
	return w
}

// Suspend sets spec.suspend.
func (w *SparkApplicationWrapper) Suspend(s bool) *SparkApplicationWrapper {
	w.Spec.Suspend = ptr.To(s)
	return w
}

// SuspendAnnotation holds the application by the scheduling.x-k8s.io/suspend
// annotation instead of spec.suspend, as Koord-Queue's patched operators
// expect.
func (w *SparkApplicationWrapper) SuspendAnnotation() *SparkApplicationWrapper {
	w.Spec.Suspend = nil
	setAnnotation(&w.ObjectMeta, schedulingv1alpha1.AnnotationSuspend, "true")
	return w
}

// Type sets the application's language.
func (w *SparkApplicationWrapper) Type(t sparkv1beta2.SparkApplicationType) *SparkApplicationWrapper {
	w.Spec.Type = t
	return w
}

// Mode sets the deploy mode.
func (w *SparkApplicationWrapper) Mode(m sparkv1beta2.DeployMode) *SparkApplicationWrapper {
	w.Spec.Mode = m
	return w
}

// Driver sets the driver's cores and memory ("" leaves memory unset).
func (w *SparkApplicationWrapper) Driver(cores int32, memory string) *SparkApplicationWrapper {
	setSizes(&w.Spec.Driver.SparkPodSpec, cores, memory)
	return w
}

// Executors sets the executors' count, cores and memory ("" leaves memory
// unset).
func (w *SparkApplicationWrapper) Executors(instances, cores int32, memory string) *SparkApplicationWrapper {
	w.Spec.Executor.Instances = ptr.To(instances)
	setSizes(&w.Spec.Executor.SparkPodSpec, cores, memory)
	return w
}

func setSizes(s *sparkv1beta2.SparkPodSpec, cores int32, memory string) {
	s.Cores = ptr.To(intstr.FromInt32(cores))
	if memory != "" {
		s.Memory = ptr.To(memory)
	}
}

// PriorityClass sets batchSchedulerOptions.priorityClassName.
func (w *SparkApplicationWrapper) PriorityClass(name string) *SparkApplicationWrapper {
	w.Spec.BatchSchedulerOptions = &sparkv1beta2.BatchSchedulerConfiguration{PriorityClassName: ptr.To(name)}
	return w
}

// State sets the application's state.
func (w *SparkApplicationWrapper) State(s sparkv1beta2.ApplicationStateType) *SparkApplicationWrapper {
	w.Status.AppState.State = s
	return w
}

// Obj returns the application.
func (w *SparkApplicationWrapper) Obj() *sparkv1beta2.SparkApplication { return &w.SparkApplication }
