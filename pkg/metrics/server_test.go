package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

// TestMetricsAreServedOnlyToReaders: /metrics answers a caller whose
// bearer token the API server accepts and whom a SubjectAccessReview of
// the non-resource URL allows; a caller without a token, or with one the
// API server refuses, gets a 401 and a challenge, one not allowed a 403,
// and a failed review a 500. The reviews are asked as the API server's
// delegated authorization asks them: the lower-case method on the path.
func TestMetricsAreServedOnlyToReaders(t *testing.T) {
	type seen struct {
		Status    int
		Challenge string
		Asked     *authorizationv1.NonResourceAttributes
	}
	cases := map[string]struct {
		token    string
		method   string
		sarFails bool
		want     seen
		wantBody string
	}{
		"no token": {want: seen{Status: http.StatusUnauthorized, Challenge: `Bearer realm="koord-queue"`}},
		"a token the API server refuses": {token: "stolen",
			want: seen{Status: http.StatusUnauthorized, Challenge: `Bearer realm="koord-queue"`}},
		"a user who may not get /metrics": {token: "t-tenant",
			want: seen{Status: http.StatusForbidden, Asked: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}},
		"a user who may get /metrics": {token: "t-prometheus",
			want: seen{Status: http.StatusOK, Asked: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}, wantBody: "metrics"},
		"a user who may get /metrics, posting": {token: "t-prometheus", method: http.MethodPost,
			want: seen{Status: http.StatusForbidden, Asked: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "post"}}},
		"an access review that fails": {token: "t-prometheus", sarFails: true,
			want: seen{Status: http.StatusInternalServerError, Asked: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got seen
			c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.Scheme).Build(), interceptor.Funcs{
				Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
					switch review := obj.(type) {
					case *authenticationv1.TokenReview:
						users := map[string]string{"t-tenant": "tenant", "t-prometheus": "system:serviceaccount:monitoring:prometheus"}
						if u, ok := users[review.Spec.Token]; ok {
							review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: u}}
						}
					case *authorizationv1.SubjectAccessReview:
						got.Asked = review.Spec.NonResourceAttributes
						if review.Spec.ResourceAttributes != nil {
							t.Errorf("asked about a resource: %+v", review.Spec.ResourceAttributes)
						}
						if tc.sarFails {
							return errors.New("the API server is away")
						}
						a := review.Spec.NonResourceAttributes
						review.Status.Allowed = review.Spec.User == "system:serviceaccount:monitoring:prometheus" && a.Verb == "get" && a.Path == "/metrics"
					}
					return nil
				},
			})
			reviewer := authz.KubeReviewer{Client: c}
			handler, err := filter(authz.NewAuthenticator(reviewer), authz.NewAuthorizer(reviewer))(logr.Discard(),
				http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
			if err != nil {
				t.Fatal(err)
			}
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, "https://koord-queue:10259/metrics", nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			got.Status, got.Challenge = rec.Code, rec.Header().Get("WWW-Authenticate")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			switch body := rec.Body.String(); {
			case tc.wantBody != "" && body != tc.wantBody:
				t.Errorf("body %q, want %q", body, tc.wantBody)
			case tc.wantBody == "" && body == "metrics":
				t.Error("the metrics were served")
			}
		})
	}
}
