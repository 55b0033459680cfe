package authz

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// TokenReviewer authenticates a bearer token (a TokenReview): the user, or
// false for a token the API server does not accept.
type TokenReviewer interface {
	ReviewToken(ctx context.Context, token string) (User, bool, error)
}

// Authenticator caches a TokenReviewer's answers for TTL, keyed by the
// token's hash so that no token is kept in memory.
type Authenticator struct {
	reviewer TokenReviewer
	clock    clock.PassiveClock
	ttl      time.Duration

	mu      sync.Mutex
	answers map[[sha256.Size]byte]tokenAnswer
}

type tokenAnswer struct {
	user    User
	ok      bool
	expires time.Time
}

// NewAuthenticator returns an Authenticator asking r; WithClock and WithTTL
// apply as to an Authorizer.
func NewAuthenticator(r TokenReviewer, opts ...Option) *Authenticator {
	// The options are the Authorizer's: apply them to one to read them.
	cfg := NewAuthorizer(nil, opts...)
	return &Authenticator{reviewer: r, clock: cfg.clock, ttl: cfg.ttl, answers: map[[sha256.Size]byte]tokenAnswer{}}
}

// Authenticate returns who token belongs to, or false. Errors are not cached.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (User, bool, error) {
	key := sha256.Sum256([]byte(token))
	now := a.clock.Now()
	a.mu.Lock()
	got, ok := a.answers[key]
	a.mu.Unlock()
	if ok && now.Before(got.expires) {
		return got.user, got.ok, nil
	}
	user, valid, err := a.reviewer.ReviewToken(ctx, token)
	if err != nil {
		return User{}, false, fmt.Errorf("reviewing a token: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, v := range a.answers {
		if !now.Before(v.expires) {
			delete(a.answers, k)
		}
	}
	a.answers[key] = tokenAnswer{user: user, ok: valid, expires: now.Add(a.ttl)}
	return user, valid, nil
}
