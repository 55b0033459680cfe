package visibility

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/pkg/visibility/api/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

// The aggregated API's resources: read-only subresources of queues and
// quotas, cluster-scoped.
var aggregatedResources = []metav1.APIResource{
	{Name: "queues/queueunits", Kind: v1alpha1.Kind, Verbs: metav1.Verbs{"get"}},
	{Name: "elasticquotas/queueunits", Kind: v1alpha1.Kind, Verbs: metav1.Verbs{"get"}},
}

// NewAggregatedHandler serves visibility.koord-queue.x-k8s.io/v1alpha1, the
// aggregated API (Koord-Queue v1.8's paths), and its discovery, to callers
// authn names (through the API server's front proxy, by a client
// certificate, or by a bearer token); anyone else gets a 401, and a caller
// RBAC does not let get the resource asked, a 403. Units are
// named only in the namespaces where the caller may list QueueUnits,
// redacted elsewhere, as the REST API does: the two share the paging, the
// positions, the reasons and the redaction.
func NewAggregatedHandler(src Source, authn authenticator.Request, authorizer *authz.Authorizer, limiter *authz.RateLimiter) http.Handler {
	gv := v1alpha1.GroupVersion
	root := "/apis/" + gv.Group + "/" + gv.Version
	mux := http.NewServeMux()
	group := metav1.APIGroup{
		TypeMeta:         metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:             gv.Group,
		Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: gv.String(), Version: gv.Version}},
		PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version},
	}
	mux.HandleFunc("GET /apis", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{group}})
	})
	mux.HandleFunc("GET /apis/"+gv.Group, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, group)
	})
	mux.HandleFunc("GET "+root, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, metav1.APIResourceList{
			TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String(), APIResources: aggregatedResources,
		})
	})
	mux.HandleFunc("GET "+root+"/queues/{name}/queueunits", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if !authorizedGet(w, r, authorizer, "queues", name) {
			return
		}
		if _, ok := src.Queue(name); !ok {
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: gv.Group, Resource: "queues"}, name))
			return
		}
		// Koord-Queue v1.8 lists the units waiting in the queue.
		listUnits(w, r, src, name, schedulingv1alpha1.Enqueued)
	})
	mux.HandleFunc("GET "+root+"/elasticquotas/{name}/queueunits", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if !authorizedGet(w, r, authorizer, "elasticquotas", name) {
			return
		}
		if _, ok := src.Quota(name); !ok {
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: gv.Group, Resource: "elasticquotas"}, name))
			return
		}
		// A quota's units are those of its queue, of the same name.
		listUnits(w, r, src, name, "")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
	})
	return authenticated(mux, authn, authorizer, limiter)
}

// authenticated serves next to callers authn names, with the Visible of
// their user; anyone else gets a 401, a user over their rate a 429, and so
// does a caller whose token may not be reviewed now (authz.ErrTooManyReviews).
func authenticated(next http.Handler, authn authenticator.Request, authorizer *authz.Authorizer, limiter *authz.RateLimiter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithValue(r.Context(), clientKey{}, authz.ClientAddress(r)))
		resp, ok, err := authn.AuthenticateRequest(r)
		if errors.Is(err, authz.ErrTooManyReviews) {
			w.Header().Set("Retry-After", "1")
			writeStatus(w, apierrors.NewTooManyRequests("authenticating: "+authz.ErrTooManyReviews.Error(), 1))
			return
		}
		if err != nil || !ok {
			if err != nil {
				ctrl.LoggerFrom(r.Context()).V(2).Info("Refused an aggregated API request", "reason", err.Error())
			}
			writeStatus(w, apierrors.NewUnauthorized("koord-queue's visibility API needs an authenticated caller"))
			return
		}
		u := resp.User
		user := authz.User{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
		if tooManyRequests(w, limiter, user, func(w http.ResponseWriter) {
			writeStatus(w, apierrors.NewTooManyRequests("too many requests: slow down", 1))
		}) {
			return
		}
		ctx := context.WithValue(r.Context(), userKey{}, user)
		next.ServeHTTP(w, r.WithContext(withVisible(ctx, authorizer.ForUser(ctx, user))))
	})
}

