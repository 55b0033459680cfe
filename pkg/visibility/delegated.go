package visibility

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"

	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

// AuthenticationConfigMap is where the API server publishes how an
// extension API server authenticates its callers: the client CA, and the
// front proxy's CA, allowed names and headers. Reading it needs the
// Role extension-apiserver-authentication-reader in kube-system.
var AuthenticationConfigMap = metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "extension-apiserver-authentication"}

// DelegatedAuthentication names the aggregated API's callers as an
// extension API server does (k8s.io/apiserver's delegated authentication),
// in this order: the API server's front proxy (its client certificate
// checked against the requestheader CA, the user taken from the
// X-Remote-* headers), a client certificate of the cluster's client CA, a
// bearer token (a TokenReview, through the REST API's authz.Authenticator
// and its cache). The CAs and headers are read from AuthenticationConfigMap
// and follow its changes while Run runs.
type DelegatedAuthentication struct {
	authenticator.Request

	clientCA   *dynamiccertificates.ConfigMapCAController
	frontProxy *dynamiccertificates.ConfigMapCAController
	headers    *headerrequest.RequestHeaderAuthRequestController
}

// NewDelegatedAuthentication reads AuthenticationConfigMap with client;
// tokens authenticates bearer tokens.
func NewDelegatedAuthentication(client kubernetes.Interface, tokens *authz.Authenticator) (*DelegatedAuthentication, error) {
	ns, name := AuthenticationConfigMap.Namespace, AuthenticationConfigMap.Name
	clientCA, err := dynamiccertificates.NewDynamicCAFromConfigMapController("client-ca", ns, name, "client-ca-file", client)
	if err != nil {
		return nil, fmt.Errorf("the client CA: %w", err)
	}
	frontProxy, err := dynamiccertificates.NewDynamicCAFromConfigMapController("requestheader-client-ca", ns, name, "requestheader-client-ca-file", client)
	if err != nil {
		return nil, fmt.Errorf("the front proxy's CA: %w", err)
	}
	headers := headerrequest.NewRequestHeaderAuthRequestController(name, ns, client,
		"requestheader-username-headers", "requestheader-uid-headers", "requestheader-group-headers",
		"requestheader-extra-headers-prefix", "requestheader-allowed-names")
	provider := func(f func() []string) headerrequest.StringSliceProvider {
		return headerrequest.StringSliceProviderFunc(f)
	}
	front := headerrequest.NewDynamicVerifyOptionsSecure(frontProxy.VerifyOptions, provider(headers.AllowedClientNames),
		provider(headers.UsernameHeaders), provider(headers.UIDHeaders), provider(headers.GroupHeaders), provider(headers.ExtraHeaderPrefixes))
	certs := x509.NewDynamic(clientCA.VerifyOptions, x509.CommonNameUserConversion)
	bearer := bearertoken.New(tokenAuthenticator{tokens})
	return &DelegatedAuthentication{
		Request:  group.NewAuthenticatedGroupAdder(union.New(front, certs, bearer)),
		clientCA: clientCA, frontProxy: frontProxy, headers: headers,
	}, nil
}

// Run reads AuthenticationConfigMap, then follows it until ctx ends. It
// fails at once when the ConfigMap may not be read.
func (d *DelegatedAuthentication) Run(ctx context.Context) error {
	if err := d.headers.RunOnce(ctx); err != nil {
		return fmt.Errorf("reading %s/%s (the Role extension-apiserver-authentication-reader grants it): %w",
			AuthenticationConfigMap.Namespace, AuthenticationConfigMap.Name, err)
	}
	go d.clientCA.Run(ctx, 1)
	go d.frontProxy.Run(ctx, 1)
	go d.headers.Run(ctx, 1)
	return nil
}

// tokenAuthenticator is authz.Authenticator as k8s.io/apiserver's bearer
// token authenticator asks it.
type tokenAuthenticator struct{ tokens *authz.Authenticator }

func (t tokenAuthenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	client, _ := ctx.Value(clientKey{}).(string)
	u, ok, err := t.tokens.Authenticate(ctx, client, token)
	if err != nil || !ok {
		return nil, false, err
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}}, true, nil
}
