package testenv

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// DefaultTimeout bounds how long Eventually waits for a controller to act.
const DefaultTimeout = 30 * time.Second

// Eventually polls check until it returns nil, and fails the test with
// check's last error if that does not happen within timeout. Controllers act
// asynchronously; this is how a test waits for them without sleeping, and
// the tests' one way to wait: check's error says what it waits for and what
// it last saw, for the failure to show.
func Eventually(t testing.TB, timeout time.Duration, check func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := check(ctx)
		if err != nil && last != nil && (ctx.Err() != nil || deadlineRefusal(err)) {
			return false, nil // keep the last real reason, not the deadline's
		}
		last = err
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("condition not met within %v: %v", timeout, last)
	}
}

// deadlineRefusal: err says the check could not finish before the deadline,
// as client-go's rate limiter does ("rate: Wait(n=1) would exceed context
// deadline") before the context is even done.
func deadlineRefusal(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "would exceed context deadline")
}
