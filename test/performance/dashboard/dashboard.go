// Package dashboard plays open tabs of koord-queue's dashboard
// (pkg/visibility/dashboard/index.html) against its visibility API, to see
// what they cost the admissions. A tab refreshes every RefreshInterval
// (REFRESH_MS) with the same requests each time: the ElasticQuotas, the
// Queues and the recent admissions at once, then, for every Queue with
// pending units, its first UnitsShown waiting units, again at once. A
// Poller makes those requests on the same schedule; Pollers runs several,
// staggered across the interval, and measures each refresh.
package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/test/performance/checker"
)

const (
	// RefreshInterval is how often a tab refreshes (index.html's REFRESH_MS).
	RefreshInterval = 3 * time.Second
	// UnitsShown is how many waiting units a tab lists per Queue
	// (index.html's UNITS_SHOWN).
	UnitsShown = 20
	// connsPerTab is how many connections a browser opens to one host
	// (Chrome's and Firefox's limit for HTTP/1.1): a tab's further
	// requests wait for one of them.
	connsPerTab = 6
)

// Pollers are N open dashboard tabs: each refreshes every Every, as
// index.html's setInterval does (a refresh starts on time even when the
// last one has not finished), tab i first at i/N of the interval after
// Run starts, so they do not all fire at once.
type Pollers struct {
	// URL is the visibility API's root now (it changes when koord-queue
	// restarts); while it is empty, a refresh is skipped.
	URL func() string
	N   int
	// Every is the interval; zero means RefreshInterval.
	Every time.Duration

	mu sync.Mutex
	st Stats
	// took are the refreshes that succeeded, how long each took.
	took []time.Duration
	// afterRefresh, for tests, is called after each refresh is recorded.
	afterRefresh func()
}

// Stats are what the pollers did.
type Stats struct {
	Pollers int
	// Refreshes are the refreshes made (a refresh skipped while there was
	// no koord-queue is not one); Failed those with a failed request.
	Refreshes, Failed int
	// Requests are the requests made, FailedRequests those that failed
	// (an error or a status other than 200), LastError the last failure.
	Requests, FailedRequests int
	LastError                error
	// Median and P99 are the time a successful refresh took, from its
	// first request to its last answer.
	Median, P99 time.Duration
}

// Run runs the pollers until ctx ends, and returns once every refresh they
// started has returned.
func (p *Pollers) Run(ctx context.Context) {
	every := p.Every
	if every <= 0 {
		every = RefreshInterval
	}
	p.mu.Lock()
	p.st.Pollers = p.N
	p.mu.Unlock()
	var wg sync.WaitGroup
	for i := range p.N {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.tab(ctx, every, time.Duration(i)*every/time.Duration(p.N))
		}()
	}
	wg.Wait()
}

// tab is one open tab: after offset, a refresh every every until ctx ends,
// each through the tab's own connections.
func (p *Pollers) tab(ctx context.Context, every, offset time.Duration) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxConnsPerHost, transport.MaxIdleConnsPerHost = connsPerTab, connsPerTab
	defer transport.CloseIdleConnections()
	httpClient := &http.Client{Transport: transport}

	wait := time.NewTimer(offset)
	defer wait.Stop()
	select {
	case <-ctx.Done():
		return
	case <-wait.C:
	}
	var refreshes sync.WaitGroup
	defer refreshes.Wait()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		refreshes.Add(1)
		go func() {
			defer refreshes.Done()
			p.refresh(ctx, httpClient)
		}()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// refresh makes one refresh's requests and records them.
func (p *Pollers) refresh(ctx context.Context, httpClient *http.Client) {
	base := p.URL()
	if base == "" {
		return
	}
	c := &visibility.Client{BaseURL: base, HTTP: httpClient}
	start := time.Now()
	requests, errs := Refresh(ctx, c)
	took := time.Since(start)
	if ctx.Err() != nil {
		return // cut short by the end of the run: not a refresh
	}
	p.record(requests, errs, took)
	if p.afterRefresh != nil {
		p.afterRefresh()
	}
}

// record counts a refresh.
func (p *Pollers) record(requests int, errs []error, took time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st.Refreshes++
	p.st.Requests += requests
	p.st.FailedRequests += len(errs)
	if len(errs) > 0 {
		p.st.Failed++
		p.st.LastError = errs[len(errs)-1]
		return
	}
	p.took = append(p.took, took)
}

// Refresh makes the requests one refresh of index.html makes, through c,
// and returns how many it made and the failed ones' errors. As index.html
// does, it lists the waiting units of the Queues with pending units only
// once the ElasticQuotas, the Queues and the admissions were all read.
func Refresh(ctx context.Context, c *visibility.Client) (requests int, errs []error) {
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		queues []api.QueueView
	)
	get := func(what string, read func() error) {
		defer wg.Done()
		err := read()
		mu.Lock()
		defer mu.Unlock()
		requests++
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w", what, err))
		}
	}
	var quotas, recent json.RawMessage // read whole, as index.html does
	wg.Add(3)
	go get("the ElasticQuotas", func() error { return c.Get(ctx, "/api/elasticquotas", &quotas) })
	go get("the Queues", func() (err error) { queues, err = c.Queues(ctx); return err })
	go get("the admissions", func() error { return c.Get(ctx, "/api/admissions", &recent) })
	wg.Wait()
	if len(errs) > 0 {
		return requests, errs // index.html's Promise.all fails: no listing
	}
	for _, q := range queues {
		if q.Pending <= 0 {
			continue
		}
		wg.Add(1)
		go get("queue "+q.Name+"'s units", func() error {
			_, err := c.QueueUnits(ctx, q.Name, schedulingv1alpha1.Enqueued, 0, UnitsShown)
			return err
		})
	}
	wg.Wait()
	return requests, errs
}

// Stats are what the pollers did so far.
func (p *Pollers) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.st
	took := slices.Clone(p.took)
	slices.Sort(took)
	st.Median, st.P99 = checker.Percentile(took, 50), checker.Percentile(took, 99)
	return st
}

// Extra is the stats as the result's extra figures (checker.Result.Extra).
func (s Stats) Extra() map[string]float64 {
	return map[string]float64{
		"dashboard pollers":                      float64(s.Pollers),
		"dashboard pollers: refreshes":           float64(s.Refreshes),
		"dashboard pollers: refreshes failed":    float64(s.Failed),
		"dashboard pollers: requests":            float64(s.Requests),
		"dashboard pollers: requests failed":     float64(s.FailedRequests),
		"dashboard pollers: median refresh (ms)": float64(s.Median.Microseconds()) / 1000,
		"dashboard pollers: p99 refresh (ms)":    float64(s.P99.Microseconds()) / 1000,
	}
}
