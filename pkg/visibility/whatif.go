package visibility

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/resources"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
	"github.com/koord-queue/koord-queue/pkg/visibility/authz"
)

// MaxQuotaChanges bounds the amounts one what-if may change.
const MaxQuotaChanges = 32

// whatIf serves GET /api/queues/{name}/forecast?max.cpu=8&min.memory=16Gi:
// the forecast of the queue's waiting units had its ElasticQuota the min
// and max given, to a caller who may get that ElasticQuota (an
// administrator of it). The units of namespaces the caller may not list
// are left out of the replay (admission.Cache.WhatIf says why), and those
// of the queue listed redacted. Each caller has one in flight at a time: a
// replay costs as much as the live forecast.
func whatIf(src Source, authorizer *authz.Authorizer, inFlight *authz.OneAtATime) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		q, ok := src.Queue(name)
		if !ok {
			writeError(w, http.StatusNotFound, "queue %q not found", name)
			return
		}
		if q.Quota == nil {
			writeError(w, http.StatusNotFound, "queue %q has no ElasticQuota", name)
			return
		}
		user, _ := r.Context().Value(userKey{}).(authz.User)
		if authorizer != nil {
			attrs := authz.Attributes{Verb: "get", Group: elasticquotav1alpha1.GroupVersion.Group, Resource: "elasticquotas", Namespace: q.Quota.Namespace, Name: q.Quota.Name}
			allowed, err := authorizer.Allowed(r.Context(), user, attrs)
			if err != nil {
				writeError(w, http.StatusInternalServerError, "authorizing: %v", err)
				return
			}
			if !allowed {
				writeError(w, http.StatusForbidden, "%s may not get elasticquotas.%s %q in namespace %q", user.Name, attrs.Group, attrs.Name, attrs.Namespace)
				return
			}
		}
		change, err := parseQuotaChange(r.URL.Query())
		if err != nil {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		done, ok := inFlight.Start(user)
		if !ok {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, "a forecast of %s is already being computed: one at a time", user.Name)
			return
		}
		defer done()
		visible := visibleOf(r.Context())
		out, ok, err := src.WhatIf(name, change, visible)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "authorizing: %v", err)
			return
		}
		if !ok {
			writeError(w, http.StatusNotFound, "queue %q has no ElasticQuota", name)
			return
		}
		if out.Items, err = authz.RedactUnits(out.Items, visible); err != nil {
			writeError(w, http.StatusInternalServerError, "authorizing: %v", err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// parseQuotaChange reads a what-if's query: min.<resource>=<amount> and
// max.<resource>=<amount>, each at most once, at most MaxQuotaChanges of
// them, no amount below zero and no min above the max given with it.
func parseQuotaChange(query url.Values) (api.QuotaChange, error) {
	if len(query) > MaxQuotaChanges {
		return api.QuotaChange{}, fmt.Errorf("%d parameters: at most %d amounts may be changed", len(query), MaxQuotaChanges)
	}
	var change api.QuotaChange
	for _, key := range slices.Sorted(maps.Keys(query)) {
		field, name, ok := strings.Cut(key, ".")
		if !ok || (field != "min" && field != "max") {
			return api.QuotaChange{}, fmt.Errorf("unknown parameter %q: give min.<resource> or max.<resource>, e.g. max.cpu=8", key)
		}
		if errs := validation.IsQualifiedName(name); len(errs) > 0 {
			return api.QuotaChange{}, fmt.Errorf("%s: resource name %q: %s", key, name, strings.Join(errs, "; "))
		}
		values := query[key]
		if len(values) != 1 {
			return api.QuotaChange{}, fmt.Errorf("%s given %d times", key, len(values))
		}
		amount, err := resource.ParseQuantity(values[0])
		if err != nil {
			return api.QuotaChange{}, fmt.Errorf("%s=%q: %w", key, values[0], err)
		}
		list := &change.Max
		if field == "min" {
			list = &change.Min
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[corev1.ResourceName(name)] = amount
	}
	if err := resources.CheckList("min", change.Min); err != nil {
		return api.QuotaChange{}, err
	}
	if err := resources.CheckList("max", change.Max); err != nil {
		return api.QuotaChange{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(change.Min)) {
		lo := change.Min[name]
		if hi, ok := change.Max[name]; ok && lo.Cmp(hi) > 0 {
			return api.QuotaChange{}, fmt.Errorf("min.%s=%s is more than max.%s=%s", name, lo.String(), name, hi.String())
		}
	}
	return change, nil
}
