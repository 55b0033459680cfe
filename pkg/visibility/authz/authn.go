package authz

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// What a bearer token koord-queue does not know may cost. Every token not
// in the cache is a TokenReview, sent with koord-queue's own client and
// its --qps, which admission writes share: a caller sending a new token on
// every request would otherwise spend that budget, and grow the cache, at
// its own pace. A token is looked up in the cache first (answers, accepted
// or refused, are kept for the TTL), so known tokens, and refused ones sent
// again, cost nothing; only a TokenReview is bounded: per client address,
// then for all callers together. A token accepted within the last two TTLs
// is reviewed again, once its answer is TTL old, within a bound of its own
// (RenewRate), so that a flood of unknown tokens does not lock out the
// callers already known. So there are at most ReviewRate + RenewRate
// TokenReviews a second (and the bursts), and the cache, which holds the
// refusals of the last TTL and the acceptances of the last two, holds at
// most the answers of 2 TTLs of them: 440 at the defaults.
const (
	// ReviewRate and ReviewBurst bound the TokenReviews of tokens not
	// known, of every caller together; RenewRate and RenewBurst those of
	// tokens accepted before. Together, two fifths of the default --qps.
	ReviewRate  = 10
	ReviewBurst = 20
	RenewRate   = 10
	RenewBurst  = 20
	// ClientReviewRate and ClientReviewBurst bound those of tokens not
	// known of one client address (behind a port-forward or a proxy,
	// every caller is one).
	ClientReviewRate  = 2
	ClientReviewBurst = 10
)

// ErrTooManyReviews is the answer to a token not in the cache when a
// TokenReview would exceed the client's or everyone's bound; the caller is
// to try again later.
var ErrTooManyReviews = errors.New("too many tokens to review: slow down")

// TokenReviewTimeout bounds a TokenReview, as the API server bounds those
// of its delegated authentication.
const TokenReviewTimeout = 10 * time.Second

// TokenReviewer authenticates a bearer token (a TokenReview): the user, or
// false for a token the API server does not accept.
type TokenReviewer interface {
	ReviewToken(ctx context.Context, token string) (User, bool, error)
}

// Authenticator caches a TokenReviewer's answers for TTL, keyed by the
// token's hash so that no token is kept in memory, and bounds the
// TokenReviews of tokens it does not know.
type Authenticator struct {
	reviewer TokenReviewer
	clock    clock.PassiveClock
	ttl      time.Duration
	// clients bounds each client address's TokenReviews of unknown
	// tokens, reviews those of all callers, renewals those of tokens
	// accepted before.
	clients  *RateLimiter
	reviews  *rate.Limiter
	renewals *rate.Limiter

	mu      sync.Mutex
	answers map[[sha256.Size]byte]tokenAnswer
	// reviewing joins the requests that bring one token while its review
	// is on its way to that review: a caller's first calls at once cost
	// one TokenReview, not the bound its address shares with others.
	reviewing singleflight.Group
}

type tokenAnswer struct {
	user    User
	ok      bool
	expires time.Time
	// renewing: an acceptance whose renewal is taken.
	renewing bool
}

// NewAuthenticator returns an Authenticator asking r; WithClock and WithTTL
// apply as to an Authorizer.
func NewAuthenticator(r TokenReviewer, opts ...Option) *Authenticator {
	// The options are the Authorizer's: apply them to one to read them.
	cfg := NewAuthorizer(nil, opts...)
	return &Authenticator{
		reviewer: r, clock: cfg.clock, ttl: cfg.ttl,
		clients:  NewRateLimiter(ClientReviewRate, ClientReviewBurst, opts...),
		reviews:  rate.NewLimiter(ReviewRate, ReviewBurst),
		renewals: rate.NewLimiter(RenewRate, RenewBurst),
		answers:  map[[sha256.Size]byte]tokenAnswer{},
	}
}

// Authenticate returns who token, sent from client (its address), belongs
// to, or false; ErrTooManyReviews when it is not in the cache and may not
// be reviewed now. Errors are not cached.
func (a *Authenticator) Authenticate(ctx context.Context, client, token string) (User, bool, error) {
	key := sha256.Sum256([]byte(token))
	now := a.clock.Now()
	a.mu.Lock()
	got, ok := a.answers[key]
	fresh := ok && now.Before(got.expires)
	// An acceptance gives one renewal, whoever takes it: another request
	// with its token meanwhile, or after a renewal that failed, is bounded
	// as an unknown token is.
	renew := ok && !fresh && got.ok && !got.renewing && a.renewals.AllowN(now, 1)
	if renew {
		got.renewing = true
		a.answers[key] = got
	}
	a.mu.Unlock()
	if fresh {
		return got.user, got.ok, nil
	}
	// The review runs on a context of its own: a caller that goes away
	// stops waiting for it, not the callers with the same token that
	// joined it.
	joined := a.reviewing.DoChan(string(key[:]), func() (any, error) {
		if !renew && (!a.clients.allow(client) || !a.reviews.AllowN(now, 1)) {
			return nil, ErrTooManyReviews
		}
		reviewCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), TokenReviewTimeout)
		defer cancel()
		user, valid, err := a.reviewer.ReviewToken(reviewCtx, token)
		if err != nil {
			return nil, fmt.Errorf("reviewing a token: %w", err)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		for k, v := range a.answers {
			if !now.Before(a.forgotten(v)) {
				delete(a.answers, k)
			}
		}
		reviewed := tokenAnswer{user: user, ok: valid, expires: now.Add(a.ttl)}
		a.answers[key] = reviewed
		return reviewed, nil
	})
	var answer singleflight.Result
	select {
	case answer = <-joined:
	case <-ctx.Done():
		return User{}, false, ctx.Err()
	}
	if answer.Err != nil {
		return User{}, false, answer.Err
	}
	reviewed := answer.Val.(tokenAnswer)
	return reviewed.user, reviewed.ok, nil
}

// forgotten is when an answer leaves the cache: a refusal when it expires,
// an acceptance a TTL later, so that its token is still known when it is
// reviewed again.
func (a *Authenticator) forgotten(answer tokenAnswer) time.Time {
	if answer.ok {
		return answer.expires.Add(a.ttl)
	}
	return answer.expires
}
