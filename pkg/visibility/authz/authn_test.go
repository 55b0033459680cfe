package authz

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// testReviewer accepts the tokens of users and counts the TokenReviews;
// with release set, each review waits until release is closed or its
// context ends.
type testReviewer struct {
	users   map[string]User
	release chan struct{}
	reviews atomic.Int64
}

func (r *testReviewer) ReviewToken(ctx context.Context, token string) (User, bool, error) {
	r.reviews.Add(1)
	if r.release != nil {
		select {
		case <-r.release:
		case <-ctx.Done():
			return User{}, false, ctx.Err()
		}
	}
	u, ok := r.users[token]
	return u, ok, nil
}

// maxAnswers is how many answers the cache may hold (authn.go): those of
// the reviews of two TTLs.
const maxAnswers = ReviewBurst + RenewBurst + (ReviewRate+RenewRate)*2*int(DefaultTTL/time.Second)

// flood sends requests requests a second for seconds seconds, the i-th of
// second s from the client address and with the token request gives, and
// counts the answers; after each second, known (if not empty) is sent from
// 198.51.100.7 and counted as accepted if it is.
func flood(t *testing.T, a *Authenticator, clk *clocktesting.FakePassiveClock, seconds, requests int, request func(s, i int) (client, token string), known string) (refused, tooMany, accepted int) {
	t.Helper()
	ctx := context.Background()
	for s := range seconds {
		clk.SetTime(time.Unix(int64(s), 0))
		for i := range requests {
			client, token := request(s, i)
			_, ok, err := a.Authenticate(ctx, client, token)
			switch {
			case errors.Is(err, ErrTooManyReviews):
				tooMany++
			case err != nil:
				t.Fatal(err)
			case ok:
				t.Fatalf("token %q accepted", token)
			default:
				refused++
			}
		}
		if known != "" {
			if _, ok, err := a.Authenticate(ctx, "198.51.100.7", known); ok && err == nil {
				accepted++
			}
		}
		if got := len(a.answers); got > maxAnswers {
			t.Fatalf("second %d: %d answers cached, want at most %d", s, got, maxAnswers)
		}
	}
	return refused, tooMany, accepted
}

