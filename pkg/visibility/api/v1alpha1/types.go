// Package v1alpha1 holds the JSON types of the aggregated visibility API,
// visibility.koord-queue.x-k8s.io/v1alpha1, served by koord-queue behind the
// API server (APIService v1alpha1.visibility.koord-queue.x-k8s.io) under
// Koord-Queue v1.8's paths:
//
//	GET /apis/visibility.koord-queue.x-k8s.io/v1alpha1/queues/{queue}/queueunits
//	GET /apis/visibility.koord-queue.x-k8s.io/v1alpha1/elasticquotas/{quota}/queueunits?phase=
//
// Both answer a QueueUnitsSummary. Its items carry Koord-Queue v1.8's
// fields and, beyond them, the unit's position and why it waits.
package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "visibility.koord-queue.x-k8s.io", Version: "v1alpha1"}

// APIServiceName is the APIService that registers GroupVersion.
const APIServiceName = "v1alpha1.visibility.koord-queue.x-k8s.io"

// Kind is the kind of every list answer.
const Kind = "QueueUnitsSummary"

// QueueUnitsSummary is one page of a queue's or a quota's units: waiting
// units in admission order first, then those holding quota. metadata.continue,
// when set, asks for the next page.
type QueueUnitsSummary struct {
	metav1.TypeMeta `json:",inline"`
	// ListMeta's continue and remainingItemCount are set when a page
	// leaves units out.
	metav1.ListMeta `json:"metadata"`
	// Total counts the units of every page, named or not (beyond v1.8).
	Total int `json:"total"`
	// Items are the page's units.
	Items []QueueUnit `json:"items"`
}

// ObjectMeta names a unit; empty for a unit the caller may not see.
type ObjectMeta struct {
	// Name and Namespace are the QueueUnit's.
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// PodState counts the unit's pods.
type PodState struct {
	// Running counts the unit's pods that run, Pending those that wait
	// (Koord-Queue v1.8 swapped the two).
	Running int `json:"running"`
	Pending int `json:"pending"`
}

// QueueUnit is one unit, as Koord-Queue v1.8 lists it, and where it is and
// why.
type QueueUnit struct {
	// Metadata names the unit; empty when Redacted.
	Metadata ObjectMeta `json:"metadata"`
	// QuotaName is the ElasticQuota the unit is charged to; QueueName its
	// Queue (the quota's, of the same name).
	QuotaName string `json:"quotaName,omitempty"`
	QueueName string `json:"queueName,omitempty"`
	// Request is what the unit asks for; for a unit holding quota, what it
	// holds (less than it asks for after a partial admission).
	Request corev1.ResourceList `json:"request,omitempty"`
	// Resources is the job's total request as its QueueUnit gives it
	// (spec.resource).
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Phase is the QueueUnit's status.phase.
	Phase    schedulingv1alpha1.QueueUnitPhase `json:"phase"`
	PodState PodState                          `json:"podState"`

	// Beyond Koord-Queue v1.8.

	// Priority is the QueueUnit's spec.priority.
	Priority int32 `json:"priority"`
	// Position is 1-based among the queue's waiting units; 0 when not waiting.
	Position int `json:"position,omitempty"`
	// Reason is why the unit waits.
	Reason string `json:"reason,omitempty"`
	// QuotaRule is the rule that chose the unit's quota ("label",
	// "spec.queue", "namespace name", "namespaces annotation", "default quota").
	QuotaRule string `json:"quotaRule,omitempty"`
	// PartialAdmission, for a unit admitted with fewer pods than it asks
	// for, says how many.
	PartialAdmission string `json:"partialAdmission,omitempty"`
	// TopologyAssignments are the domains of a topology level each pod set
	// that asks for one was admitted to.
	TopologyAssignments []schedulingv1alpha1.PodSetTopologyAssignment `json:"topologyAssignments,omitempty"`
	// EstimatedAdmissionTime and EstimateBasis are the forecast of a
	// waiting unit, as the REST API gives them (docs/tasks/read-the-queue.md).
	EstimatedAdmissionTime *metav1.Time `json:"estimatedAdmissionTime,omitempty"`
	EstimateBasis          string       `json:"estimateBasis,omitempty"`
	// EstimateReason says why a waiting unit with no estimated time will
	// never be admitted as things are, as the REST API gives it.
	EstimateReason string `json:"estimateReason,omitempty"`
	// Redacted marks a unit of a namespace the caller may not list
	// QueueUnits in: only its queue, quota, phase, priority, position and
	// forecast are shown.
	Redacted bool `json:"redacted,omitempty"`
}
