package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// QueuePolicy decides how units inside one queue are taken for admission.
// +kubebuilder:validation:Enum=Priority;Block;Intelligent
type QueuePolicy string

const (
	// QueuePolicyPriority orders by priority and skips a unit that does not
	// fit, so later units that fit are admitted (non-blocking).
	QueuePolicyPriority QueuePolicy = "Priority"
	// QueuePolicyBlock admits strictly in order: while the head does not fit,
	// nothing behind it is admitted.
	QueuePolicyBlock QueuePolicy = "Block"
	// QueuePolicyIntelligent splits units at a priority threshold: the high
	// band blocks on its head, the low band is served round-robin.
	QueuePolicyIntelligent QueuePolicy = "Intelligent"
)

// QueueSpec is how a queue orders and admits its units.
type QueueSpec struct {
	// queuePolicy is Priority (the default), Block or Intelligent.
	// +optional
	QueuePolicy QueuePolicy `json:"queuePolicy,omitempty"`

	// priority orders queues against each other when capacity is contested.
	// Queues created from ElasticQuotas get 1000.
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// priorityClassName names a PriorityClass whose value is the queue's priority.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// admissionChecks must all be Ready for a selected unit before it is
	// released; until then the unit stays Reserved.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	AdmissionChecks []AdmissionCheckWithSelector `json:"admissionChecks,omitempty"`
}

// AdmissionCheckWithSelector names an admission check and the units it applies to.
type AdmissionCheckWithSelector struct {
	// name of the admission check.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	Name string `json:"name"`

	// labelSelector chooses the units the check applies to; nil selects every unit.
	// +optional
	Selector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// QueueItemDetailsActive is the QueueStatus.QueueItemDetails key of the pending units.
const QueueItemDetailsActive = "active"

// QueueStatus is what the queue controller observed of a queue.
type QueueStatus struct {
	// queueItemDetails lists the first pending units of the queue in admission
	// order, under the key "active".
	// +optional
	QueueItemDetails map[string][]QueueItemDetail `json:"queueItemDetails,omitempty"`

	// pending is how many units wait in the queue. The default makes
	// `kubectl get queues` show 0 rather than a blank: a zero count is
	// omitted when written.
	// +optional
	// +kubebuilder:default=0
	Pending int32 `json:"pending,omitempty"`

	// admitted is how many units of the queue currently hold quota.
	// +optional
	// +kubebuilder:default=0
	Admitted int32 `json:"admitted,omitempty"`

	// tree is the quota tree (node pool of Koordinator's multiple quota
	// trees) of the queue's ElasticQuota: the pool's name (the
	// ElasticQuotaProfile of the tree's root) where known, else the tree's
	// id; empty for the classic tree.
	// +optional
	Tree string `json:"tree,omitempty"`

	// treeRoot is the root quota of that tree: koordinator-root-quota for
	// the classic tree.
	// +optional
	TreeRoot string `json:"treeRoot,omitempty"`

	// used is what the units of the queue's ElasticQuota and of the quotas
	// under it hold.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`

	// treeCapacity is what the whole tree may use: its root's capacity. A
	// resource it does not name has no limit. The tree's figures
	// (treeCapacity, treeUsed, treeUsage) are on the Queue of the tree's
	// root only, so that an admission rewrites one Queue, not every one.
	// +optional
	TreeCapacity corev1.ResourceList `json:"treeCapacity,omitempty"`

	// treeUsed is what the units of the whole tree hold.
	// +optional
	TreeUsed corev1.ResourceList `json:"treeUsed,omitempty"`

	// treeUnqueued is the part of treeUsed that pods of no queued job hold
	// on nodes: DaemonSets' pods, bare pods, and in the classic tree the
	// pods of koordinator-system-quota and koordinator-default-quota, which
	// koord-scheduler takes out of what the tree hands out. It is charged
	// where koord-scheduler charges it, so the tree admits that much less.
	// +optional
	TreeUnqueued corev1.ResourceList `json:"treeUnqueued,omitempty"`

	// treeUsage is a summary of treeUsed against treeCapacity for
	// `kubectl get queues -o wide`: each resource of the capacity as
	// "name used/capacity", such as "cpu 12/40, nvidia.com/gpu 3/8".
	// +optional
	TreeUsage string `json:"treeUsage,omitempty"`

	// conditions of the queue, such as whether its quota is valid.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// QueueItemDetail is one pending unit and its place in the queue.
type QueueItemDetail struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Priority  int32  `json:"priority,omitempty"`
	// position is 1-based.
	Position int32 `json:"position,omitempty"`
}

// Queue holds the units of one ElasticQuota and decides their order.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.queuePolicy`
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pending`
// +kubebuilder:printcolumn:name="Admitted",type=integer,JSONPath=`.status.admitted`
// +kubebuilder:printcolumn:name="Tree",type=string,JSONPath=`.status.tree`,description="The queue's quota tree (node pool); empty for the classic tree"
// +kubebuilder:printcolumn:name="Tree Root",type=string,JSONPath=`.status.treeRoot`,priority=1,description="The root quota of the queue's tree"
// +kubebuilder:printcolumn:name="Tree Usage",type=string,JSONPath=`.status.treeUsage`,priority=1,description="What the tree's units hold of its capacity (on the root's queue)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   QueueSpec   `json:"spec,omitempty"`
	Status QueueStatus `json:"status,omitempty"`
}

// QueueList is a list of Queues.
//
// +kubebuilder:object:root=true
type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Queue `json:"items"`
}
