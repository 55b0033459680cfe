// Package churn plays koord-scheduler for the performance harness: every
// interval it merge-patches ElasticQuotas as koord-scheduler's elasticquota
// plugin does (its runtime, request, ... annotations and status.used, with
// values that change every round), through a client of its own with its own
// rate limiter, so neither koord-queue's budget nor the harness's other
// clients pay for it.
package churn

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// Workers write one round's patches, as many at once. koord-scheduler
// writes from one goroutine; a few writers hold no more than a few of the
// API server's requests at a time, so on an API server too slow for the
// rate asked the churn slows down (the result says how far) rather than
// crowding out the workload's writes.
const Workers = 4

// PatchesPerQuota are the writes of a quota in a round: one merge patch of
// its annotations and status.used, as koord-scheduler sends them.
const PatchesPerQuota = 1

// Stats are what a churn wrote.
type Stats struct {
	Rounds  int
	Patches int
	Failed  int
	// LastError is the last failed patch's error, if any.
	LastError error
	// Elapsed runs from the first round's start to the last one's end.
	Elapsed time.Duration
	// LateRounds took longer than the interval: the API server did not
	// keep up, so the churn was slower than asked.
	LateRounds int
}

// PatchesPerSecond is the rate the churn wrote at.
func (s Stats) PatchesPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Patches) / s.Elapsed.Seconds()
}

// Churner patches the ElasticQuotas of names in namespace.
type Churner struct {
	Client    client.Client
	Namespace string
	Names     []string
}

// Run patches every quota once every interval until ctx ends; a round
// that takes longer than the interval is followed by the next at once. The
// round under way when ctx ends is finished: requests cut short would only
// fill the log with their cancellation.
func (c *Churner) Run(ctx context.Context, interval time.Duration) Stats {
	var st Stats
	start := time.Now()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for round := 0; ; round++ {
		roundStart := time.Now()
		patches, failed, err := c.Round(context.WithoutCancel(ctx), round)
		st.Rounds++
		st.Patches += patches
		st.Failed += failed
		if err != nil {
			st.LastError = err
		}
		if time.Since(roundStart) > interval {
			st.LateRounds++
		}
		st.Elapsed = time.Since(start)
		select {
		case <-ctx.Done():
			return st
		case <-ticker.C:
		}
	}
}

// Round patches every quota once with round's figures, Workers at a time,
// and returns how many patches were written and how many failed, with the
// last failure.
func (c *Churner) Round(ctx context.Context, round int) (patches, failed int, lastErr error) {
	names := make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(Workers, len(c.Names)) {
		wg.Go(func() {
			for i := range names {
				n, err := c.patch(ctx, c.Names[i], Figure(round, i))
				mu.Lock()
				patches += n
				if err != nil {
					failed++
					lastErr = err
				}
				mu.Unlock()
			}
		})
	}
	for i := range c.Names {
		select {
		case names <- i:
		case <-ctx.Done():
		}
	}
	close(names)
	wg.Wait()
	return patches, failed, lastErr
}

// Figure is the cpu koord-scheduler reports for quota i in a round: it
// moves every round, so every patch is a write.
func Figure(round, i int) string { return fmt.Sprint(1 + (round+i)%97) }

func (c *Churner) patch(ctx context.Context, name, cpu string) (int, error) {
	eq := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name}}
	if err := c.Client.Patch(ctx, eq, wrappers.KoordSchedulerPatch(cpu)); err != nil {
		return 0, fmt.Errorf("patching the figures and status.used of ElasticQuota %s: %w", name, err)
	}
	return PatchesPerQuota, nil
}
