package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultPodSetName is the name of a pod set that does not name itself.
const DefaultPodSetName = "main"

// MaxPodSets is how many pod sets one unit may have, as in Kueue.
const MaxPodSets = 8

// MaxResourceNames is how many kinds of resources one unit may ask for
// (the maxProperties of spec.resource and spec.request).
const MaxResourceNames = 16

// PodSet is a group of identical pods of a job: its template and how many.
// It has the JSON shape of Kueue's PodSet.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minCount) || self.minCount <= self.count",message="minCount must not exceed count"
type PodSet struct {
	// name identifies the pod set within the unit.
	// +kubebuilder:default=main
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	Name string `json:"name"`

	// template of the pods of this set.
	// +optional
	Template corev1.PodTemplateSpec `json:"template,omitempty"`

	// count is how many pods the set runs.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`

	// minCount, when set, is the fewest pods the job can start with.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinCount *int32 `json:"minCount,omitempty"`
}

// QueueUnitSpec is what a job asks of the queue.
type QueueUnitSpec struct {
	// consumerRef points at the job this unit stands for.
	// +optional
	ConsumerRef *corev1.ObjectReference `json:"consumerRef,omitempty"`

	// priority orders units inside a queue; higher goes first.
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// queue is the Queue of the unit's quota: set by the extensions when they
	// create the unit, and by the queue controller when it admits a unit
	// without it.
	// +optional
	Queue string `json:"queue,omitempty"`

	// resource is the job's total request.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, !string(self[k]).startsWith('-'))",message="resource quantities must not be negative"
	Resource corev1.ResourceList `json:"resource,omitempty"`

	// podSet lists the job's groups of identical pods.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	PodSets []PodSet `json:"podSet,omitempty"`

	// priorityClassName is the PriorityClass that gave the unit its priority.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// request is the job's total request; the same as resource at creation.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, !string(self[k]).startsWith('-'))",message="request quantities must not be negative"
	Request corev1.ResourceList `json:"request,omitempty"`

	// active false takes the unit out of the queue and evicts it if admitted;
	// nil means true.
	// +optional
	Active *bool `json:"active,omitempty"`

	// maximumExecutionTimeSeconds limits how long the unit may stay
	// admitted, counted from its current admission (its Admitted condition
	// turning True); past it the unit is deactivated (active false) and
	// evicted with reason MaximumExecutionTimeExceeded.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaximumExecutionTimeSeconds *int32 `json:"maximumExecutionTimeSeconds,omitempty"`
}

// QueueUnitPhase is where a unit is in its life.
// +kubebuilder:validation:Enum="";Enqueued;Reserved;Dequeued;Running;Succeed;Failed;SchedReady;SchedSucceed;SchedFailed;TimeoutBackoff
type QueueUnitPhase string

const (
	// Enqueued units wait for quota. An empty phase means Enqueued.
	Enqueued QueueUnitPhase = "Enqueued"
	// Reserved units hold quota and wait for their admission checks.
	Reserved QueueUnitPhase = "Reserved"
	// Dequeued units hold quota and their job is released.
	Dequeued QueueUnitPhase = "Dequeued"
	// Running units' pods run.
	Running QueueUnitPhase = "Running"
	// Succeed units' jobs finished successfully.
	Succeed QueueUnitPhase = "Succeed"
	// Failed units' jobs failed.
	Failed QueueUnitPhase = "Failed"
	// SchedReady, SchedSucceed and SchedFailed are accepted for compatibility
	// with Koord-Queue's gang-scheduling integration.
	SchedReady   QueueUnitPhase = "SchedReady"
	SchedSucceed QueueUnitPhase = "SchedSucceed"
	SchedFailed  QueueUnitPhase = "SchedFailed"
	// TimeoutBackoff units were sent back to the queue and wait for their backoff.
	TimeoutBackoff QueueUnitPhase = "TimeoutBackoff"
)

// CheckState is the state of one admission check for one unit.
// +kubebuilder:validation:Enum=Pending;Ready;Retry;Rejected
type CheckState string

