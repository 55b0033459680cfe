package admission

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// v18Families are Koord-Queue v1.8's metrics whose series a test compares.
var v18Families = []string{"dequeued_quota_usage_by_quota", "dequeued_quota_usage_by_namespace", "queueunits_by_job_type"}

// TestV18Metrics scrapes koord-queue's /metrics as Prometheus does (HTTPS,
// a token allowed to get /metrics) while units of two namespaces and two job
// kinds share a quota: Koord-Queue v1.8's series carry what is admitted,
// follow a job that finishes and a unit deleted, and go with their quota.
func TestV18Metrics(t *testing.T) {
	addr := startSecureMetricsManager(t)
	nsA := namespace(t)
	nsB := nsA + "-b"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsB}})
	token := serviceAccountToken(t, nsA, "prometheus",
		clusterRole(t, "metrics-reader-"+nsA, metricsReaderRule), "")
	quota := nsA
	create(t, wrappers.MakeElasticQuota(quota, nsA).Max(corev1.ResourceCPU, "10").Max(corev1.ResourceMemory, "10Gi").Obj())
	create(t,
		wrappers.MakeQueueUnit("train", nsA).Quota(quota).Consumer().Request(corev1.ResourceCPU, "1500m").Request(corev1.ResourceMemory, "1Gi").Obj(),
		wrappers.MakeQueueUnit("tf", nsB).Quota(quota).ConsumerOf("kubeflow.org/v1", "TFJob").Request(corev1.ResourceCPU, "2").Obj(),
	)
	waitPhase(t, nsA, "train", schedulingv1alpha1.Dequeued)
	waitPhase(t, nsB, "tf", schedulingv1alpha1.Dequeued)
	create(t, wrappers.MakeQueueUnit("big", nsB).Quota(quota).Consumer().Request(corev1.ResourceCPU, "20").Obj())
	waitMessage(t, nsB, "big", "cpu")

	// scrape reads the series of v18Families that name this test's quota
	// or namespaces, and every series of the other two v1.8 families.
	scrape := func(ctx context.Context) (series map[string]float64, attempts map[string]float64, latencyCount uint64, err error) {
		status, body, err := getMetrics(ctx, addr, token)
		if err != nil {
			return nil, nil, 0, err
		}
		if status != http.StatusOK {
			return nil, nil, 0, fmt.Errorf("/metrics answered %d", status)
		}
		var parser expfmt.TextParser
		families, err := parser.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			return nil, nil, 0, fmt.Errorf("parsing /metrics: %w", err)
		}
		series, attempts = map[string]float64{}, map[string]float64{}
		mine := map[string]bool{quota: true, nsA: true, nsB: true}
		for _, name := range append(v18Families, "job_schedule_attempts") {
			for _, m := range families[name].GetMetric() {
				var labels []string
				ours := false
				for _, l := range m.GetLabel() {
					labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
					ours = ours || mine[l.GetValue()]
				}
				if !ours {
					continue
				}
				sort.Strings(labels)
				key := name + "{" + strings.Join(labels, ",") + "}"
				if name == "job_schedule_attempts" {
					attempts[key] = m.GetCounter().GetValue()
				} else {
					series[key] = m.GetGauge().GetValue()
				}
			}
		}
		if h := families["job_scheduling_algorithm_latency"].GetMetric(); len(h) == 1 {
			latencyCount = h[0].GetHistogram().GetSampleCount()
		}
		return series, attempts, latencyCount, nil
	}
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	expect := func(t *testing.T, want map[string]float64) {
		t.Helper()
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			got, _, _, err := scrape(ctx)
			if err != nil {
				return err
			}
			if diff := cmp.Diff(want, got); diff != "" {
				return fmt.Errorf("v1.8 series (-want +got):\n%s", diff)
			}
			return nil
		})
	}

	t.Run("admitted units of two namespaces and two job kinds", func(t *testing.T) {
		expect(t, map[string]float64{
			`dequeued_quota_usage_by_quota{quota=` + q(quota) + `,resource="cpu"}`:          3500,
			`dequeued_quota_usage_by_quota{quota=` + q(quota) + `,resource="memory"}`:       1 << 30,
			`dequeued_quota_usage_by_namespace{namespace=` + q(nsA) + `,resource="cpu"}`:    1.5,
			`dequeued_quota_usage_by_namespace{namespace=` + q(nsA) + `,resource="memory"}`: 1 << 30,
			`dequeued_quota_usage_by_namespace{namespace=` + q(nsB) + `,resource="cpu"}`:    2,
			`queueunits_by_job_type{namespace=` + q(nsA) + `,type="Job"}`:                   1,
			`queueunits_by_job_type{namespace=` + q(nsB) + `,type="Job"}`:                   1,
			`queueunits_by_job_type{namespace=` + q(nsB) + `,type="TFJob"}`:                 1,
		})
		_, attempts, latencyCount, err := scrape(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		scheduled := attempts[`job_schedule_attempts{queue=`+q(quota)+`,result="scheduled"}`]
		unschedulable := attempts[`job_schedule_attempts{queue=`+q(quota)+`,result="unschedulable"}`]
		// Two admissions; big waited at least once (how many turns it had
		// depends on how the events fell into cycles).
		if scheduled != 2 || unschedulable < 1 {
			t.Errorf("job_schedule_attempts %v, want 2 scheduled and at least 1 unschedulable", attempts)
		}
		if latencyCount == 0 {
			t.Error("job_scheduling_algorithm_latency observed no cycle")
		}
	})

	t.Run("a job that finishes gives its usage back", func(t *testing.T) {
		finish(t, nsB, "tf")
		expect(t, map[string]float64{
			`dequeued_quota_usage_by_quota{quota=` + q(quota) + `,resource="cpu"}`:          1500,
			`dequeued_quota_usage_by_quota{quota=` + q(quota) + `,resource="memory"}`:       1 << 30,
			`dequeued_quota_usage_by_namespace{namespace=` + q(nsA) + `,resource="cpu"}`:    1.5,
			`dequeued_quota_usage_by_namespace{namespace=` + q(nsA) + `,resource="memory"}`: 1 << 30,
			`queueunits_by_job_type{namespace=` + q(nsA) + `,type="Job"}`:                   1,
			`queueunits_by_job_type{namespace=` + q(nsB) + `,type="Job"}`:                   1,
			`queueunits_by_job_type{namespace=` + q(nsB) + `,type="TFJob"}`:                 1,
		})
	})

	t.Run("a deleted unit is no longer counted", func(t *testing.T) {
		if err := env.Client.Delete(context.Background(), wrappers.MakeQueueUnit("tf", nsB).Obj()); err != nil {
			t.Fatal(err)
		}
		expect(t, map[string]float64{
			`dequeued_quota_usage_by_quota{quota=` + q(quota) + `,resource="cpu"}`:          1500,
			`dequeued_quota_usage_by_quota{quota=` + q(quota) + `,resource="memory"}`:       1 << 30,
			`dequeued_quota_usage_by_namespace{namespace=` + q(nsA) + `,resource="cpu"}`:    1.5,
			`dequeued_quota_usage_by_namespace{namespace=` + q(nsA) + `,resource="memory"}`: 1 << 30,
			`queueunits_by_job_type{namespace=` + q(nsA) + `,type="Job"}`:                   1,
			`queueunits_by_job_type{namespace=` + q(nsB) + `,type="Job"}`:                   1,
		})
	})

	t.Run("a deleted quota's series go; what its units hold still counts in their namespace", func(t *testing.T) {
		if err := env.Client.Delete(context.Background(), wrappers.MakeElasticQuota(quota, nsA).Obj()); err != nil {
			t.Fatal(err)
		}
		expect(t, map[string]float64{
			`dequeued_quota_usage_by_namespace{namespace=` + q(nsA) + `,resource="cpu"}`:    1.5,
			`dequeued_quota_usage_by_namespace{namespace=` + q(nsA) + `,resource="memory"}`: 1 << 30,
			`queueunits_by_job_type{namespace=` + q(nsA) + `,type="Job"}`:                   1,
			`queueunits_by_job_type{namespace=` + q(nsB) + `,type="Job"}`:                   1,
		})
	})
}

// waitV18Usage waits until the process's registry (every manager's in this
// test binary) says quota holds cpu millicores, in
// dequeued_quota_usage_by_quota.
func waitV18Usage(t *testing.T, quota string, cpu float64) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func(context.Context) error {
		families, err := ctrlmetrics.Registry.Gather()
		if err != nil {
			return err
		}
		for _, f := range families {
			if f.GetName() != "dequeued_quota_usage_by_quota" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["quota"] == quota && labels["resource"] == "cpu" {
					if got := m.GetGauge().GetValue(); got != cpu {
						return fmt.Errorf("dequeued_quota_usage_by_quota{quota=%q,resource=\"cpu\"} %v, want %v", quota, got, cpu)
					}
					return nil
				}
			}
		}
		return fmt.Errorf("no dequeued_quota_usage_by_quota for quota %s", quota)
	})
}
