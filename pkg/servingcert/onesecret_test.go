package servingcert

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// TestSelectOneSecret: the rotator's lists and watches of the Secrets of its
// Secret's namespace select that Secret by name, which is all RBAC lets a
// binary granted that one Secret list or watch; every other request goes
// as it is.
func TestSelectOneSecret(t *testing.T) {
	secret := types.NamespacedName{Namespace: "koord-queue", Name: "koord-queue-controllers-webhook-cert"}
	const one = "fieldSelector=metadata.name%3Dkoord-queue-controllers-webhook-cert"
	for _, tc := range []struct {
		name, method, url, want string
	}{{
		name:   "a list of the namespace's Secrets selects the one",
		method: http.MethodGet, url: "https://api/api/v1/namespaces/koord-queue/secrets?limit=500&resourceVersion=0",
		want: "https://api/api/v1/namespaces/koord-queue/secrets?" + one + "&limit=500&resourceVersion=0",
	}, {
		name:   "so does a watch, streamed list or not",
		method: http.MethodGet, url: "https://api/api/v1/namespaces/koord-queue/secrets?sendInitialEvents=true&watch=true",
		want: "https://api/api/v1/namespaces/koord-queue/secrets?" + one + "&sendInitialEvents=true&watch=true",
	}, {
		name:   "and the older watch path, behind a prefix",
		method: http.MethodGet, url: "https://api/prefix/api/v1/watch/namespaces/koord-queue/secrets",
		want: "https://api/prefix/api/v1/watch/namespaces/koord-queue/secrets?" + one,
	}, {
		name:   "a request that selects a field already is left as it is",
		method: http.MethodGet, url: "https://api/api/v1/namespaces/koord-queue/secrets?fieldSelector=metadata.name%3Dother",
		want: "https://api/api/v1/namespaces/koord-queue/secrets?fieldSelector=metadata.name%3Dother",
	}, {
		name:   "a get of the Secret by name",
		method: http.MethodGet, url: "https://api/api/v1/namespaces/koord-queue/secrets/koord-queue-controllers-webhook-cert",
		want: "https://api/api/v1/namespaces/koord-queue/secrets/koord-queue-controllers-webhook-cert",
	}, {
		name:   "the Secrets of another namespace",
		method: http.MethodGet, url: "https://api/api/v1/namespaces/other-koord-queue/secrets",
		want: "https://api/api/v1/namespaces/other-koord-queue/secrets",
	}, {
		name:   "webhook configurations",
		method: http.MethodGet, url: "https://api/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?watch=true",
		want: "https://api/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?watch=true",
	}, {
		name:   "an update of the Secret",
		method: http.MethodPut, url: "https://api/api/v1/namespaces/koord-queue/secrets/koord-queue-controllers-webhook-cert",
		want: "https://api/api/v1/namespaces/koord-queue/secrets/koord-queue-controllers-webhook-cert",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			rt := selectOneSecret(secret)(roundTripperFunc(func(req *http.Request) (*http.Response, error) {
				got = req.URL.String()
				return &http.Response{StatusCode: http.StatusOK}, nil
			}))
			req, err := http.NewRequest(tc.method, tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rt.RoundTrip(req); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("URL sent (-want +got):\n%s", diff)
			}
			if req.URL.String() != tc.url {
				t.Errorf("the caller's request changed: %s", req.URL)
			}
		})
	}
}
