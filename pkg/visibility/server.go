// Package visibility serves koord-queue's read-only REST API (port 8090,
// HTTPS unless --visibility-insecure-serving) from the in-memory cache, on
// every replica: which queues exist, what waits in them and in what order,
// and why a unit waits.
//
//	GET /api/queues
//	GET /api/queues/{name}
//	GET /api/queues/{name}/queueunits?phase=&limit=&offset=
//	GET /api/queueunits/{namespace}/{name}
//	GET /api/elasticquotas
//	GET /api/admissions            the latest admissions, newest first
//	GET /api/queues/{name}/forecast?max.cpu=&min.memory=
//	                               what-if: the queue's forecast, its quota changed
//	GET /api/topologies
//	GET /api/topologies/{name}/domains?level=&limit=&offset=
//	                               each domain of a level: what its nodes have free
//	GET /                          a read-only dashboard of all of the above
//
// Every /api/ request needs a bearer token the API server accepts
// (TokenReview), unless the handler is built without an Auth (the open
// mode, --visibility-insecure-allow-unauthenticated). Units are named only
// in the namespaces where the token's user may list QueueUnits
// (SubjectAccessReview); others are redacted (authz.Redact). Queues,
// quotas and topology domains, cluster-wide settings and totals, are shown
// to every authenticated user. A
// what-if forecast is for who may get the queue's ElasticQuota.
//
// NewAggregatedHandler serves the same units, with the same paging and
// redaction, as Koord-Queue v1.8's aggregated API
// (visibility.koord-queue.x-k8s.io/v1alpha1) behind the API server.
package visibility

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	ctrl "sigs.k8s.io/controller-runtime"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

// DefaultLimit and MaxLimit are api's.
const (
	DefaultLimit = api.DefaultLimit
	MaxLimit     = api.MaxLimit
)

// Source is what the API reads; *admission.Cache implements it.
type Source interface {
	Queues() []api.QueueView
	Queue(name string) (api.QueueView, bool)
	// QueueUnits is a page of queue's units with their positions and
	// reasons, and how many there are on every page.
	QueueUnits(queue string, phase schedulingv1alpha1.QueueUnitPhase, offset, limit int) ([]api.UnitView, int)
	QueueUnit(namespace, name string) (api.UnitView, bool)
	Quotas() []api.QuotaView
	Quota(name string) (api.QuotaView, bool)
	RecentAdmissions() []api.AdmissionRecord
	// WhatIf is the forecast of queue's waiting units had its quota the
	// min and max change gives, made without the units of namespaces
	// visible does not show; false when the queue or its quota does not
	// exist.
	WhatIf(queue string, change api.QuotaChange, visible func(namespace string) (bool, error)) (api.WhatIf, bool, error)
	// Topologies lists the Topologies, by name.
	Topologies() []api.TopologyView
	// TopologyDomains is a page of the domains of the Topology name's
	// level (its node label; "" for the top level) and what each has
	// free: false when the Topology does not exist; an error, the
	// caller's, when it has no such level.
	TopologyDomains(name, level string, offset, limit int) (api.TopologyDomainList, bool, error)
}

//go:embed dashboard/index.html
var dashboard []byte

// Auth is who may read what: Authenticator names the bearer token's user,
// Authorizer decides per namespace, Limiter bounds each user's rate.
type Auth struct {
	Authenticator *authz.Authenticator
	Authorizer    *authz.Authorizer
	Limiter       *authz.RateLimiter
}

// NewAuth returns the Auth asking r, with answers cached for
// authz.DefaultTTL and each user limited to authz.DefaultRate requests a
// second.
func NewAuth(r authz.KubeReviewer) *Auth {
	return &Auth{
		Authenticator: authz.NewAuthenticator(r),
		Authorizer:    authz.NewAuthorizer(r),
		Limiter:       authz.NewRateLimiter(authz.DefaultRate, authz.DefaultBurst),
	}
}

// tooManyRequests answers a 429 when user has made too many requests of
// late, and says whether it did.
func tooManyRequests(w http.ResponseWriter, limiter *authz.RateLimiter, user authz.User, answer func(http.ResponseWriter)) bool {
	if limiter == nil || limiter.Allow(user) {
		return false
	}
	w.Header().Set("Retry-After", "1")
	answer(w)
	return true
}

type visibleKey struct{}

// visibleOf is the request's authz.Visible, set by the authentication
// wrapper; without one (the open mode) every namespace is visible.
func visibleOf(ctx context.Context) authz.Visible {
	if v, ok := ctx.Value(visibleKey{}).(authz.Visible); ok {
		return v
	}
	return authz.Everyone
}

