package queue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/admission"
	"github.com/koord-queue/koord-queue/pkg/metrics"
)

// reporter is a StatusWriter reading source, before Start: enough for
// reportQuotas and desiredStatus.
func reporter(source StatusSource, recorder record.EventRecorder) *StatusWriter {
	return &StatusWriter{cache: source, recorder: recorder, lastQuotaErrs: map[string]string{}, warnedDuplicates: map[types.UID]bool{}}
}

// TestQuotaMetricsGoWithTheirQuota: a deleted ElasticQuota's
// koord_queue_quota_resource series are deleted too, as its queue's gauges
// are, so dashboards do not chart a quota that is gone.
func TestQuotaMetricsGoWithTheirQuota(t *testing.T) {
	c := admission.NewCache()
	c.UpsertElasticQuota(&elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"},
		Spec: elasticquotav1alpha1.ElasticQuotaSpec{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}})
	reporter(c, nil).reportQuotas()
	before := testutil.CollectAndCount(metrics.QuotaResource)
	if before == 0 {
		t.Fatal("no quota_resource series for quota gone")
	}
	c.DeleteElasticQuota("ns", "gone")
	if after := testutil.CollectAndCount(metrics.QuotaResource); after != 0 {
		t.Errorf("%d quota_resource series left after the quota was deleted (%d before)", after, before)
	}
}

// TestDuplicateQuotaNameWarnedOnce: of two ElasticQuotas with one name in
// two namespaces, whatever order they arrive in, the one not used (the
// newer) gets one DuplicateQuotaName Warning event naming the one used, and
// only one however often the writer looks.
func TestDuplicateQuotaNameWarnedOnce(t *testing.T) {
	at := func(ns string, sec int64) *elasticquotav1alpha1.ElasticQuota {
		return &elasticquotav1alpha1.ElasticQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team", UID: types.UID(ns), CreationTimestamp: metav1.Unix(sec, 0)},
			Spec:       elasticquotav1alpha1.ElasticQuotaSpec{Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
		}
	}
	older, newer := at("first", 100), at("second", 200)
	for name, order := range map[string][]*elasticquotav1alpha1.ElasticQuota{
		"older first": {older, newer},
		"newer first": {newer, older},
	} {
		t.Run(name, func(t *testing.T) {
			c := admission.NewCache()
			recorder := record.NewFakeRecorder(10)
			sw := reporter(c, recorder)
			for _, eq := range order {
				c.UpsertElasticQuota(eq)
				sw.reportQuotas()
			}
			sw.reportQuotas()
			var got []string
			for len(recorder.Events) > 0 {
				got = append(got, <-recorder.Events)
			}
			want := []string{"Warning DuplicateQuotaName Not used: ElasticQuota names are global in Koordinator and first/team, older, has this name; rename or delete this one"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
