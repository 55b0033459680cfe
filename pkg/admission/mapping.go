package admission

import (
	"slices"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// quotaIndex is what unit-to-queue mapping needs to know of the ElasticQuotas.
type quotaIndex struct {
	// names of existing quotas.
	names map[string]struct{}
	// servedBy maps a namespace to the quotas whose namespaces annotation lists it.
	servedBy map[string][]string
	// namespacesOf is each quota's namespaces annotation, to undo servedBy.
	namespacesOf map[string][]string
}

func newQuotaIndex() *quotaIndex {
	return &quotaIndex{names: map[string]struct{}{}, servedBy: map[string][]string{}, namespacesOf: map[string][]string{}}
}

// upsert records a quota; it returns an error when its namespaces annotation is malformed.
func (x *quotaIndex) upsert(eq *elasticquotav1alpha1.ElasticQuota) error {
	x.remove(eq.Name)
	x.names[eq.Name] = struct{}{}
	namespaces, err := elasticquotav1alpha1.ServedNamespaces(eq.Annotations)
	if err != nil || len(namespaces) == 0 {
		return err
	}
	x.namespacesOf[eq.Name] = namespaces
	for _, ns := range namespaces {
		x.servedBy[ns] = append(x.servedBy[ns], eq.Name)
		slices.Sort(x.servedBy[ns])
	}
	return nil
}

func (x *quotaIndex) remove(name string) {
	delete(x.names, name)
	for _, ns := range x.namespacesOf[name] {
		x.servedBy[ns] = slices.DeleteFunc(x.servedBy[ns], func(n string) bool { return n == name })
		if len(x.servedBy[ns]) == 0 {
			delete(x.servedBy, ns)
		}
	}
	delete(x.namespacesOf, name)
}

func (x *quotaIndex) exists(name string) bool {
	_, ok := x.names[name]
	return ok
}

// QuotaNameOf is the ElasticQuota a unit is charged to, and so the Queue it
// waits in (Queues are named after their quotas). In order: the unit's quota
// label (or its older alibabacloud.com key), its spec.queue, then
// Koordinator's fallbacks: the quota whose namespaces annotation lists the
// unit's namespace, the quota named after the namespace, and
// koordinator-default-quota. byLabel reports whether the unit named it
// itself; fallbacks are re-resolved when quotas change. Empty: no quota.
func (x *quotaIndex) quotaNameOf(u *schedulingv1alpha1.QueueUnit) (name string, byLabel bool) {
	if n := elasticquotav1alpha1.QuotaNameFromLabels(u.Labels); n != "" {
		return n, true
	}
	if u.Spec.Queue != "" {
		return u.Spec.Queue, true
	}
	if served := x.servedBy[u.Namespace]; len(served) > 0 {
		return served[0], false
	}
	if x.exists(u.Namespace) {
		return u.Namespace, false
	}
	if x.exists(elasticquotav1alpha1.DefaultQuotaName) {
		return elasticquotav1alpha1.DefaultQuotaName, false
	}
	return "", false
}
