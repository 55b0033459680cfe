package testenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records its message.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

// TestEventuallyReportsTheLastRealReason: when the last checks fail only
// because the deadline is near (a rate limiter refusing to wait past it),
// the failure shows what the check saw before.
func TestEventuallyReportsTheLastRealReason(t *testing.T) {
	r := &fatalRecorder{TB: t}
	start := time.Now()
	Eventually(r, 300*time.Millisecond, func(ctx context.Context) error {
		if time.Since(start) < 100*time.Millisecond {
			return errors.New("unit phase Enqueued (waiting for its Queue)")
		}
		return errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
	})
	if !strings.Contains(r.msg, "waiting for its Queue") {
		t.Errorf("Eventually failed with %q, want the last real reason", r.msg)
	}
}
