package admission

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/metrics"
)

// TestQuotaMetricsGoWithTheirQuota: a deleted ElasticQuota's
// koord_queue_quota_resource series are deleted too, as its queue's gauges
// are, so dashboards do not chart a quota that is gone.
func TestQuotaMetricsGoWithTheirQuota(t *testing.T) {
	c := NewCache()
	c.UpsertElasticQuota(&elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"},
		Spec: elasticquotav1alpha1.ElasticQuotaSpec{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}})
	(&StatusWriter{cache: c, lastQuotaErrs: map[string]string{}}).reportQuotas()
	before := testutil.CollectAndCount(metrics.QuotaResource)
	if before == 0 {
		t.Fatal("no quota_resource series for quota gone")
	}
	c.DeleteElasticQuota("gone")
	if after := testutil.CollectAndCount(metrics.QuotaResource); after != 0 {
		t.Errorf("%d quota_resource series left after the quota was deleted (%d before)", after, before)
	}
}
