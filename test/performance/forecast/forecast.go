// Package forecast measures koord-queue's forecast of when each waiting
// unit will be admitted against when it was. While a run goes on, a Probe
// reads every queue's waiting units from the visibility API, as a user
// would, and a Record keeps the first estimatedAdmissionTime each unit got;
// Measure compares those with the first admissions the checker saw.
package forecast

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/test/performance/checker"
)

// MinWait is how long a unit must have waited for its forecast to count:
// a forecast of a unit admitted within seconds says little.
const MinWait = 30 * time.Second

// DefaultEvery is how often a Probe reads the queues: koord-queue computes
// a new forecast at most every 5s (admission.ForecastInterval), so a unit
// gets its first estimate within about one interval and a poll of it.
const DefaultEvery = 2 * time.Second

// Seen is the first forecast of one unit.
type Seen struct {
	// At is when the probe read it.
	At time.Time
	// Estimate is the estimatedAdmissionTime read.
	Estimate time.Time
	// Basis is the estimateBasis read with it.
	Basis string
}

// Record keeps the first forecast each unit got; safe for concurrent use.
type Record struct {
	mu    sync.Mutex
	first map[string]Seen
}

// Observe records what a read at at showed of a waiting unit: its first
// estimate, if it has one and none was recorded before.
func (r *Record) Observe(at time.Time, v api.UnitView) {
	if v.Redacted || v.EstimatedAdmissionTime == nil || v.Phase != schedulingv1alpha1.Enqueued {
		return
	}
	key := v.Namespace + "/" + v.Name
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.first[key]; ok {
		return
	}
	if r.first == nil {
		r.first = map[string]Seen{}
	}
	r.first[key] = Seen{At: at, Estimate: v.EstimatedAdmissionTime.Time, Basis: v.EstimateBasis}
}

// First is every unit's first forecast, by namespace/name.
func (r *Record) First() map[string]Seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Seen, len(r.first))
	for k, v := range r.first {
		out[k] = v
	}
	return out
}

// Accuracy is how far the first forecasts were from the admissions, over
// the units that waited more than MinWait.
type Accuracy struct {
	MinWait time.Duration
	// Waited counts the units admitted after waiting more than MinWait;
	// Forecast those of them that had a forecast before their admission.
	// The figures below are over Forecast.
	Waited, Forecast int
	// Error is |forecast − admission|; Relative is Error over the unit's
	// wait (admission − creation).
	MedianError, P90Error       time.Duration
	MedianRelative, P90Relative float64
	// MedianSigned is the median of forecast − admission: below zero, the
	// forecast promised admissions earlier than they came.
	MedianSigned time.Duration
	// MedianLead is the median time from the forecast's read to the
	// admission: how far ahead it was made; MedianDelay the median time
	// from the unit's creation to that read (while the forecast had no
	// time for it, or had not yet been computed with it).
	MedianLead, MedianDelay time.Duration
	// Bases counts the forecasts by estimateBasis.
	Bases map[string]int
}

// Measure compares the first forecasts with the units' times as the
// checker saw them. A forecast read after the unit's admission (the probe
// raced the admission) does not count.
func Measure(first map[string]Seen, times map[string]checker.UnitTimes, minWait time.Duration) Accuracy {
	acc := Accuracy{MinWait: minWait, Bases: map[string]int{}}
	var errs, signed, lead, delay []time.Duration
	var rel []float64
	for key, t := range times {
		if t.Admitted.IsZero() {
			continue
		}
		wait := t.Admitted.Sub(t.Created)
		if wait <= minWait {
			continue
		}
		acc.Waited++
		f, ok := first[key]
		if !ok || !f.At.Before(t.Admitted) {
			continue
		}
		acc.Forecast++
		acc.Bases[f.Basis]++
		d := f.Estimate.Sub(t.Admitted)
		signed = append(signed, d)
		errs = append(errs, d.Abs())
		rel = append(rel, d.Abs().Seconds()/wait.Seconds())
		lead = append(lead, t.Admitted.Sub(f.At))
		delay = append(delay, f.At.Sub(t.Created))
	}
	for _, ds := range [][]time.Duration{errs, signed, lead, delay} {
		slices.Sort(ds)
	}
	slices.Sort(rel)
	acc.MedianError, acc.P90Error = checker.Percentile(errs, 50), checker.Percentile(errs, 90)
	acc.MedianSigned, acc.MedianLead = checker.Percentile(signed, 50), checker.Percentile(lead, 50)
	acc.MedianDelay = checker.Percentile(delay, 50)
	acc.MedianRelative, acc.P90Relative = percentile(rel, 50), percentile(rel, 90)
	return acc
}

