package authz

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Per user, the visibility APIs answer DefaultRate requests a second, in
// bursts of up to DefaultBurst: a dashboard polling every few seconds stays
// far below it, a loop of calls by one tenant cannot take the admission
// lock from everyone else.
const (
	DefaultRate  = 20
	DefaultBurst = 40
)

// MaxReviewsPerRequest bounds the SubjectAccessReviews one request may
// cause: units of namespaces past the first MaxReviewsPerRequest that the
// caller may not list everywhere are redacted without asking.
const MaxReviewsPerRequest = 64

// RateLimiter gives each user (every field of their identity) a token
// bucket of its own.
type RateLimiter struct {
	clock clock.PassiveClock
	limit rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[string]*bucket
	// pruned is when idle buckets were last dropped.
	pruned time.Time
}

type bucket struct {
	limiter  *rate.Limiter
	lastSeen time.Time
}

// NewRateLimiter returns a RateLimiter of perSecond requests a second and
// bursts of burst per user; WithClock sets its clock.
func NewRateLimiter(perSecond float64, burst int, opts ...Option) *RateLimiter {
	cfg := NewAuthorizer(nil, opts...)
	return &RateLimiter{clock: cfg.clock, limit: rate.Limit(perSecond), burst: burst, buckets: map[string]*bucket{}}
}

// Allow says whether user may make a request now, and takes it from the
// user's bucket if so.
func (l *RateLimiter) Allow(user User) bool {
	return l.allow(identity(user))
}

// allow is Allow for the bucket of key.
func (l *RateLimiter) allow(key string) bool {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		// Buckets full again (idle for burst/limit) are dropped when a new
		// key comes, at most once in that time (a flood of new keys does
		// not look at every bucket each time), so the map holds the keys of
		// the last few seconds.
		idle := time.Duration(float64(l.burst) / float64(l.limit) * float64(time.Second))
		if now.Sub(l.pruned) > idle {
			for k, other := range l.buckets {
				if now.Sub(other.lastSeen) > idle {
					delete(l.buckets, k)
				}
			}
			l.pruned = now
		}
		b = &bucket{limiter: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = b
	}
	b.lastSeen = now
	return b.limiter.AllowN(now, 1)
}

// OneAtATime lets each user (every field of their identity) have one
// request of a kind in flight: for requests costly enough that even the
// rate of RateLimiter is too many at once.
type OneAtATime struct {
	mu   sync.Mutex
	busy map[string]struct{}
}

// NewOneAtATime returns a OneAtATime with no request in flight.
func NewOneAtATime() *OneAtATime { return &OneAtATime{busy: map[string]struct{}{}} }

// Start says whether user has no request in flight and, if so, marks one
// until done is called.
func (o *OneAtATime) Start(user User) (done func(), ok bool) {
	key := identity(user)
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, busy := o.busy[key]; busy {
		return nil, false
	}
	o.busy[key] = struct{}{}
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.busy, key)
	}, true
}
