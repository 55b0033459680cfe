package visibility

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

// tokenUser names the user a token is, the token itself.
type tokenUser struct{}

func (tokenUser) ReviewToken(_ context.Context, token string) (authz.User, bool, error) {
	return authz.User{Name: token}, true, nil
}

// TestHandlersLimitEachUser: both APIs answer a user over their rate a 429
// with Retry-After, while another user is still served.
func TestHandlersLimitEachUser(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	limiter := func() *authz.RateLimiter { return authz.NewRateLimiter(1, 2, authz.WithClock(clk)) }
	reviewer := namespaceReviewer{"tenant": {"mine"}, "other": {"mine"}}
	rest := func() http.Handler {
		return NewHandler(source{}, &Auth{
			Authenticator: authz.NewAuthenticator(tokenUser{}),
			Authorizer:    authz.NewAuthorizer(reviewer),
			Limiter:       limiter(),
		})
	}
	aggregated := func() http.Handler {
		return NewAggregatedHandler(source{}, headerUser, authz.NewAuthorizer(reviewer), limiter())
	}
	for name, tc := range map[string]struct {
		handler func() http.Handler
		path    string
		as      func(r *http.Request, user string)
	}{
		"REST API": {handler: rest, path: "/api/queues/q/queueunits", as: func(r *http.Request, user string) {
			r.Header.Set("Authorization", "Bearer "+user)
		}},
		"REST API, a topology's domains": {handler: rest, path: "/api/topologies/t/domains", as: func(r *http.Request, user string) {
			r.Header.Set("Authorization", "Bearer "+user)
		}},
		"aggregated API": {handler: aggregated, path: "/apis/visibility.koord-queue.x-k8s.io/v1alpha1/queues/q/queueunits", as: func(r *http.Request, user string) {
			r.Header.Set("X-Test-User", user)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			h := tc.handler()
			get := func(user string) *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, tc.path, nil)
				tc.as(req, user)
				h.ServeHTTP(rec, req)
				return rec
			}
			var codes []int
			for range 3 {
				codes = append(codes, get("tenant").Code)
			}
			if diff := cmp.Diff([]int{200, 200, 429}, codes); diff != "" {
				t.Errorf("the tenant's three requests at burst 2 (-want +got):\n%s", diff)
			}
			if rec := get("tenant"); rec.Header().Get("Retry-After") == "" {
				t.Errorf("a 429 without Retry-After: %d %v", rec.Code, rec.Header())
			}
			if code := get("other").Code; code != 200 {
				t.Errorf("another user got %d while only the tenant was over its rate", code)
			}
		})
	}
}

// refusingReviewer refuses every token, and counts the TokenReviews.
type refusingReviewer struct{ reviews atomic.Int32 }

func (r *refusingReviewer) ReviewToken(context.Context, string) (authz.User, bool, error) {
	r.reviews.Add(1)
	return authz.User{}, false, nil
}

