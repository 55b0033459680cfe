package admission

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/koord-queue/koord-queue/pkg/forecast"
	"github.com/koord-queue/koord-queue/pkg/metrics"
)

// forecastCollector exports the forecast's horizons when scraped: a scrape
// serves the latest forecast and has the next one computed when it is older
// than ForecastInterval, so a cluster nobody scrapes or asks pays nothing
// for it.
type forecastCollector struct {
	forecasts *forecasts
	now       func() time.Time
}

var _ prometheus.Collector = (*forecastCollector)(nil)

func (f *forecastCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- metrics.ForecastHorizon
	ch <- metrics.ForecastUnknown
}

func (f *forecastCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range forecastMetrics(f.forecasts.Estimates(f.now()), f.now()) {
		ch <- m
	}
}

// forecastMetrics are the horizons of estimates at now, a histogram per
// basis, and the count of units with no time.
func forecastMetrics(estimates map[string]forecast.Estimate, now time.Time) []prometheus.Metric {
	type hist struct {
		count   uint64
		sum     float64
		buckets map[float64]uint64
	}
	newHist := func() *hist {
		h := &hist{buckets: make(map[float64]uint64, len(metrics.ForecastHorizonBuckets))}
		for _, b := range metrics.ForecastHorizonBuckets {
			h.buckets[b] = 0 // every bucket shown, empty or not
		}
		return h
	}
	byBasis := map[forecast.Basis]*hist{}
	unknown := 0
	for _, e := range estimates {
		if e.At.IsZero() {
			unknown++
			continue
		}
		h := byBasis[e.Basis]
		if h == nil {
			h = newHist()
			byBasis[e.Basis] = h
		}
		ahead := max(e.At.Sub(now).Seconds(), 0)
		h.count++
		h.sum += ahead
		for _, b := range metrics.ForecastHorizonBuckets {
			if ahead <= b {
				h.buckets[b]++
			}
		}
	}
	out := []prometheus.Metric{prometheus.MustNewConstMetric(metrics.ForecastUnknown, prometheus.GaugeValue, float64(unknown))}
	for _, basis := range []forecast.Basis{forecast.Declared, forecast.Learned} {
		h := byBasis[basis]
		if h == nil {
			h = newHist()
		}
		out = append(out, prometheus.MustNewConstHistogram(metrics.ForecastHorizon, h.count, h.sum, h.buckets, basis.String()))
	}
	return out
}
