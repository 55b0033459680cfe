package authz

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Refusal is why an HTTP request is not served: the status to answer,
// what to say, and the error behind a 500 (for the log).
type Refusal struct {
	Status  int
	Message string
	Err     error
}

// WriteHeaders sets the headers of the refusal's status: a challenge for
// a 401, a Retry-After for a 429.
func (f *Refusal) WriteHeaders(w http.ResponseWriter) {
	switch f.Status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="koord-queue"`)
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
	}
}

// AuthenticateRequest names the user of r's bearer token, or says why r
// is refused: no token or one the API server does not accept (401), too
// many tokens to review from r's address or from everyone (429), the
// TokenReview failed (500).
func (a *Authenticator) AuthenticateRequest(r *http.Request) (User, *Refusal) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return User{}, &Refusal{Status: http.StatusUnauthorized, Message: "a bearer token is required"}
	}
	user, ok, err := a.Authenticate(r.Context(), ClientAddress(r), token)
	switch {
	case errors.Is(err, ErrTooManyReviews):
		return User{}, &Refusal{Status: http.StatusTooManyRequests, Message: "authenticating: " + err.Error()}
	case err != nil:
		return User{}, &Refusal{Status: http.StatusInternalServerError, Message: "authenticating: " + err.Error(), Err: err}
	case !ok:
		return User{}, &Refusal{Status: http.StatusUnauthorized, Message: "the token is not valid"}
	}
	return user, nil
}

// ClientAddress is the address r came from, without its port: what
// TokenReviews are bounded by, per client (Authenticator).
func ClientAddress(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// AuthorizePath says why user is refused verb on the URL path that is no
// resource (403, or 500 when the SubjectAccessReview failed), nil when
// allowed.
func (a *Authorizer) AuthorizePath(ctx context.Context, user User, verb, path string) *Refusal {
	allowed, err := a.Allowed(ctx, user, Attributes{Verb: verb, Path: path})
	switch {
	case err != nil:
		return &Refusal{Status: http.StatusInternalServerError, Message: "authorizing: " + err.Error(), Err: err}
	case !allowed:
		return &Refusal{Status: http.StatusForbidden, Message: fmt.Sprintf("%s may not %s %s", user.Name, verb, path)}
	}
	return nil
}