// TestUnknownTokensAreLimitedBeforeTheirReview: a client sending a new
// unknown bearer token with every request, to either API, gets 401s for
// the first authz.ClientReviewBurst (each a TokenReview), then 429s with
// Retry-After and no TokenReview; the same from many clients stops at
// authz.ReviewBurst reviews; an unknown token sent again is not reviewed
// again.
func TestUnknownTokensAreLimitedBeforeTheirReview(t *testing.T) {
	const requests = 100
	newAuthn := func() (*authz.Authenticator, *refusingReviewer) {
		r := &refusingReviewer{}
		return authz.NewAuthenticator(r, authz.WithClock(clocktesting.NewFakePassiveClock(time.Unix(0, 0)))), r
	}
	rest := func(tokens *authz.Authenticator) http.Handler {
		return NewHandler(source{}, &Auth{Authenticator: tokens, Authorizer: authz.NewAuthorizer(namespaceReviewer{})})
	}
	aggregated := func(tokens *authz.Authenticator) http.Handler {
		// As NewDelegatedAuthentication chains them: the front proxy (none
		// here), then bearer tokens.
		authn := union.New(authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
			return nil, false, nil
		}), bearertoken.New(tokenAuthenticator{tokens}))
		return NewAggregatedHandler(source{}, authn, authz.NewAuthorizer(namespaceReviewer{}), nil)
	}
	type outcome struct{ Reviews, Unauthorized, TooMany int }
	for name, tc := range map[string]struct {
		handler func(*authz.Authenticator) http.Handler
		path    string
		// client and token of the i-th request
		client, token func(i int) string
		want          outcome
	}{
		"REST API, one client, new tokens": {
			handler: rest, path: "/api/queues",
			client: func(int) string { return "192.0.2.1:4000" }, token: func(i int) string { return fmt.Sprint("t", i) },
			want: outcome{Reviews: authz.ClientReviewBurst, Unauthorized: authz.ClientReviewBurst, TooMany: requests - authz.ClientReviewBurst},
		},
		"REST API, one client, new tokens, each on a new connection": {
			handler: rest, path: "/api/queues",
			client: func(i int) string { return fmt.Sprintf("192.0.2.1:%d", 4000+i) }, token: func(i int) string { return fmt.Sprint("t", i) },
			want: outcome{Reviews: authz.ClientReviewBurst, Unauthorized: authz.ClientReviewBurst, TooMany: requests - authz.ClientReviewBurst},
		},
		"REST API, many clients, new tokens": {
			handler: rest, path: "/api/queues",
			client: func(i int) string { return fmt.Sprintf("10.0.0.%d:4000", i) }, token: func(i int) string { return fmt.Sprint("t", i) },
			want: outcome{Reviews: authz.ReviewBurst, Unauthorized: authz.ReviewBurst, TooMany: requests - authz.ReviewBurst},
		},
		"REST API, one unknown token again and again": {
			handler: rest, path: "/api/queues",
			client: func(i int) string { return fmt.Sprintf("10.0.0.%d:4000", i) }, token: func(int) string { return "stolen" },
			want: outcome{Reviews: 1, Unauthorized: requests},
		},
		"aggregated API, one client, new tokens": {
			handler: aggregated, path: "/apis/visibility.koord-queue.x-k8s.io/v1alpha1/queues/q/queueunits",
			client: func(int) string { return "192.0.2.1:4000" }, token: func(i int) string { return fmt.Sprint("t", i) },
			want: outcome{Reviews: authz.ClientReviewBurst, Unauthorized: authz.ClientReviewBurst, TooMany: requests - authz.ClientReviewBurst},
		},
		"aggregated API, many clients, new tokens": {
			handler: aggregated, path: "/apis/visibility.koord-queue.x-k8s.io/v1alpha1/queues/q/queueunits",
			client: func(i int) string { return fmt.Sprintf("10.0.0.%d:4000", i) }, token: func(i int) string { return fmt.Sprint("t", i) },
			want: outcome{Reviews: authz.ReviewBurst, Unauthorized: authz.ReviewBurst, TooMany: requests - authz.ReviewBurst},
		},
	} {
		t.Run(name, func(t *testing.T) {
			tokens, reviewer := newAuthn()
			h := tc.handler(tokens)
			var got outcome
			for i := range requests {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, tc.path, nil)
				req.RemoteAddr = tc.client(i)
				req.Header.Set("Authorization", "Bearer "+tc.token(i))
				h.ServeHTTP(rec, req)
				switch rec.Code {
				case http.StatusUnauthorized:
					got.Unauthorized++
				case http.StatusTooManyRequests:
					got.TooMany++
					if rec.Header().Get("Retry-After") == "" {
						t.Errorf("request %d: a 429 without Retry-After", i)
					}
				default:
					t.Fatalf("request %d: %d %s", i, rec.Code, rec.Body)
				}
			}
			got.Reviews = int(reviewer.reviews.Load())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