// TestUnknownTokensCostBoundedReviews: tokens nobody knows cost at most
// ClientReviewBurst TokenReviews at once from one client address, and
// ReviewBurst from all of them, then ClientReviewRate and ReviewRate a
// second; one refused token sent again costs one review a TTL; the cache
// stays within its bound.
func TestUnknownTokensCostBoundedReviews(t *testing.T) {
	type outcome struct{ Reviews, Refused, TooMany int }
	const requests = 200
	newToken := func(s, i int) string { return fmt.Sprintf("t-%d-%d", s, i) }
	cases := map[string]struct {
		request func(s, i int) (client, token string)
		seconds int
		want    outcome
	}{
		"one client, a new token each time": {
			request: func(s, i int) (string, string) { return "192.0.2.1", newToken(s, i) },
			seconds: 1,
			want:    outcome{Reviews: ClientReviewBurst, Refused: ClientReviewBurst, TooMany: requests - ClientReviewBurst},
		},
		"one client, a new token each time, for a minute": {
			request: func(s, i int) (string, string) { return "192.0.2.1", newToken(s, i) },
			seconds: 60,
			want: outcome{
				Reviews: ClientReviewBurst + 59*ClientReviewRate, Refused: ClientReviewBurst + 59*ClientReviewRate,
				TooMany: 60*requests - ClientReviewBurst - 59*ClientReviewRate,
			},
		},
		"a new client address and token each time": {
			request: func(s, i int) (string, string) { return fmt.Sprintf("10.0.0.%d", i), newToken(s, i) },
			seconds: 1,
			want:    outcome{Reviews: ReviewBurst, Refused: ReviewBurst, TooMany: requests - ReviewBurst},
		},
		"a new client address and token each time, for a minute": {
			request: func(s, i int) (string, string) { return fmt.Sprintf("10.0.%d.%d", s, i), newToken(s, i) },
			seconds: 60,
			want: outcome{
				Reviews: ReviewBurst + 59*ReviewRate, Refused: ReviewBurst + 59*ReviewRate,
				TooMany: 60*requests - ReviewBurst - 59*ReviewRate,
			},
		},
		"one refused token, sent again and again": {
			request: func(int, int) (string, string) { return "192.0.2.1", "stolen" },
			seconds: 30,
			want:    outcome{Reviews: 3, Refused: 30 * requests}, // at 0, 10 and 20 s: the TTL
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
			r := &testReviewer{}
			a := NewAuthenticator(r, WithClock(clk))
			var got outcome
			got.Refused, got.TooMany, _ = flood(t, a, clk, tc.seconds, requests, tc.request, "")
			got.Reviews = int(r.reviews.Load())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAKnownTokenIsServedThroughAFlood: while unknown tokens from many
// addresses take every TokenReview the bounds allow, a token accepted
// before is still accepted every second, reviewed again once a TTL.
func TestAKnownTokenIsServedThroughAFlood(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	r := &testReviewer{users: map[string]User{"t-alice": {Name: "alice"}}}
	a := NewAuthenticator(r, WithClock(clk))
	if _, ok, err := a.Authenticate(context.Background(), "198.51.100.7", "t-alice"); !ok || err != nil {
		t.Fatalf("alice's token: %v %v", ok, err)
	}
	_, _, accepted := flood(t, a, clk, 60, 200, func(s, i int) (string, string) {
		return fmt.Sprintf("10.0.%d.%d", s, i), fmt.Sprintf("t-%d-%d", s, i)
	}, "t-alice")
	if accepted != 60 {
		t.Errorf("alice's token accepted %d times in 60 s of flood, want 60", accepted)
	}
	// The flood got what the bounds allow, less what alice's first review
	// took; alice's token was reviewed again every TTL (at 10, 20, ... 50 s).
	if want := ReviewBurst - 1 + 59*ReviewRate + 1 + 5; int(r.reviews.Load()) != want {
		t.Errorf("%d TokenReviews, want %d", r.reviews.Load(), want)
	}
}

// TestRenewalsAreBounded: a thousand callers with valid tokens of their
// own, each sending it once a second from its own address, are accepted as
// fast as ReviewRate allows, then reviewed again once a TTL within
// RenewRate: no more TokenReviews than both bounds give, and no more
// answers cached than two TTLs of them.
func TestRenewalsAreBounded(t *testing.T) {
	const callers, seconds = 1000, 60
	users := map[string]User{}
	for i := range callers {
		users[fmt.Sprint("t", i)] = User{Name: fmt.Sprint("user-", i)}
	}
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	r := &testReviewer{users: users}
	a := NewAuthenticator(r, WithClock(clk))
	ctx := context.Background()
	accepted := 0
	for s := range seconds {
		clk.SetTime(time.Unix(int64(s), 0))
		for i := range callers {
			if _, ok, err := a.Authenticate(ctx, fmt.Sprint("10.0.0.", i), fmt.Sprint("t", i)); ok {
				accepted++
			} else if !errors.Is(err, ErrTooManyReviews) {
				t.Fatalf("caller %d: %v %v", i, ok, err)
			}
		}
		if got := len(a.answers); got > maxAnswers {
			t.Fatalf("second %d: %d answers cached, want at most %d", s, got, maxAnswers)
		}
	}
	if max := ReviewBurst + RenewBurst + (ReviewRate+RenewRate)*(seconds-1); int(r.reviews.Load()) > max {
		t.Errorf("%d TokenReviews in %d s, want at most %d", r.reviews.Load(), seconds, max)
	}
	if accepted == 0 {
		t.Error("no token accepted")
	}
}

// TestConcurrentRequestsWithOneTokenCostOneReview: a tenant whose first
// calls come all at once, before its token's review is answered, waits for
// that one review; it does not spend its address's bound, which tenants
// behind the same address (a proxy, a port-forward) share.
func TestConcurrentRequestsWithOneTokenCostOneReview(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &testReviewer{release: make(chan struct{}),
			users: map[string]User{"t-flood": {Name: "flooder"}, "t-calm": {Name: "calm"}}}
		a := NewAuthenticator(r, WithClock(clocktesting.NewFakePassiveClock(time.Unix(0, 0))))
		const calls = 50
		var accepted, tooMany atomic.Int64
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				_, ok, err := a.Authenticate(context.Background(), "192.0.2.1", "t-flood")
				switch {
				case errors.Is(err, ErrTooManyReviews):
					tooMany.Add(1)
				case err != nil:
					t.Error(err)
				case ok:
					accepted.Add(1)
				}
			})
		}
		synctest.Wait() // every call waits on a review
		close(r.release)
		wg.Wait()
		got := map[string]int64{"reviews": r.reviews.Load(), "accepted": accepted.Load(), "too many": tooMany.Load()}
		if diff := cmp.Diff(map[string]int64{"reviews": 1, "accepted": calls, "too many": 0}, got); diff != "" {
			t.Errorf("%d concurrent calls with one unknown token (-want +got):\n%s", calls, diff)
		}
		if _, ok, err := a.Authenticate(context.Background(), "192.0.2.1", "t-calm"); !ok || err != nil {
			t.Errorf("another tenant's token from the same address: accepted %v, %v; want it reviewed and accepted", ok, err)
		}
	})
}

