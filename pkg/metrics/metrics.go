// Package metrics defines koord-queue's Prometheus metrics, registered with
// controller-runtime's registry and served on /metrics (port 10259). Names
// follow koord_queue_<noun>_<unit> with a small, fixed label set.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of an admission attempt.
const (
	ResultAdmitted = "admitted"
	ResultWaiting  = "waiting"
	ResultError    = "error"
)

var (
	// PendingUnits is how many units wait in each queue.
	PendingUnits = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "koord_queue_pending_units", Help: "Units waiting in each queue.",
	}, []string{"queue"})

	// AdmittedUnits is how many units of each queue hold quota.
	AdmittedUnits = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "koord_queue_admitted_units", Help: "Units of each queue holding quota.",
	}, []string{"queue"})

	// AdmissionAttempts counts admission writes by result: admitted, waiting
	// (a new reason to wait was written) or error.
	AdmissionAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "koord_queue_admission_attempts_total", Help: "Admission attempts by result.",
	}, []string{"result"})

	// AdmissionWaitTime is the time from a unit's creation to its admission.
	AdmissionWaitTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "koord_queue_admission_wait_time_seconds",
		Help:    "Time from a unit's creation to its admission.",
		Buckets: prometheus.ExponentialBuckets(0.1, 2, 16), // 0.1s .. ~55min
	}, []string{"queue"})

	// QuotaResource is each quota's min, max, used and runtime share per resource.
	QuotaResource = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "koord_queue_quota_resource", Help: "Quota min, max, used and runtime by resource (cores for cpu, bytes for memory).",
	}, []string{"quota", "resource", "kind"})

	// Evictions counts evictions by reason (Preempted, Deactivated, ...).
	Evictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "koord_queue_evictions_total", Help: "Units evicted, by reason.",
	}, []string{"reason"})

	// WatchedUpdates counts the ElasticQuota and Node events the admission
	// cache received, by kind and whether it applied them (the quota tree
	// or the cluster's capacity changed, every queue is woken) or ignored
	// them (nothing koord-queue reads changed: koord-scheduler's figures,
	// a node's heartbeat).
	WatchedUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "koord_queue_watched_updates_total", Help: "ElasticQuota and Node events by kind, applied or ignored (nothing koord-queue reads changed).",
	}, []string{"kind", "result"})

	// CycleDuration is how long one scheduling cycle takes.
	CycleDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "koord_queue_scheduling_cycle_duration_seconds",
		Help:    "Duration of one scheduling cycle.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	})
)

// Kinds of QuotaResource.
const (
	KindMin     = "min"
	KindMax     = "max"
	KindUsed    = "used"
	KindRuntime = "runtime"
)

// Kinds and results of WatchedUpdates.
const (
	KindElasticQuota = "ElasticQuota"
	KindNode         = "Node"
	UpdateApplied    = "applied"
	UpdateIgnored    = "ignored"
)

func init() {
	metrics.Registry.MustRegister(PendingUnits, AdmittedUnits, AdmissionAttempts, AdmissionWaitTime, QuotaResource, Evictions, WatchedUpdates, CycleDuration)
}
