package authz

import (
	"context"
	"fmt"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KubeReviewer asks the API server: TokenReview for who a token is,
// SubjectAccessReview for whether they may do something.
type KubeReviewer struct {
	Client client.Client
	// Audiences a token must be meant for (TokenReview spec.audiences);
	// empty asks for the API server's own, which ordinary ServiceAccount
	// tokens carry.
	Audiences []string
}

var (
	_ TokenReviewer = KubeReviewer{}
	_ Reviewer      = KubeReviewer{}
)

// ReviewToken implements TokenReviewer. With Audiences, a token is
// accepted only when the review names one of them in status.audiences: an
// authenticator that does not check audiences names none, and its answer
// says nothing about whom the token was meant for.
func (k KubeReviewer) ReviewToken(ctx context.Context, token string) (User, bool, error) {
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: k.Audiences}}
	if err := k.Client.Create(ctx, review); err != nil {
		return User{}, false, fmt.Errorf("creating a TokenReview: %w", err)
	}
	if !review.Status.Authenticated {
		return User{}, false, nil
	}
	if len(k.Audiences) > 0 && !slices.ContainsFunc(review.Status.Audiences, func(a string) bool { return slices.Contains(k.Audiences, a) }) {
		return User{}, false, nil
	}
	u := review.Status.User
	extra := make(map[string][]string, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = v
	}
	return User{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra}, true, nil
}

// Allowed implements Reviewer.
func (k KubeReviewer) Allowed(ctx context.Context, user User, attrs Attributes) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = v
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Name, UID: user.UID, Groups: user.Groups, Extra: extra,
	}}
	if attrs.Path != "" {
		review.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: attrs.Path, Verb: attrs.Verb}
	} else {
		review.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace:   attrs.Namespace,
			Verb:        attrs.Verb,
			Group:       attrs.Group,
			Resource:    attrs.Resource,
			Subresource: attrs.Subresource,
			Name:        attrs.Name,
		}
	}
	if err := k.Client.Create(ctx, review); err != nil {
		return false, fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	return review.Status.Allowed, nil
}
