package visibility

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

// page is which of a queue's units a request asks for; the REST API and
// the aggregated API read it from the same query parameters.
type page struct {
	phase  schedulingv1alpha1.QueueUnitPhase
	offset int
	limit  int
}

// parsePage reads phase, limit (at least 1, default DefaultLimit; a limit
// above MaxLimit is MaxLimit, as the API server may return fewer items than
// a list's limit: the answer's total, or its continue and
// remainingItemCount, say what is left) and offset (default 0) of query.
func parsePage(query url.Values) (page, error) {
	offset, limit, err := parseBounds(query)
	if err != nil {
		return page{}, err
	}
	phase := schedulingv1alpha1.QueueUnitPhase(query.Get("phase"))
	if phase != "" && !knownPhase(phase) {
		return page{}, fmt.Errorf("phase %q is not a QueueUnit phase", phase)
	}
	return page{phase: phase, offset: offset, limit: limit}, nil
}

// parseBounds reads a page's limit (at least 1, default DefaultLimit, at
// most MaxLimit) and offset (default 0) of query, for every list of the
// API.
func parseBounds(query url.Values) (offset, limit int, err error) {
	limit, err = intParam(query.Get("limit"), DefaultLimit, 1, int(^uint(0)>>1))
	if err != nil {
		return 0, 0, fmt.Errorf("limit: %w", err)
	}
	offset, err = intParam(query.Get("offset"), 0, 0, int(^uint(0)>>1))
	if err != nil {
		return 0, 0, fmt.Errorf("offset: %w", err)
	}
	return offset, min(limit, MaxLimit), nil
}

// units is the page of queue's units, those the caller may not see
// redacted in their place, and how many units there are on every page.
func (p page) units(ctx context.Context, src Source, queue string) ([]api.UnitView, int, error) {
	items, total := src.QueueUnits(queue, p.phase, p.offset, p.limit)
	items, err := authz.RedactUnits(items, visibleOf(ctx))
	if err != nil {
		return nil, 0, err
	}
	return items, total, nil
}

func knownPhase(p schedulingv1alpha1.QueueUnitPhase) bool {
	switch p {
	case schedulingv1alpha1.Enqueued, schedulingv1alpha1.Reserved, schedulingv1alpha1.Dequeued, schedulingv1alpha1.Running,
		schedulingv1alpha1.Succeed, schedulingv1alpha1.Failed, schedulingv1alpha1.SchedReady, schedulingv1alpha1.SchedSucceed,
		schedulingv1alpha1.SchedFailed, schedulingv1alpha1.TimeoutBackoff:
		return true
	}
	return false
}

func intParam(raw string, def, lo, hi int) (int, error) {
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", raw)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is outside [%d, %d]", n, lo, hi)
	}
	return n, nil
}
