// Package api holds the visibility REST API's JSON types (/api/...), apart
// from the controller that fills them, so that clients, tools and tests
// import the types and not koord-queue's internals.
package api

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// QuotaView is one quota of the tree as the visibility API shows it.
type QuotaView struct {
	// Name is the ElasticQuota's name, Namespace its namespace.
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// Parent is the quota it hangs from in the tree; empty for a tree's
	// root.
	Parent string `json:"parent,omitempty"`
	// Min and Max are the quota's spec.min and spec.max.
	Min corev1.ResourceList `json:"min,omitempty"`
	Max corev1.ResourceList `json:"max,omitempty"`
	// Used is what the units charged to the quota and those under it hold.
	Used corev1.ResourceList `json:"used,omitempty"`
	// Runtime is the quota's fair share of what it may use now.
	Runtime corev1.ResourceList `json:"runtime,omitempty"`
	// Tree is the quota tree (node pool) the quota belongs to, its tree-id
	// label; empty for the classic tree.
	Tree string `json:"tree,omitempty"`
	// Capacity is a quota tree root's capacity, what the whole tree may
	// use: its total-resource annotation, or with --compute-tree-capacity
	// what its ElasticQuotaProfile's nodes offer, capped by its max.
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Error says what is wrong with the quota (a rule of the tree it
	// breaks, a malformed label or annotation); empty when nothing is.
	Error string `json:"error,omitempty"`
	// IgnoredDuplicates are the ElasticQuotas (namespace/name) of the same
	// name in other namespaces, not used: quota names are global in
	// Koordinator, so the oldest is used.
	IgnoredDuplicates []string `json:"ignoredDuplicates,omitempty"`
}

// QueueView is one queue as the visibility API shows it.
type QueueView struct {
	// Name is the queue's, its ElasticQuota's name.
	Name string `json:"name"`
	// Policy is Priority, Block or Intelligent.
	Policy schedulingv1alpha1.QueuePolicy `json:"policy"`
	// Priority orders the queue against the others.
	Priority int32 `json:"priority"`
	// Pending counts the units waiting in the queue, Admitted those
	// holding quota.
	Pending  int `json:"pending"`
	Admitted int `json:"admitted"`
	// Quota is the queue's ElasticQuota; nil when it has none.
	Quota *QuotaView `json:"quota,omitempty"`
	// QuotaTree is the quota tree (node pool) of the queue's quota; nil
	// when the queue has no quota.
	QuotaTree *TreeView `json:"quotaTree,omitempty"`
	// ConfigError reports malformed koord-queue/* annotations.
	ConfigError string `json:"configError,omitempty"`
}

// TreeView is a quota tree (node pool of Koordinator's multiple quota
// trees) as the visibility API shows it.
type TreeView struct {
	// ID is the tree's id (label tree-id); empty for the classic tree.
	ID string `json:"id,omitempty"`
	// Pool names the tree's node pool: the ElasticQuotaProfile of its root
	// where known, else ID; empty for the classic tree.
	Pool string `json:"pool,omitempty"`
	// Root is the tree's root quota (koordinator-root-quota for the
	// classic tree).
	Root string `json:"root"`
	// Capacity is what the whole tree may use (its root's capacity); a
	// resource it does not name has no limit.
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Used is what the tree's admitted units hold.
	Used corev1.ResourceList `json:"used,omitempty"`
	// Unqueued is the part of Used that pods of no queued job hold on
	// nodes (Queue status.treeUnqueued); given on the view of the tree's
	// root only.
	Unqueued corev1.ResourceList `json:"unqueued,omitempty"`
}

// UnitView is one unit: where it is and why.
type UnitView struct {
	// Namespace and Name are the QueueUnit's; empty when redacted.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Queue is the queue the unit is in.
	Queue string `json:"queue,omitempty"`
	// QuotaRule is the rule that chose Queue's quota: "label", "spec.queue",
	// "namespace name", "namespaces annotation" or "default quota".
	QuotaRule string `json:"quotaRule,omitempty"`
	// Phase is the QueueUnit's status.phase.
	Phase schedulingv1alpha1.QueueUnitPhase `json:"phase"`
	// Priority is the QueueUnit's spec.priority.
	Priority int32 `json:"priority"`
	// Request is what the unit asks for; for a unit holding quota, what it
	// holds (less than it asks for after a partial admission).
	Request corev1.ResourceList `json:"request,omitempty"`
	// Resource is the job's total request as its QueueUnit gives it
	// (spec.resource).
	Resource corev1.ResourceList `json:"resource,omitempty"`
	// PodState counts the unit's pods, as its extension last wrote them.
	PodState schedulingv1alpha1.PodState `json:"podState,omitzero"`
	// PartialAdmission, for a unit admitted with fewer pods than it asks
	// for, says how many: "2 of 4 pods of pod set main".
	PartialAdmission string `json:"partialAdmission,omitempty"`
	// TopologyAssignments, for a unit admitted with pod sets that ask for
	// a topology level, are the domains each such pod set runs in (its
	// status.topologyAssignments, or the admission being written).
	TopologyAssignments []schedulingv1alpha1.PodSetTopologyAssignment `json:"topologyAssignments,omitempty"`
	// Position is 1-based among the queue's waiting units; 0 when not waiting.
	Position int `json:"position,omitempty"`
	// Reason is why the unit waits.
	Reason string `json:"reason,omitempty"`
	// EstimatedAdmissionTime is when the forecast says a waiting unit will
	// be admitted (docs/concepts/forecast.md says how it is made); absent when
	// it cannot say.
	EstimatedAdmissionTime *metav1.Time `json:"estimatedAdmissionTime,omitempty"`
	// EstimateBasis says how sure that is: Declared (every runtime it
	// waited for was a declared limit), Learned (some were learned from
	// finished units) or Unknown (no time: it waits for a unit whose end is
	// unknown, or longer than the forecast looks ahead, or never fits:
	// EstimateReason).
	EstimateBasis string `json:"estimateBasis,omitempty"`
	// EstimateReason, for a waiting unit with no estimated time, says why
	// it will never be admitted as things are: its pods need more room
	// within one domain of a topology level than any has, even with no
	// unit's pods on the nodes. Not shown on a redacted unit.
	EstimateReason string `json:"estimateReason,omitempty"`
	// Redacted marks a unit of a namespace the caller may not list
	// QueueUnits in: only Queue, Phase, Priority, Position and the
	// forecast (EstimatedAdmissionTime, EstimateBasis) are shown.
	Redacted bool `json:"redacted,omitempty"`
}

// AdmissionRecord is one admission as seen on the API server.
type AdmissionRecord struct {
	// Namespace and Name are the admitted QueueUnit's, Queue its queue.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Queue     string `json:"queue"`
	// Time is when the unit was admitted (its status.lastAllocateTime).
	Time time.Time `json:"time"`
	// TopologyAssignments are the domains the unit's pod sets that ask for
	// a topology level were admitted to (its status.topologyAssignments
	// then).
	TopologyAssignments []schedulingv1alpha1.PodSetTopologyAssignment `json:"topologyAssignments,omitempty"`
}

// Paging of a queue's units, in both visibility APIs. A page's units are
// copied under the admission lock, which every admission decision takes,
// so MaxLimit bounds what one request holds it for (about 1 µs a unit) and
// what it allocates (under 2 KB a unit, served); a caller asking for more
// gets MaxLimit and pages on. It is Koord-Queue v1.8's default limit, so
// that every request its clients make is answered as before.
const (
	// DefaultLimit is how many units a page has when no limit is given.
	DefaultLimit = 1000
	// MaxLimit is the most units a page has, whatever limit is asked.
	MaxLimit = 1000
)

// QueueUnitList is a page of a queue's units.
type QueueUnitList struct {
	// Queue is the queue's name.
	Queue string `json:"queue"`
	// Total counts the units of every page.
	Total int `json:"total"`
	// Offset is the position, 0-based, of the page's first unit.
	Offset int `json:"offset"`
	// Limit is the page's limit: the one asked, at most MaxLimit (1000).
	Limit int `json:"limit"`
	// Items are the page's units: waiting ones in admission order, then
	// those holding quota.
	Items []UnitView `json:"items"`
}

// TopologyView is a Topology as the visibility API lists it (GET
// /api/topologies).
type TopologyView struct {
	// Name is the Topology's.
	Name string `json:"name"`
	// Levels are the node labels of its levels, from the top (the
	// broadest) down.
	Levels []string `json:"levels"`
}

// TopologyDomainList is a page of the domains of one level of a Topology
// (GET /api/topologies/{name}/domains): what each domain's schedulable
// nodes offer, what the pods on them hold, what units admitted to the
// domain and not on a node yet keep, and what is free. It is computed as
// an admission cycle sees the nodes, at most a second before.
type TopologyDomainList struct {
	// Topology is the Topology's name.
	Topology string `json:"topology"`
	// Level is the node label of the level listed.
	Level string `json:"level"`
	// Levels are the node labels of the Topology's levels from the top
	// down to Level: what each domain's values are of.
	Levels []string `json:"levels"`
	// Total counts the level's domains, on every page.
	Total int `json:"total"`
	// Offset is the position, 0-based, of the page's first domain.
	Offset int `json:"offset"`
	// Limit is the page's limit: the one asked, at most MaxLimit (1000).
	Limit int `json:"limit"`
	// Items are the page's domains, ordered by their values.
	Items []DomainView `json:"items"`
}

// DomainView is one domain of a Topology's level and what its nodes have,
// per resource the nodes have: cpu in cores, to the milli-core, the rest
// in whole units, as a placement counts them.
type DomainView struct {
	// Values are the domain's values of the levels, from the top down.
	Values []string `json:"values"`
	// Nodes counts the domain's schedulable nodes (Ready, not cordoned,
	// not being deleted); the others count nowhere.
	Nodes int `json:"nodes"`
	// Allocatable is what the nodes offer.
	Allocatable corev1.ResourceList `json:"allocatable"`
	// Held is what the pods on the nodes ask for (the pod ledger); a
	// pod's own count, the pods resource, is not counted, as placements
	// do not count it.
	Held corev1.ResourceList `json:"held"`
	// Assumed is what the pods of units admitted to the domain that are
	// not on a node yet will take.
	Assumed corev1.ResourceList `json:"assumed"`
	// Free is what is left for the next unit: each node's allocatable
	// less held less assumed, none below zero (a node whose pods hold
	// more than it offers adds nothing).
	Free corev1.ResourceList `json:"free"`
}

// QuotaChange is what a what-if forecast changes in a queue's ElasticQuota:
// each resource named in Min or Max is set to the amount given, the others
// are kept.
type QuotaChange struct {
	Min corev1.ResourceList `json:"min,omitempty"`
	Max corev1.ResourceList `json:"max,omitempty"`
}

// WhatIf is the forecast of a queue's waiting units had its ElasticQuota
// the min and max given (GET /api/queues/{name}/forecast).
type WhatIf struct {
	Queue string `json:"queue"`
	// Quota is the queue's ElasticQuota.
	Quota string `json:"quota"`
	// Min and Max are the quota's min and max as the forecast assumed
	// them: those asked, the rest as the quota has them.
	Min corev1.ResourceList `json:"min,omitempty"`
	Max corev1.ResourceList `json:"max,omitempty"`
	// Total counts the queue's waiting units.
	Total int `json:"total"`
	// Items are the queue's first MaxLimit waiting units in admission
	// order, each with its estimatedAdmissionTime and estimateBasis under
	// that quota.
	Items []UnitView `json:"items"`
	// OnlyVisible says that the forecast left out the units of namespaces
	// the caller may not list QueueUnits in, in every queue, as if they
	// did not exist: those in Items are redacted, with no estimate.
	OnlyVisible bool `json:"onlyVisible,omitempty"`
}

// Error is the body of every 4xx answer.
type Error struct {
	// Error says what was wrong with the request.
	Error string `json:"error"`
}
