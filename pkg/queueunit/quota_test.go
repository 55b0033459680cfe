package queueunit_test

import (
	"testing"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// fakeQuotas: quotas by name, each in a namespace, some serving namespaces.
type fakeQuotas struct {
	at      map[string]string // name -> namespace
	serving map[string]string // namespace -> quota
}

func (f fakeQuotas) NamedAfter(ns string) bool { return f.at[ns] == ns }
func (f fakeQuotas) Serving(ns string) string  { return f.serving[ns] }
func (f fakeQuotas) Exists(name string) bool {
	_, ok := f.at[name]
	return ok
}

func TestQuotaOf(t *testing.T) {
	all := fakeQuotas{
		at: map[string]string{
			"team-a": "quotas", "ml": "ml", "web": "quotas", "serves-ml": "quotas", "serves-etl": "quotas",
			elasticquotav1alpha1.DefaultQuotaName: "koordinator-system",
		},
		serving: map[string]string{"ml": "serves-ml", "etl": "serves-etl", "web": "serves-ml"},
	}
	cases := map[string]struct {
		labels    map[string]string
		queue, ns string
		quotas    fakeQuotas
		wantQuota string
		wantRule  queueunit.QuotaRule
	}{
		"the label first": {labels: map[string]string{elasticquotav1alpha1.LabelQuotaName: "team-a"}, queue: "web", ns: "ml",
			quotas: all, wantQuota: "team-a", wantRule: queueunit.QuotaByLabel},
		"the older label too": {labels: map[string]string{elasticquotav1alpha1.LabelQuotaNameAlibabaCloud: "team-a"}, ns: "ml",
			quotas: all, wantQuota: "team-a", wantRule: queueunit.QuotaByLabel},
		"a label naming no quota still names it": {labels: map[string]string{elasticquotav1alpha1.LabelQuotaName: "typo"}, ns: "ml",
			quotas: all, wantQuota: "typo", wantRule: queueunit.QuotaByLabel},
		"spec.queue pins an admitted unit": {queue: "web", ns: "ml", quotas: all, wantQuota: "web", wantRule: queueunit.QuotaByQueue},
		"the quota named after the namespace, in it, before the annotation": {ns: "ml", quotas: all,
			wantQuota: "ml", wantRule: queueunit.QuotaByNamespaceName},
		"a quota of the namespace's name elsewhere does not count": {ns: "web", quotas: all,
			wantQuota: "serves-ml", wantRule: queueunit.QuotaByNamespacesAnnotation},
		"the annotation": {ns: "etl", quotas: all, wantQuota: "serves-etl", wantRule: queueunit.QuotaByNamespacesAnnotation},
		"else the default quota": {ns: "other", quotas: all,
			wantQuota: elasticquotav1alpha1.DefaultQuotaName, wantRule: queueunit.QuotaByDefault},
		"else none": {ns: "other", quotas: fakeQuotas{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			quota, rule := queueunit.QuotaOf(tc.labels, tc.queue, tc.ns, tc.quotas)
			if quota != tc.wantQuota || rule != tc.wantRule {
				t.Errorf("QuotaOf = %q by %q, want %q by %q", quota, rule, tc.wantQuota, tc.wantRule)
			}
		})
	}
}

// TestQuotaOfUnit: a quota label an extension set from the job's namespace
// keeps the rule that chose it; any other value of the annotation is ignored.
func TestQuotaOfUnit(t *testing.T) {
	quotas := fakeQuotas{at: map[string]string{"ml": "ml"}}
	cases := map[string]struct {
		rule     string
		wantRule queueunit.QuotaRule
	}{
		"the namespace's quota":      {rule: "namespace name", wantRule: queueunit.QuotaByNamespaceName},
		"the namespaces annotation":  {rule: "namespaces annotation", wantRule: queueunit.QuotaByNamespacesAnnotation},
		"no annotation: the label":   {wantRule: queueunit.QuotaByLabel},
		"a rule a label cannot hide": {rule: "default quota", wantRule: queueunit.QuotaByLabel},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := wrappers.MakeQueueUnit("u", "ml").Quota("ml").Obj()
			if tc.rule != "" {
				u.Annotations = map[string]string{schedulingv1alpha1.AnnotationQuotaRule: tc.rule}
			}
			quota, rule := queueunit.QuotaOfUnit(u, quotas)
			if quota != "ml" || rule != tc.wantRule {
				t.Errorf("QuotaOfUnit = %q by %q, want ml by %q", quota, rule, tc.wantRule)
			}
		})
	}
}