// NewHandler returns the API's routes; a nil auth serves everyone.
func NewHandler(src Source, auth *Auth) http.Handler {
	var authorizer *authz.Authorizer
	if auth != nil {
		authorizer = auth.Authorizer
	}
	mux := newMux(src, authorizer)
	if auth == nil {
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The dashboard's page holds no data: it asks for a token and
		// sends it with every /api/ call.
		if r.URL.Path == "/" {
			mux.ServeHTTP(w, r)
			return
		}
		user, refused := auth.Authenticator.AuthenticateRequest(r)
		if refused != nil {
			if refused.Err != nil {
				ctrl.LoggerFrom(r.Context()).Error(refused.Err, "Authenticating a visibility API request")
			}
			refused.WriteHeaders(w)
			writeError(w, refused.Status, "%s", refused.Message)
			return
		}
		if tooManyRequests(w, auth.Limiter, user, func(w http.ResponseWriter) {
			writeError(w, http.StatusTooManyRequests, "too many requests of %s: slow down", user.Name)
		}) {
			return
		}
		ctx := context.WithValue(r.Context(), userKey{}, user)
		mux.ServeHTTP(w, r.WithContext(withVisible(ctx, auth.Authorizer.ForUser(ctx, user))))
	})
}

// newMux returns the routes; a what-if asks authorizer, nil in the open
// mode.
func newMux(src Source, authorizer *authz.Authorizer) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/queues/{name}/forecast", whatIf(src, authorizer, authz.NewOneAtATime()))
	mux.HandleFunc("GET /api/queues", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, src.Queues())
	})
	mux.HandleFunc("GET /api/queues/{name}", func(w http.ResponseWriter, r *http.Request) {
		q, ok := src.Queue(r.PathValue("name"))
		if !ok {
			writeError(w, http.StatusNotFound, "queue %q not found", r.PathValue("name"))
			return
		}
		writeJSON(w, http.StatusOK, q)
	})
	mux.HandleFunc("GET /api/queues/{name}/queueunits", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if _, ok := src.Queue(name); !ok {
			writeError(w, http.StatusNotFound, "queue %q not found", name)
			return
		}
		p, err := parsePage(r.URL.Query())
		if err != nil {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		items, total, err := p.units(r.Context(), src, name)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "authorizing: %v", err)
			return
		}
		writeJSON(w, http.StatusOK, api.QueueUnitList{Queue: name, Total: total, Offset: p.offset, Limit: p.limit, Items: items})
	})
	mux.HandleFunc("GET /api/queueunits/{namespace}/{name}", func(w http.ResponseWriter, r *http.Request) {
		// Asked before the unit is looked up, so that a 404 does not tell
		// who may not look which units exist.
		allowed, err := visibleOf(r.Context())(r.PathValue("namespace"))
		if err != nil {
			writeError(w, http.StatusInternalServerError, "authorizing: %v", err)
			return
		}
		if !allowed {
			writeError(w, http.StatusForbidden, "may not list queueunits in namespace %q", r.PathValue("namespace"))
			return
		}
		u, ok := src.QueueUnit(r.PathValue("namespace"), r.PathValue("name"))
		if !ok {
			writeError(w, http.StatusNotFound, "queue unit %s/%s not found", r.PathValue("namespace"), r.PathValue("name"))
			return
		}
		writeJSON(w, http.StatusOK, u)
	})
	mux.HandleFunc("GET /api/elasticquotas", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, src.Quotas())
	})
	mux.HandleFunc("GET /api/admissions", func(w http.ResponseWriter, r *http.Request) {
		records, err := authz.FilterAdmissions(src.RecentAdmissions(), visibleOf(r.Context()))
		if err != nil {
			writeError(w, http.StatusInternalServerError, "authorizing: %v", err)
			return
		}
		writeJSON(w, http.StatusOK, records)
	})
	mux.HandleFunc("GET /api/topologies", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, src.Topologies())
	})
	mux.HandleFunc("GET /api/topologies/{name}/domains", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		offset, limit, err := parseBounds(r.URL.Query())
		if err != nil {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		list, ok, err := src.TopologyDomains(name, r.URL.Query().Get("level"), offset, limit)
		if !ok {
			writeError(w, http.StatusNotFound, "topology %q not found", name)
			return
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		writeJSON(w, http.StatusOK, list)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(dashboard)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, api.Error{Error: fmt.Sprintf(format, args...)})
}
