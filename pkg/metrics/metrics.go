// Package metrics defines koord-queue's Prometheus metrics, registered with
// controller-runtime's registry and served on /metrics (port 10259). Names
// follow koord_queue_<noun>_<unit> with a small, fixed label set.
package metrics

import (
	"time"

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

	// DeferredWrites is how many units are owed a write that only informs
	// (why they wait, spec.queue); such writes are made once admissions
	// and evictions pause.
	DeferredWrites = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "koord_queue_deferred_writes", Help: "Units owed a write that only informs (why they wait, spec.queue), made once admissions and evictions pause.",
	})

	// DeferredWriteDelay is how long a unit was owed such a write before
	// it was made (or found needless).
	DeferredWriteDelay = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "koord_queue_deferred_write_delay_seconds",
		Help:    "Time from a unit being owed a write that only informs to the write.",
		Buckets: prometheus.ExponentialBuckets(0.1, 2, 16), // 0.1s .. ~55min
	})

	// CycleDuration is how long one scheduling cycle takes.
	CycleDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "koord_queue_scheduling_cycle_duration_seconds",
		Help:    "Duration of one scheduling cycle.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	})
)

// Koord-Queue v1.8's metrics, under its names, labels and units, so its
// users' dashboards keep working (docs/tasks/monitor.md). The gauges and the
// counter are read at scrape time from the state the admission cache keeps,
// and only on the leader (pkg/admission's v18Collector): descriptors here,
// values there. The histogram is observed with CycleDuration (ObserveCycle).
var (
	// DequeuedQuotaUsageByQuota is what admitted units hold in a quota and
	// its descendants: cpu in millicores, other resources in their units.
	DequeuedQuotaUsageByQuota = prometheus.NewDesc("dequeued_quota_usage_by_quota",
		"Resources held by admitted (dequeued) units in the quota and its descendants: cpu in millicores, memory in bytes, other resources in their units.",
		[]string{"quota", "resource"}, nil)

	// DequeuedQuotaUsageByNamespace is what admitted units of a namespace
	// hold, whatever their quotas: cpu in cores, other resources in their units.
	DequeuedQuotaUsageByNamespace = prometheus.NewDesc("dequeued_quota_usage_by_namespace",
		"Resources held by admitted (dequeued) units of the namespace: cpu in cores, memory in bytes, other resources in their units.",
		[]string{"namespace", "resource"}, nil)

	// JobScheduleAttempts counts each queue's turns by result.
	JobScheduleAttempts = prometheus.NewDesc("job_schedule_attempts",
		"Turns of each queue in the scheduling cycles: scheduled (a unit was admitted) or unschedulable (its head waits).",
		[]string{"queue", "result"}, nil)

	// QueueUnitsByJobType counts the QueueUnits that exist, by namespace
	// and job kind (spec.consumerRef.kind).
	QueueUnitsByJobType = prometheus.NewDesc("queueunits_by_job_type",
		"QueueUnits that exist, by namespace and job kind (spec.consumerRef.kind), whatever their phase.",
		[]string{"namespace", "type"}, nil)

	// JobSchedulingAlgorithmLatency is CycleDuration in milliseconds, with
	// Koord-Queue v1.8's buckets (0.01 ms to 164 ms).
	JobSchedulingAlgorithmLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "job_scheduling_algorithm_latency",
		Help:    "Duration of one scheduling cycle, in milliseconds.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 15),
	})
)

// PendingUnits and AdmittedUnits are how many units of each queue wait and
// hold quota, read from the admission cache when scraped, on the leader
// (pkg/admission's queueCountsCollector).
var (
	PendingUnits = prometheus.NewDesc("koord_queue_pending_units",
		"Units waiting in each queue.", []string{"queue"}, nil)
	AdmittedUnits = prometheus.NewDesc("koord_queue_admitted_units",
		"Units of each queue holding quota.", []string{"queue"}, nil)
)

// ForecastHorizon is, per basis of the forecast (Declared or Learned), how
// far ahead the waiting units are forecast to be admitted; ForecastUnknown
// counts the waiting units the forecast gives no time (pkg/forecast). Both
// are computed when scraped, at most once every few seconds.
var (
	ForecastHorizon = prometheus.NewDesc("koord_queue_forecast_horizon_seconds",
		"How far ahead waiting units are forecast to be admitted, by the basis of the forecast.",
		[]string{"basis"}, nil)
	ForecastUnknown = prometheus.NewDesc("koord_queue_forecast_unknown_units",
		"Waiting units the forecast gives no admission time: they wait for units whose end is unknown, or longer than the horizon.",
		nil, nil)
	// ForecastHorizonBuckets go from a minute to a week.
	ForecastHorizonBuckets = []float64{60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600, 3 * 24 * 3600, 7 * 24 * 3600}
)

// Results of JobScheduleAttempts.
const (
	ResultScheduled     = "scheduled"
	ResultUnschedulable = "unschedulable"
)

// ObserveCycle records how long one scheduling cycle took, in seconds
// (CycleDuration) and in milliseconds (JobSchedulingAlgorithmLatency).
func ObserveCycle(d time.Duration) {
	CycleDuration.Observe(d.Seconds())
	JobSchedulingAlgorithmLatency.Observe(float64(d) / float64(time.Millisecond))
}

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
	metrics.Registry.MustRegister(AdmissionAttempts, AdmissionWaitTime, QuotaResource, Evictions, WatchedUpdates, DeferredWrites, DeferredWriteDelay, CycleDuration,
		JobSchedulingAlgorithmLatency)
}