// percentile is the nearest-rank p-th percentile of sorted values, as
// checker.Percentile.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Extra is the accuracy as the result's extra figures (checker.Result.Extra).
func (a Accuracy) Extra() map[string]float64 {
	prefix := fmt.Sprintf("forecast, units that waited over %.0fs: ", a.MinWait.Seconds())
	out := map[string]float64{
		prefix + "units": float64(a.Waited),
		prefix + "with a forecast before admitted": float64(a.Forecast),
	}
	if a.Forecast == 0 {
		return out
	}
	out[prefix+"median |forecast - admitted| (s)"] = a.MedianError.Seconds()
	out[prefix+"p90 |forecast - admitted| (s)"] = a.P90Error.Seconds()
	out[prefix+"median |forecast - admitted| / wait"] = a.MedianRelative
	out[prefix+"p90 |forecast - admitted| / wait"] = a.P90Relative
	out[prefix+"median forecast - admitted (s)"] = a.MedianSigned.Seconds()
	out[prefix+"median forecast lead (s)"] = a.MedianLead.Seconds()
	out[prefix+"median creation to first forecast (s)"] = a.MedianDelay.Seconds()
	for basis, n := range a.Bases {
		out[prefix+"basis "+basis] = float64(n)
	}
	return out
}

// WriteCSV writes one line per unit: when it was created, when its first
// forecast was read, what it said and on what basis, and when the unit was
// admitted (seconds since start; empty when there is none).
func WriteCSV(w io.Writer, start time.Time, first map[string]Seen, times map[string]checker.UnitTimes) error {
	keys := make([]string, 0, len(times))
	for k := range times {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return strconv.FormatFloat(t.Sub(start).Seconds(), 'f', 3, 64)
	}
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"unit", "created", "forecast_read", "forecast", "basis", "admitted"})
	for _, k := range keys {
		t, f := times[k], first[k]
		_ = cw.Write([]string{k, at(t.Created), at(f.At), at(f.Estimate), f.Basis, at(t.Admitted)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing forecasts: %w", err)
	}
	return nil
}

// Probe reads the waiting units of Queues from the visibility API into
// Record. It reads a queue at a time and waits Every between rounds, so
// what it costs koord-queue is a listing per queue every few seconds and
// the forecast those listings ask for (computed at most every 5s, outside
// the admission lock).
type Probe struct {
	// URL is the visibility API's root now (it changes when koord-queue
	// restarts); empty while there is none.
	URL    func() string
	Queues []string
	Record *Record
	// Now is the clock the reads are stamped with.
	Now func() time.Time

	mu             sync.Mutex
	reads, failed  int
	lastFailure    error
	lastFailedRead string
}

// Run reads every queue every interval until ctx ends.
func (p *Probe) Run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		p.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Round reads every queue once.
func (p *Probe) Round(ctx context.Context) {
	base := p.URL()
	if base == "" {
		return
	}
	c := &visibility.Client{BaseURL: base}
	for _, q := range p.Queues {
		err := p.readQueue(ctx, c, q)
		p.mu.Lock()
		p.reads++
		if err != nil {
			p.failed++
			p.lastFailure, p.lastFailedRead = err, q
		}
		p.mu.Unlock()
		if err != nil && ctx.Err() != nil {
			return
		}
	}
}

// readQueue records the estimates of every unit waiting in queue, page by
// page (a page has at most visibility.MaxLimit units), each as its page was
// read.
func (p *Probe) readQueue(ctx context.Context, c *visibility.Client, queue string) error {
	for offset := 0; ; {
		list, err := c.QueueUnits(ctx, queue, schedulingv1alpha1.Enqueued, offset, visibility.MaxLimit)
		if err != nil {
			return err
		}
		at := p.Now()
		for _, v := range list.Items {
			p.Record.Observe(at, v)
		}
		offset += len(list.Items)
		if len(list.Items) == 0 || offset >= list.Total {
			return nil
		}
	}
}

// Stats are how many reads the probe made and how many failed, with the
// last failure.
func (p *Probe) Stats() (reads, failed int, last error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastFailure != nil {
		last = fmt.Errorf("reading queue %s: %w", p.lastFailedRead, p.lastFailure)
	}
	return p.reads, p.failed, last
}
