// Package authz decides what a caller of the visibility API may see: the
// QueueUnits of a namespace are named only to a caller who may list
// QueueUnits there (a SubjectAccessReview, asked through Reviewer and its
// answers cached briefly). Units in other namespaces still count in totals
// and positions, redacted by Redact, so a tenant learns how many units wait
// ahead of theirs but not whose they are.
//
// The package has no client: Reviewer and Authenticator are interfaces the
// visibility server implements with TokenReview and SubjectAccessReview.
package authz

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// DefaultTTL is how long an answer is reused: short, so a RoleBinding
// removed takes effect within seconds, long enough that a dashboard
// refreshing every few seconds asks the API server once per namespace.
const DefaultTTL = 10 * time.Second

// User is who asks, as TokenReview (or the aggregator's request headers)
// names them.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Attributes are what a SubjectAccessReview asks about: a verb on a
// resource (and subresource) of a group, in a namespace ("" for every
// namespace, or a cluster-scoped resource), by name ("" for any); or, with
// Path, a verb on a URL path that is no resource (/metrics).
type Attributes struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	Path        string
}

// ListQueueUnits are the attributes of listing QueueUnits in namespace
// ("" for every namespace: a ClusterRoleBinding).
func ListQueueUnits(namespace string) Attributes {
	return Attributes{Verb: "list", Group: schedulingv1alpha1.GroupVersion.Group, Resource: "queueunits", Namespace: namespace}
}

// Reviewer answers whether user may do what attrs say.
type Reviewer interface {
	Allowed(ctx context.Context, user User, attrs Attributes) (bool, error)
}

// Authorizer caches a Reviewer's answers for TTL.
type Authorizer struct {
	reviewer Reviewer
	clock    clock.PassiveClock
	ttl      time.Duration

	mu      sync.Mutex
	answers map[answerKey]answer
}

type answerKey struct {
	user  string // the user's identity, every field, as one string
	attrs Attributes
}

type answer struct {
	allowed bool
	expires time.Time
}

// Option configures an Authorizer.
type Option func(*Authorizer)

// WithClock sets the clock answers expire by.
func WithClock(c clock.PassiveClock) Option { return func(a *Authorizer) { a.clock = c } }

// WithTTL sets how long an answer is reused.
func WithTTL(ttl time.Duration) Option { return func(a *Authorizer) { a.ttl = ttl } }

// NewAuthorizer returns an Authorizer asking r.
func NewAuthorizer(r Reviewer, opts ...Option) *Authorizer {
	a := &Authorizer{reviewer: r, clock: clock.RealClock{}, ttl: DefaultTTL, answers: map[answerKey]answer{}}
	for _, o := range opts {
		o(a)
	}
	return a
}

// CanList says whether user may list QueueUnits in namespace: allowed
// everywhere, or in that namespace. Errors are not cached.
func (a *Authorizer) CanList(ctx context.Context, user User, namespace string) (bool, error) {
	all, err := a.Allowed(ctx, user, ListQueueUnits(""))
	if err != nil || all || namespace == "" {
		return all, err
	}
	return a.Allowed(ctx, user, ListQueueUnits(namespace))
}

// Allowed says whether user may do what attrs say, the answer cached for
// the TTL. Errors are not cached.
func (a *Authorizer) Allowed(ctx context.Context, user User, attrs Attributes) (bool, error) {
	key := answerKey{user: identity(user), attrs: attrs}
	now := a.clock.Now()
	a.mu.Lock()
	got, ok := a.answers[key]
	a.mu.Unlock()
	if ok && now.Before(got.expires) {
		return got.allowed, nil
	}
	allowed, err := a.reviewer.Allowed(ctx, user, attrs)
	if err != nil {
		return false, fmt.Errorf("reviewing whether %s may %s %s: %w", user.Name, attrs.Verb, attrs.describe(), err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Expired answers go when a new one is written, so the map holds at
	// most the answers of the last TTL.
	for k, v := range a.answers {
		if !now.Before(v.expires) {
			delete(a.answers, k)
		}
	}
	a.answers[key] = answer{allowed: allowed, expires: now.Add(a.ttl)}
	return allowed, nil
}

// describe names the resource attrs ask about, for messages.
func (attrs Attributes) describe() string {
	if attrs.Path != "" {
		return attrs.Path
	}
	r := attrs.Resource
	if attrs.Group != "" {
		r += "." + attrs.Group
	}
	if attrs.Subresource != "" {
		r += "/" + attrs.Subresource
	}
	if attrs.Name != "" {
		r += " " + attrs.Name
	}
	if attrs.Namespace != "" {
		r += " in " + attrs.Namespace
	}
	return r
}

// identity is a cache key that tells apart users differing in any field
// the authorizer sees.
func identity(u User) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q %q %q", u.Name, u.UID, u.Groups)
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %q=%q", k, u.Extra[k])
	}
	return b.String()
}

// Visible answers, for one request, whether the caller may see a
// namespace's units; it asks the Authorizer once per namespace.
type Visible func(namespace string) (bool, error)

// ForUser returns the Visible of user's request. It asks about at most
// MaxReviewsPerRequest namespaces; a caller who may not list QueueUnits
// everywhere sees those of further namespaces redacted.
func (a *Authorizer) ForUser(ctx context.Context, user User) Visible {
	seen := map[string]bool{}
	return func(namespace string) (bool, error) {
		if v, ok := seen[namespace]; ok {
			return v, nil
		}
		if len(seen) >= MaxReviewsPerRequest {
			return a.Allowed(ctx, user, ListQueueUnits(""))
		}
		v, err := a.CanList(ctx, user, namespace)
		if err != nil {
			return false, err
		}
		seen[namespace] = v
		return v, nil
	}
}

// Everyone is the Visible of the open mode: every namespace.
func Everyone(string) (bool, error) { return true, nil }

// RedactUnits returns units with those the caller may not see redacted.
func RedactUnits(units []api.UnitView, visible Visible) ([]api.UnitView, error) {
	out := make([]api.UnitView, 0, len(units))
	for _, u := range units {
		ok, err := visible(u.Namespace)
		if err != nil {
			return nil, err
		}
		if !ok {
			u = Redact(u)
		}
		out = append(out, u)
	}
	return out, nil
}

// Redact is what a unit of a namespace the caller may not see shows: its
// queue, phase, priority, position and forecast, so the caller knows what
// waits ahead of theirs, in what order and until when; not its namespace,
// name, request, quota rule, partial admission or reason, which name or
// size another tenant's job.
func Redact(u api.UnitView) api.UnitView {
	return api.UnitView{Queue: u.Queue, Phase: u.Phase, Priority: u.Priority, Position: u.Position, Redacted: true,
		EstimatedAdmissionTime: u.EstimatedAdmissionTime, EstimateBasis: u.EstimateBasis}
}

// FilterAdmissions keeps the admissions of namespaces the caller may see:
// a list of recent admissions has no position to keep.
func FilterAdmissions(records []api.AdmissionRecord, visible Visible) ([]api.AdmissionRecord, error) {
	out := make([]api.AdmissionRecord, 0, len(records))
	for _, r := range records {
		ok, err := visible(r.Namespace)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}
