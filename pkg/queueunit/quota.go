package queueunit

import (
	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// QuotaRule names the rule that chose the quota of a unit (or of a job).
type QuotaRule string

// The rules, in the order they are tried: koord-scheduler's GetQuotaName,
// with spec.queue (Koord-Queue's pin of an admitted unit) after the label.
const (
	// QuotaByLabel: quota.scheduling.koordinator.sh/name (or
	// alibabacloud.com/quota-name) names it.
	QuotaByLabel QuotaRule = "label"
	// QuotaByQueue: spec.queue names it (written when a unit is admitted).
	QuotaByQueue QuotaRule = "spec.queue"
	// QuotaByNamespaceName: the ElasticQuota named after the namespace, in
	// that same namespace.
	QuotaByNamespaceName QuotaRule = "namespace name"
	// QuotaByNamespacesAnnotation: the quota whose
	// quota.scheduling.koordinator.sh/namespaces annotation lists the
	// namespace (the first by name when several do).
	QuotaByNamespacesAnnotation QuotaRule = "namespaces annotation"
	// QuotaByDefault: koordinator-default-quota.
	QuotaByDefault QuotaRule = "default quota"
)

// Named reports whether the unit named its quota itself, so that no quota
// change re-resolves it.
func (r QuotaRule) Named() bool { return r == QuotaByLabel || r == QuotaByQueue }

// Describe says, for a unit's status, how the rule chose quota.
func (r QuotaRule) Describe(quota string) string {
	switch r {
	case QuotaByNamespaceName:
		return "quota " + quota + " is the ElasticQuota named after the unit's namespace"
	case QuotaByNamespacesAnnotation:
		return "quota " + quota + " lists the unit's namespace in its " + elasticquotav1alpha1.AnnotationQuotaNamespaces + " annotation"
	case QuotaByDefault:
		return "no quota names or serves the unit's namespace, so " + quota + " serves it"
	}
	return "the unit names quota " + quota
}

// Quotas is what resolving a quota needs to know of the ElasticQuotas.
type Quotas interface {
	// NamedAfter reports whether an ElasticQuota named ns lives in namespace ns.
	NamedAfter(ns string) bool
	// Serving is the first quota, by name, whose namespaces annotation
	// lists ns; empty when none does.
	Serving(ns string) string
	// Exists reports whether a quota of that name exists.
	Exists(name string) bool
}

// QuotaOfUnit is QuotaOf for a unit. A quota label an extension set from
// the job's namespace keeps the rule that chose it (AnnotationQuotaRule),
// so that the unit says why it is in that queue.
func QuotaOfUnit(u *schedulingv1alpha1.QueueUnit, quotas Quotas) (string, QuotaRule) {
	quota, rule := QuotaOf(u.Labels, u.Spec.Queue, u.Namespace, quotas)
	if rule == QuotaByLabel {
		switch recorded := QuotaRule(u.Annotations[schedulingv1alpha1.AnnotationQuotaRule]); recorded {
		case QuotaByNamespaceName, QuotaByNamespacesAnnotation:
			rule = recorded
		}
	}
	return quota, rule
}

// QuotaOf is the quota a unit in namespace ns with these labels and
// spec.queue belongs to, and the rule that chose it; empty when none does.
// Both binaries resolve it this way, as koord-scheduler charges the pods.
// A label naming a quota that does not exist still names it (koord-scheduler
// would charge the default quota): the unit waits and says so, rather than
// running elsewhere because of a typo.
func QuotaOf(labels map[string]string, queue, ns string, quotas Quotas) (string, QuotaRule) {
	if n := elasticquotav1alpha1.QuotaNameFromLabels(labels); n != "" {
		return n, QuotaByLabel
	}
	if queue != "" {
		return queue, QuotaByQueue
	}
	if quotas.NamedAfter(ns) {
		return ns, QuotaByNamespaceName
	}
	if served := quotas.Serving(ns); served != "" {
		return served, QuotaByNamespacesAnnotation
	}
	if quotas.Exists(elasticquotav1alpha1.DefaultQuotaName) {
		return elasticquotav1alpha1.DefaultQuotaName, QuotaByDefault
	}
	return "", ""
}
