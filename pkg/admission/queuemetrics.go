package admission

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/koord-queue/koord-queue/pkg/metrics"
)

// queueCountsCollector exports each Queue's waiting and admitted units
// (metrics.PendingUnits, metrics.AdmittedUnits) when scraped, from the
// counts the core keeps: a scrape costs one pass over the queues, nothing
// is paid between scrapes, and a deleted Queue's series goes with it.
type queueCountsCollector struct{ views *views }

var _ prometheus.Collector = (*queueCountsCollector)(nil)

func (q *queueCountsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- metrics.PendingUnits
	ch <- metrics.AdmittedUnits
}

func (q *queueCountsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range q.views.queueCountMetrics() {
		ch <- m
	}
}

// queueCountMetrics are the two gauges of every Queue, made under one hold
// of the Cache's lock and sent after it is released.
func (c *views) queueCountMetrics() []prometheus.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]prometheus.Metric, 0, 2*len(c.queues))
	for name := range c.queues {
		pending, admitted := c.core.QueueCounts(name)
		out = append(out,
			prometheus.MustNewConstMetric(metrics.PendingUnits, prometheus.GaugeValue, float64(pending), name),
			prometheus.MustNewConstMetric(metrics.AdmittedUnits, prometheus.GaugeValue, float64(admitted), name))
	}
	return out
}
