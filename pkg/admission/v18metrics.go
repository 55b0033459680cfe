package admission

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/metrics"
	"github.com/koord-queue/koord-queue/pkg/scheduler"
)

// Koord-Queue v1.8's metrics (metrics.DequeuedQuotaUsageByQuota and its
// siblings) are read when scraped from what the Cache keeps anyway, each
// updated where it changes: the quota engine's usage per quota and per
// namespace (every charge and release), the core's attempts per queue (every
// turn), and the units per namespace and job kind (every unit added or
// deleted). A scrape costs O(series), never a pass over the units. Only the
// leader exports them, as v1.8 did: a follower's Cache holds the same units
// and usage, and a dashboard summing over replicas would count them twice.

// jobType is what queueunits_by_job_type counts a unit under.
type jobType struct{ namespace, kind string }

// jobTypeOf is what u is counted under: its namespace and its job's kind;
// zero for a unit without spec.consumerRef, which v1.8 did not count.
func jobTypeOf(u *schedulingv1alpha1.QueueUnit) jobType {
	if u.Spec.ConsumerRef == nil || u.Spec.ConsumerRef.Kind == "" {
		return jobType{}
	}
	return jobType{namespace: u.Namespace, kind: u.Spec.ConsumerRef.Kind}
}

// jobTypeCounts keeps what v1.8's metrics read besides the core's figures.
type jobTypeCounts struct {
	mu   *sync.Mutex // the Cache's
	core *scheduler.Scheduler
	// quotaObjects and queues are the Cache's, read for the metrics.
	quotaObjects map[string]*elasticquotav1alpha1.ElasticQuota
	queues       queueRecords
	// jobTypes counts the units by namespace and job kind, for
	// queueunits_by_job_type; a pair no unit has has no entry.
	jobTypes map[jobType]int
}

// countJobType counts r under t instead of what it was counted under, with
// c.mu held; the zero t counts it nowhere (a unit deleted).
func (c *jobTypeCounts) countJobType(r *unitRecord, t jobType) {
	if t == r.jobType {
		return
	}
	if old := r.jobType; old != (jobType{}) {
		if c.jobTypes[old]--; c.jobTypes[old] <= 0 {
			delete(c.jobTypes, old)
		}
	}
	if t != (jobType{}) {
		c.jobTypes[t]++
	}
	r.jobType = t
}

// v18Metrics are Koord-Queue v1.8's gauges and counter as they stand.
func (c *jobTypeCounts) v18Metrics() []prometheus.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []prometheus.Metric
	add := func(desc *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(desc, t, v, labels...))
	}
	e := c.core.Quotas()
	for name, eq := range c.quotaObjects {
		used := e.Used(name)
		for res := range eq.Spec.Max {
			if _, ok := used[res]; !ok {
				used[res] = resource.Quantity{} // limited and unused: 0
			}
		}
		for res, q := range used {
			add(metrics.DequeuedQuotaUsageByQuota, prometheus.GaugeValue, v18Amount(res, q, true), name, string(res))
		}
	}
	e.NamespaceUsed(func(ns string, used corev1.ResourceList) {
		for res, q := range used {
			add(metrics.DequeuedQuotaUsageByNamespace, prometheus.GaugeValue, v18Amount(res, q, false), ns, string(res))
		}
	})
	for name := range c.queues {
		if scheduled, unschedulable := c.core.Attempts(name); scheduled+unschedulable > 0 {
			add(metrics.JobScheduleAttempts, prometheus.CounterValue, float64(scheduled), name, metrics.ResultScheduled)
			add(metrics.JobScheduleAttempts, prometheus.CounterValue, float64(unschedulable), name, metrics.ResultUnschedulable)
		}
	}
	for t, n := range c.jobTypes {
		add(metrics.QueueUnitsByJobType, prometheus.GaugeValue, float64(n), t.namespace, t.kind)
	}
	return out
}

// v18Amount is q as v1.8 exported it: cpu in millicores by quota, in cores
// by namespace; every other resource in its unit (bytes for memory), as the
// quota engine counts it (rounded up per unit).
func v18Amount(name corev1.ResourceName, q resource.Quantity, byQuota bool) float64 {
	switch {
	case name != corev1.ResourceCPU:
		return float64(q.Value())
	case byQuota:
		return float64(q.MilliValue())
	default:
		return float64(q.MilliValue()) / 1000
	}
}

// v18Collector exports the Cache's v18Metrics.
type v18Collector struct{ counts *jobTypeCounts }

var _ prometheus.Collector = (*v18Collector)(nil)

func (v *v18Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{metrics.DequeuedQuotaUsageByQuota, metrics.DequeuedQuotaUsageByNamespace,
		metrics.JobScheduleAttempts, metrics.QueueUnitsByJobType} {
		ch <- d
	}
}

func (v *v18Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range v.counts.v18Metrics() {
		ch <- m
	}
}

// leaderExporter registers a collector of what the Cache holds (v1.8's
// metrics, the queues' counts, the forecast) while this replica leads, once
// the Cache holds every object (a scrape before would see part of them).
type leaderExporter struct {
	registry  prometheus.Registerer
	collector prometheus.Collector
	synced    []toolscache.InformerSynced
}

var _ manager.LeaderElectionRunnable = (*leaderExporter)(nil)

// NeedLeaderElection: only the leader exports them, so that a dashboard
// summing over replicas counts each unit once.
func (x *leaderExporter) NeedLeaderElection() bool { return true }

// Start exports the metrics until ctx ends.
func (x *leaderExporter) Start(ctx context.Context) error {
	if _, _, err := waitSynced(ctx, clock.RealClock{}, nil, x.synced); err != nil {
		return fmt.Errorf("waiting for the cache: %w", err)
	}
	if err := x.registry.Register(x.collector); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	<-ctx.Done()
	x.registry.Unregister(x.collector)
	return nil
}
