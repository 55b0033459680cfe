package servingcert

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// oneSecretManager is a manager whose config lists and watches, of the
// Secrets of one namespace, one Secret only (selectOneSecret). The
// rotator's cache is made from its manager's config and watches every
// Secret of the Secret's namespace; through this one it watches its own
// Secret alone, so that the binary needs no access to the others: RBAC
// grants a list or a watch of Secrets named in a rule's resourceNames only
// to a request that selects that name.
type oneSecretManager struct {
	manager.Manager
	config *rest.Config
}

func (m oneSecretManager) GetConfig() *rest.Config { return m.config }

// withOneSecret is mgr, its config's lists and watches of the Secrets of
// secret's namespace narrowed to secret.
func withOneSecret(mgr manager.Manager, secret types.NamespacedName) manager.Manager {
	config := rest.CopyConfig(mgr.GetConfig())
	config.Wrap(selectOneSecret(secret))
	return oneSecretManager{Manager: mgr, config: config}
}

// selectOneSecret makes each list and watch of the Secrets of secret's
// namespace that selects no field select secret by its name. Nothing else
// is changed.
func selectOneSecret(secret types.NamespacedName) func(http.RoundTripper) http.RoundTripper {
	collections := []string{
		"/api/v1/namespaces/" + secret.Namespace + "/secrets",
		"/api/v1/watch/namespaces/" + secret.Namespace + "/secrets",
	}
	selector := fields.OneTermEqualSelector("metadata.name", secret.Name).String()
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet || !hasAnySuffix(req.URL.Path, collections) {
				return rt.RoundTrip(req)
			}
			q := req.URL.Query()
			if q.Get("fieldSelector") != "" {
				return rt.RoundTrip(req)
			}
			q.Set("fieldSelector", selector)
			req = req.Clone(req.Context())
			req.URL.RawQuery = q.Encode()
			return rt.RoundTrip(req)
		})
	}
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, suffix := range suffixes {
		if strings.HasSuffix(s, suffix) {
			return true
		}
	}
	return false
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