const (
	// CheckStatePending: the check has not decided yet.
	CheckStatePending CheckState = "Pending"
	// CheckStateReady: the check passed.
	CheckStateReady CheckState = "Ready"
	// CheckStateRetry: the unit goes back to the queue and is tried again later.
	CheckStateRetry CheckState = "Retry"
	// CheckStateRejected: the check failed; the unit goes back to the queue.
	CheckStateRejected CheckState = "Rejected"
)

// PodSetUpdate is what an admission check asks to change in a pod set's
// template before the job is released.
type PodSetUpdate struct {
	// name of the pod set to update.
	Name string `json:"name"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxItems=8
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// AdmissionCheckState is one admission check's verdict for a unit. It has the
// JSON shape of Kueue's AdmissionCheckState.
type AdmissionCheckState struct {
	// name of the admission check.
	Name string `json:"name"`
	// state of the check.
	State CheckState `json:"state"`
	// lastTransitionTime is when the state last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// message says why the check is in its state.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`
	// podSetUpdates to apply to the job before it is released.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	PodSetUpdates []PodSetUpdate `json:"podSetUpdates,omitempty"`
}

// PodState counts the unit's pods by state.
type PodState struct {
	Running int `json:"running,omitempty"`
	Pending int `json:"pending,omitempty"`
}

// ReclaimState says how many of an admission's replicas gave their quota back.
type ReclaimState struct {
	Replicas int64 `json:"replicas"`
}

// Admission is the quota one pod set holds.
type Admission struct {
	// name of the pod set.
	Name string `json:"name"`
	// replicas admitted.
	Replicas int64 `json:"replicas"`
	// resources held by the pod set, summed over its replicas.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// running replicas.
	Running int64 `json:"running"`
	// +optional
	ReclaimState *ReclaimState `json:"reclaimState,omitempty"`
}

// MaxTopologyDomains is how many domains one pod set's topology
// assignment may list.
const MaxTopologyDomains = 1024

// PodSetTopologyAssignment is where one pod set's pods run: within these
// domains of a Topology's level, Kueue's TopologyAssignment.
type PodSetTopologyAssignment struct {
	// name of the pod set.
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// topology is the Topology whose levels these are.
	// +kubebuilder:validation:MaxLength=253
	Topology string `json:"topology"`
	// levels are the node labels of the Topology's levels, from the top
	// down to the level asked for.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=316
	Levels []string `json:"levels"`
	// domains are the domains chosen, one for a required level, and how
	// many of the pod set's pods each holds.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1024
	Domains []TopologyDomainAssignment `json:"domains"`
}

// TopologyDomainAssignment is one domain of a topology assignment.
type TopologyDomainAssignment struct {
	// values are the domain's values of the assignment's levels, in their
	// order.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	Values []string `json:"values"`
	// count is how many of the pod set's pods run in the domain.
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`
}

// RequeueState is the backoff of a unit sent back to its queue.
type RequeueState struct {
	// count is how many times the unit was sent back.
	// +optional
	Count int32 `json:"count,omitempty"`
	// requeueAt is when the unit may be tried again.
	// +optional
	RequeueAt *metav1.Time `json:"requeueAt,omitempty"`
}

// ReclaimablePod counts a pod set's pods that no longer need their quota.
type ReclaimablePod struct {
	Name  string `json:"name"`
	Count int32  `json:"count"`
}

// QueueUnitStatus is what the queue and the job's extension observed of a unit.
type QueueUnitStatus struct {
	// phase of the unit; empty means Enqueued.
	// +optional
	Phase QueueUnitPhase `json:"phase,omitempty"`
	// attempts is how many times admission was tried.
	// +optional
	Attempts int64 `json:"attempts,omitempty"`
	// message says why the unit waits, in words a user understands.
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	AdmissionChecks []AdmissionCheckState `json:"admissionChecks,omitempty"`
	// +optional
	PodState PodState `json:"podState,omitempty"`
	// admissions is the quota each pod set holds; empty once it is released.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Admissions []Admission `json:"admissions,omitempty"`
	// admissionsSummary is admissions in a few words, for kubectl's
	// ADMISSIONS column: each pod set's running/admitted replicas, such as
	// "master 1/1, worker 2/3". Written with admissions; empty when they are.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	AdmissionsSummary string `json:"admissionsSummary,omitempty"`
	// +optional
	LastAllocateTime *metav1.Time `json:"lastAllocateTime,omitempty"`
	// topologyAssignments are, for each pod set that asks for a topology
	// level (the pod template's annotation
	// koord-queue/podset-required-topology or
	// koord-queue/podset-preferred-topology, or Kueue's), the domains of
	// that level its pods were admitted to. Written with admissions and
	// cleared with them; a restarted koord-queue counts the room they
	// hold from here.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	TopologyAssignments []PodSetTopologyAssignment `json:"topologyAssignments,omitempty"`
	// quotaTree is the quota tree (the tree-id of a node pool's quotas) of
	// the quota the unit was last admitted in; empty for the classic tree.
	// It keeps the unit counted in that tree should its quota be deleted
	// while it runs.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	QuotaTree string `json:"quotaTree,omitempty"`
	// conditions: QuotaReserved, Admitted, PodsReady, Finished, Evicted.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	RequeueState *RequeueState `json:"requeueState,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	ReclaimablePods []ReclaimablePod `json:"reclaimablePods,omitempty"`
}