type userKey struct{}

// clientKey is the request's clientAddress in its context, for the bearer
// token authenticator (tokenAuthenticator), which is given only the context.
type clientKey struct{}

// authorizedGet answers a 403 and false unless the request's user may get
// resource name's queueunits subresource in the aggregated API's group.
// The API server authorizes what it proxies; asking again here holds for a
// caller who sends its token to this server directly, past the API
// server's RBAC.
func authorizedGet(w http.ResponseWriter, r *http.Request, authorizer *authz.Authorizer, resource, name string) bool {
	user, _ := r.Context().Value(userKey{}).(authz.User)
	gr := schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: resource + "/queueunits"}
	allowed, err := authorizer.Allowed(r.Context(), user, authz.Attributes{
		Verb: "get", Group: gr.Group, Resource: resource, Subresource: "queueunits", Name: name,
	})
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(fmt.Errorf("authorizing: %w", err)))
		return false
	}
	if !allowed {
		writeStatus(w, apierrors.NewForbidden(gr, name, fmt.Errorf("%s may not get it", user.Name)))
		return false
	}
	return true
}

// listUnits answers a QueueUnitsSummary of queue's units of phase (the
// query's phase when given), paged by limit and continue (or offset).
func listUnits(w http.ResponseWriter, r *http.Request, src Source, queue string, phase schedulingv1alpha1.QueueUnitPhase) {
	query := r.URL.Query()
	p, err := parsePage(query)
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	if p.phase == "" {
		p.phase = phase
	}
	list := r.URL.Path + "?phase=" + string(p.phase)
	if token := query.Get("continue"); token != "" {
		if query.Has("offset") {
			writeStatus(w, apierrors.NewBadRequest("give continue or offset, not both"))
			return
		}
		if p.offset, err = decodeContinue(token, list); err != nil {
			writeStatus(w, apierrors.NewBadRequest(err.Error()))
			return
		}
	}
	items, total, err := p.units(r.Context(), src, queue)
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(fmt.Errorf("authorizing: %w", err)))
		return
	}
	writeJSON(w, http.StatusOK, summary(items, total, p.offset, list))
}

// summary is a page of units, from offset, as the aggregated API answers it.
func summary(items []api.UnitView, total, offset int, list string) v1alpha1.QueueUnitsSummary {
	out := v1alpha1.QueueUnitsSummary{
		TypeMeta: metav1.TypeMeta{Kind: v1alpha1.Kind, APIVersion: v1alpha1.GroupVersion.String()},
		Total:    total,
		Items:    make([]v1alpha1.QueueUnit, 0, len(items)),
	}
	for _, u := range items {
		out.Items = append(out.Items, summaryItem(u))
	}
	if next := offset + len(items); len(items) > 0 && next < total {
		out.Continue = encodeContinue(list, next)
		out.RemainingItemCount = ptr.To(int64(total - next))
	}
	return out
}

func summaryItem(u api.UnitView) v1alpha1.QueueUnit {
	return v1alpha1.QueueUnit{
		Metadata:         v1alpha1.ObjectMeta{Name: u.Name, Namespace: u.Namespace},
		QuotaName:        u.Queue,
		QueueName:        u.Queue,
		Request:          u.Request,
		Resources:        u.Resource,
		Phase:            u.Phase,
		PodState:         v1alpha1.PodState{Running: u.PodState.Running, Pending: u.PodState.Pending},
		Priority:         u.Priority,
		Position:         u.Position,
		Reason:           u.Reason,
		QuotaRule:        u.QuotaRule,
		PartialAdmission: u.PartialAdmission,
		Redacted:         u.Redacted,

		TopologyAssignments: u.TopologyAssignments,

		EstimatedAdmissionTime: u.EstimatedAdmissionTime,
		EstimateBasis:          u.EstimateBasis,
		EstimateReason:         u.EstimateReason,
	}
}

// writeStatus answers err as the API server would, a Status.
func writeStatus(w http.ResponseWriter, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	s := status.Status()
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeJSON(w, int(s.Code), s)
}

func withVisible(ctx context.Context, v authz.Visible) context.Context {
	return context.WithValue(ctx, visibleKey{}, v)
}