// TestACallerLeavingDoesNotFailThoseThatJoinedItsReview: a tenant's first
// call, whose review is on its way, goes away (its client hangs up); its
// other calls with the same token, which joined that review, still get
// the answer, and the review is not asked again.
func TestACallerLeavingDoesNotFailThoseThatJoinedItsReview(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &testReviewer{release: make(chan struct{}), users: map[string]User{"t-alice": {Name: "alice"}}}
		a := NewAuthenticator(r, WithClock(clocktesting.NewFakePassiveClock(time.Unix(0, 0))))
		first, hangUp := context.WithCancel(context.Background())
		var firstErr error
		var wg sync.WaitGroup
		wg.Go(func() { _, _, firstErr = a.Authenticate(first, "192.0.2.1", "t-alice") })
		synctest.Wait() // the first call's review is on its way
		var got User
		var ok bool
		var err error
		wg.Go(func() { got, ok, err = a.Authenticate(context.Background(), "192.0.2.1", "t-alice") })
		synctest.Wait() // the second call joined it
		hangUp()
		synctest.Wait()
		close(r.release)
		wg.Wait()
		if !errors.Is(firstErr, context.Canceled) {
			t.Errorf("the call that hung up: %v, want %v", firstErr, context.Canceled)
		}
		if !ok || err != nil || got.Name != "alice" {
			t.Errorf("the call that joined its review: %+v, accepted %v, %v; want alice accepted", got, ok, err)
		}
		if n := r.reviews.Load(); n != 1 {
			t.Errorf("%d TokenReviews, want 1", n)
		}
	})
}

// TestATokenReviewIsBounded: a TokenReview the API server does not answer
// ends after TokenReviewTimeout, with an error, for a caller that waits
// longer.
func TestATokenReviewIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &testReviewer{release: make(chan struct{}), users: map[string]User{"t-alice": {Name: "alice"}}}
		a := NewAuthenticator(r, WithClock(clocktesting.NewFakePassiveClock(time.Unix(0, 0))))
		start := time.Now()
		_, _, err := a.Authenticate(context.Background(), "192.0.2.1", "t-alice")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a review never answered: %v, want %v", err, context.DeadlineExceeded)
		}
		if waited := time.Since(start); waited != TokenReviewTimeout {
			t.Errorf("waited %v, want %v", waited, TokenReviewTimeout)
		}
	})
}
