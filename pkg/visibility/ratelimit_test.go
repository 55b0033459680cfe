package visibility

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
	rest := NewHandler(source{}, &Auth{
		Authenticator: authz.NewAuthenticator(tokenUser{}),
		Authorizer:    authz.NewAuthorizer(reviewer),
		Limiter:       limiter(),
	})
	aggregated := NewAggregatedHandler(source{}, headerUser, authz.NewAuthorizer(reviewer), limiter())
	for name, tc := range map[string]struct {
		handler http.Handler
		path    string
		as      func(r *http.Request, user string)
	}{
		"REST API": {handler: rest, path: "/api/queues/q/queueunits", as: func(r *http.Request, user string) {
			r.Header.Set("Authorization", "Bearer "+user)
		}},
		"aggregated API": {handler: aggregated, path: "/apis/visibility.koord-queue.x-k8s.io/v1alpha1/queues/q/queueunits", as: func(r *http.Request, user string) {
			r.Header.Set("X-Test-User", user)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			get := func(user string) *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, tc.path, nil)
				tc.as(req, user)
				tc.handler.ServeHTTP(rec, req)
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
