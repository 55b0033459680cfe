package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +kubebuilder:object:root=true

// SparkApplication is a Spark application the spark-operator submits.
type SparkApplication struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SparkApplicationSpec   `json:"spec"`
	Status SparkApplicationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SparkApplicationList is a list of SparkApplications.
type SparkApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SparkApplication `json:"items"`
}

// SparkApplicationSpec is the part of the application's spec that decides
// what its pods request and whether it may run, and the fields the schema
// requires.
type SparkApplicationSpec struct {
	// Type is Java, Scala, Python or R; Python and R applications get a
	// larger default memory overhead.
	Type SparkApplicationType `json:"type"`
	// SparkVersion is the version of Spark the application uses.
	SparkVersion string `json:"sparkVersion"`
	// Mode is cluster (the default: the driver runs in a pod) or client.
	Mode DeployMode `json:"mode,omitempty"`
	// Suspend holds the application back: the operator submits nothing and
	// removes the pods of a running application (kubeflow/spark-operator#2387).
	Suspend *bool `json:"suspend,omitempty"`
	// SparkConf are Spark properties, as spark-submit's --conf takes them.
	SparkConf map[string]string `json:"sparkConf,omitempty"`
	// MemoryOverheadFactor is the share of memory added as overhead when
	// memoryOverhead is not set, such as "0.2".
	MemoryOverheadFactor *string      `json:"memoryOverheadFactor,omitempty"`
	Driver               DriverSpec   `json:"driver"`
	Executor             ExecutorSpec `json:"executor"`
	// BatchSchedulerOptions carries the application's priority class.
	BatchSchedulerOptions *BatchSchedulerConfiguration `json:"batchSchedulerOptions,omitempty"`
	// DynamicAllocation lets the application change its executors.
	DynamicAllocation *DynamicAllocation `json:"dynamicAllocation,omitempty"`
}

// SparkApplicationType is the language of an application.
type SparkApplicationType string

// The languages of applications.
const (
	SparkApplicationTypeJava   SparkApplicationType = "Java"
	SparkApplicationTypeScala  SparkApplicationType = "Scala"
	SparkApplicationTypePython SparkApplicationType = "Python"
	SparkApplicationTypeR      SparkApplicationType = "R"
)

// DeployMode is where the driver runs.
type DeployMode string

// The deploy modes.
const (
	DeployModeCluster         DeployMode = "cluster"
	DeployModeClient          DeployMode = "client"
	DeployModeInClusterClient DeployMode = "in-cluster-client"
)

// SparkPodSpec is what the driver and the executors share.
type SparkPodSpec struct {
	// Template is the pod template Spark makes the pods from (Spark 3 and
	// later), a corev1.PodTemplateSpec. The operator's schema does not
	// check it, so it is kept raw and read when the pods are sized: a
	// template that is no pod template makes its application invalid
	// rather than unreadable.
	Template *runtime.RawExtension `json:"template,omitempty"`
	// Cores is spark.driver.cores or spark.executor.cores: an integer in
	// the operator's older schema, an integer or a string in its newer one.
	Cores *intstr.IntOrString `json:"cores,omitempty"`
	// CoreLimit is the pod's CPU limit.
	CoreLimit *string `json:"coreLimit,omitempty"`
	// Memory is the JVM heap, in Spark's units ("512m", "2g").
	Memory *string `json:"memory,omitempty"`
	// MemoryOverhead is the memory added to Memory, in MiB unless a unit
	// is given.
	MemoryOverhead *string `json:"memoryOverhead,omitempty"`
	// GPU is an extended resource each pod requests.
	GPU *GPUSpec `json:"gpu,omitempty"`
	// Affinity is the pods' affinity: the operator's webhook sets it on
	// the pods it mutates, those without a Template (or of Spark 2).
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// Sidecars are containers the operator's webhook adds to each pod.
	Sidecars []corev1.Container `json:"sidecars,omitempty"`
	// InitContainers are init containers the operator's webhook adds to
	// each pod.
	InitContainers []corev1.Container `json:"initContainers,omitempty"`
}

