package authz

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestReviewTokenAudiences checks what KubeReviewer asks the API server
// (TokenReview spec.audiences) and which answers it accepts: with audiences
// configured, only a review that names one of them in status.audiences, as
// k8s.io/apiserver's webhook token authenticator does.
func TestReviewTokenAudiences(t *testing.T) {
	alice := authenticationv1.UserInfo{Username: "alice", UID: "1", Groups: []string{"g"}}
	cases := map[string]struct {
		audiences []string
		// The API server's answer.
		authenticated bool
		gotAudiences  []string
		wantAsked     []string
		wantOK        bool
	}{
		"no audience configured: the API server's own, any ordinary token": {
			authenticated: true,
			wantOK:        true,
		},
		"a token the API server refuses": {
			authenticated: false,
		},
		"a token for a configured audience": {
			audiences:     []string{"koord-queue", "other"},
			authenticated: true, gotAudiences: []string{"koord-queue"},
			wantAsked: []string{"koord-queue", "other"},
			wantOK:    true,
		},
		"a review naming only audiences not asked for is refused": {
			audiences:     []string{"koord-queue"},
			authenticated: true, gotAudiences: []string{"https://kubernetes.default.svc"},
			wantAsked: []string{"koord-queue"},
		},
		"a review naming no audience (an authenticator that ignores them) is refused": {
			audiences:     []string{"koord-queue"},
			authenticated: true,
			wantAsked:     []string{"koord-queue"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var asked []string
			c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.Scheme).Build(), interceptor.Funcs{
				Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
					review := obj.(*authenticationv1.TokenReview)
					asked = review.Spec.Audiences
					review.Status = authenticationv1.TokenReviewStatus{Authenticated: tc.authenticated, Audiences: tc.gotAudiences}
					if tc.authenticated {
						review.Status.User = alice
					}
					return nil
				},
			})
			user, ok, err := KubeReviewer{Client: c, Audiences: tc.audiences}.ReviewToken(context.Background(), "token")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantAsked, asked); diff != "" {
				t.Errorf("spec.audiences asked (-want +got):\n%s", diff)
			}
			if ok != tc.wantOK {
				t.Errorf("authenticated %t, want %t", ok, tc.wantOK)
			}
			var want User
			if tc.wantOK {
				want = User{Name: "alice", UID: "1", Groups: []string{"g"}, Extra: map[string][]string{}}
			}
			if diff := cmp.Diff(want, user); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
		})
	}
}