// Condition types of QueueUnitStatus.Conditions.
const (
	QueueUnitQuotaReserved = "QuotaReserved"
	QueueUnitAdmitted      = "Admitted"
	QueueUnitPodsReady     = "PodsReady"
	QueueUnitFinished      = "Finished"
	QueueUnitEvicted       = "Evicted"
	// QueueUnitPodSetUpdatesApplied says, on a unit released with its
	// admission checks' pod set updates, whether the job's templates took
	// them all: False names the pod sets whose pods they cannot reach.
	QueueUnitPodSetUpdatesApplied = "PodSetUpdatesApplied"
	// QueueUnitAdopted says, on a unit Koord-Queue made for a job (an owner
	// reference to the job without controller: true), whether
	// koord-queue-controllers took it over: True once it did, False with
	// why not when it cannot do so safely.
	QueueUnitAdopted = "Adopted"
	// QueueUnitInvalidJob is True, on the unit of a job that cannot be
	// queued as it is (a negative amount in a pod template, say), while its
	// extension holds the unit inactive; its message says what to fix. It
	// goes once the job is fixed.
	QueueUnitInvalidJob = "InvalidJob"
)

// Reasons of the Evicted condition.
const (
	EvictedByDeactivation                 = "Deactivated"
	EvictedByBackoffTimeout               = "BackoffTimeout"
	EvictedByPreemption                   = "Preempted"
	EvictedByMaximumExecutionTimeExceeded = "MaximumExecutionTimeExceeded"
)

// QueueUnit is one job's place in a queue and the quota it holds.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName={qu,qus}
// +kubebuilder:printcolumn:name="PHASE",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="PRIORITY",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="ADMISSIONS",type=string,JSONPath=`.status.admissionsSummary`,description="Running/admitted replicas of each pod set"
// +kubebuilder:printcolumn:name="JOBTYPE",type=string,JSONPath=`.spec.consumerRef.kind`
// +kubebuilder:printcolumn:name="DOMAIN",type=string,JSONPath=`.status.topologyAssignments[0].domains[0].values`,priority=1,description="The topology domain (its levels' values, from the top) of the first pod set admitted to one; the visibility API gives every pod set's"
type QueueUnit struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   QueueUnitSpec   `json:"spec,omitempty"`
	Status QueueUnitStatus `json:"status,omitempty"`
}

// QueueUnitList is a list of QueueUnits.
//
// +kubebuilder:object:root=true
type QueueUnitList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []QueueUnit `json:"items"`
}

// IsActive reports whether the unit may be admitted; an unset spec.active means true.
func (u *QueueUnit) IsActive() bool {
	return u.Spec.Active == nil || *u.Spec.Active
}

// EffectivePhase is the unit's phase with the empty phase read as Enqueued.
func (u *QueueUnit) EffectivePhase() QueueUnitPhase {
	if u.Status.Phase == "" {
		return Enqueued
	}
	return u.Status.Phase
}