// GPUSpec is an extended resource and how much of it a pod requests.
type GPUSpec struct {
	Name     string `json:"name"`
	Quantity int64  `json:"quantity"`
}

// DriverSpec is the driver.
type DriverSpec struct {
	SparkPodSpec `json:",inline"`
	// CoreRequest is the driver pod's CPU request, a Kubernetes quantity.
	CoreRequest *string `json:"coreRequest,omitempty"`
	// PriorityClassName is the driver pod's priority class.
	PriorityClassName *string `json:"priorityClassName,omitempty"`
}

// ExecutorSpec is the executors.
type ExecutorSpec struct {
	SparkPodSpec `json:",inline"`
	// Instances is how many executors run.
	Instances *int32 `json:"instances,omitempty"`
	// CoreRequest is each executor pod's CPU request, a Kubernetes quantity.
	CoreRequest *string `json:"coreRequest,omitempty"`
	// PriorityClassName is the executor pods' priority class.
	PriorityClassName *string `json:"priorityClassName,omitempty"`
}

// BatchSchedulerConfiguration is the application's batch scheduling.
type BatchSchedulerConfiguration struct {
	Queue             *string             `json:"queue,omitempty"`
	PriorityClassName *string             `json:"priorityClassName,omitempty"`
	Resources         corev1.ResourceList `json:"resources,omitempty"`
}

// DynamicAllocation is Spark's dynamic allocation of executors.
type DynamicAllocation struct {
	Enabled          bool   `json:"enabled,omitempty"`
	InitialExecutors *int32 `json:"initialExecutors,omitempty"`
	MinExecutors     *int32 `json:"minExecutors,omitempty"`
	MaxExecutors     *int32 `json:"maxExecutors,omitempty"`
}

// SparkApplicationStatus is what the operator reports.
type SparkApplicationStatus struct {
	DriverInfo DriverInfo       `json:"driverInfo,omitempty"`
	AppState   ApplicationState `json:"applicationState,omitempty"`
	// ExecutorState is each executor's state, by pod name.
	ExecutorState map[string]ExecutorState `json:"executorState,omitempty"`
}

// DriverInfo is the driver's pod.
type DriverInfo struct {
	PodName string `json:"podName,omitempty"`
}

// ApplicationState is the application's state and, on failure, why.
type ApplicationState struct {
	State        ApplicationStateType `json:"state"`
	ErrorMessage string               `json:"errorMessage,omitempty"`
}

// ApplicationStateType is a state of an application.
type ApplicationStateType string

// The states of an application.
const (
	ApplicationStateNew              ApplicationStateType = ""
	ApplicationStateSubmitted        ApplicationStateType = "SUBMITTED"
	ApplicationStateRunning          ApplicationStateType = "RUNNING"
	ApplicationStateCompleted        ApplicationStateType = "COMPLETED"
	ApplicationStateFailed           ApplicationStateType = "FAILED"
	ApplicationStateFailedSubmission ApplicationStateType = "SUBMISSION_FAILED"
	ApplicationStatePendingRerun     ApplicationStateType = "PENDING_RERUN"
	ApplicationStateInvalidating     ApplicationStateType = "INVALIDATING"
	ApplicationStateSucceeding       ApplicationStateType = "SUCCEEDING"
	ApplicationStateFailing          ApplicationStateType = "FAILING"
	ApplicationStateUnknown          ApplicationStateType = "UNKNOWN"
	ApplicationStateSuspending       ApplicationStateType = "SUSPENDING"
	ApplicationStateSuspended        ApplicationStateType = "SUSPENDED"
	ApplicationStateResuming         ApplicationStateType = "RESUMING"
)

// ExecutorState is the state of one executor.
type ExecutorState string

// The states of an executor.
const (
	ExecutorStatePending   ExecutorState = "PENDING"
	ExecutorStateRunning   ExecutorState = "RUNNING"
	ExecutorStateCompleted ExecutorState = "COMPLETED"
	ExecutorStateFailed    ExecutorState = "FAILED"
	ExecutorStateUnknown   ExecutorState = "UNKNOWN"
)
