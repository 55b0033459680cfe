package admission

import (
	"slices"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// quotaIndex is what unit-to-queue mapping needs to know of the ElasticQuotas.
type quotaIndex struct {
	// namespaceOf each existing quota, by name.
	namespaceOf map[string]string
	// servedBy maps a namespace to the quotas whose namespaces annotation lists it.
	servedBy map[string][]string
	// namespacesOf is each quota's namespaces annotation, to undo servedBy.
	namespacesOf map[string][]string
}

func newQuotaIndex() *quotaIndex {
	return &quotaIndex{namespaceOf: map[string]string{}, servedBy: map[string][]string{}, namespacesOf: map[string][]string{}}
}

// upsert records a quota; it returns an error when its namespaces annotation is malformed.
func (x *quotaIndex) upsert(eq *elasticquotav1alpha1.ElasticQuota) error {
	x.remove(eq.Name)
	x.namespaceOf[eq.Name] = eq.Namespace
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
	delete(x.namespaceOf, name)
	for _, ns := range x.namespacesOf[name] {
		x.servedBy[ns] = slices.DeleteFunc(x.servedBy[ns], func(n string) bool { return n == name })
		if len(x.servedBy[ns]) == 0 {
			delete(x.servedBy, ns)
		}
	}
	delete(x.namespacesOf, name)
}

var _ queueunit.Quotas = (*quotaIndex)(nil)

// Exists reports whether a quota of that name exists.
func (x *quotaIndex) Exists(name string) bool {
	_, ok := x.namespaceOf[name]
	return ok
}

// NamedAfter reports whether the quota named ns lives in namespace ns.
func (x *quotaIndex) NamedAfter(ns string) bool {
	at, ok := x.namespaceOf[ns]
	return ok && at == ns
}

// Serving is the first quota, by name, whose namespaces annotation lists ns.
func (x *quotaIndex) Serving(ns string) string {
	if served := x.servedBy[ns]; len(served) > 0 {
		return served[0]
	}
	return ""
}

// quotaNameOf is the ElasticQuota a unit is charged to, and so the Queue it
// waits in (Queues are named after their quotas), and the rule that chose it
// (queueunit.QuotaOf). Empty: no quota.
func (x *quotaIndex) quotaNameOf(u *schedulingv1alpha1.QueueUnit) (string, queueunit.QuotaRule) {
	return queueunit.QuotaOfUnit(u, x)
}
