package admission

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// gatherV18 scrapes a Cache's v1.8 metrics (gather).
func gatherV18(t *testing.T, c *Cache) map[string]float64 {
	t.Helper()
	return gather(t, &v18Collector{counts: &c.jobTypeCounts})
}

// gather scrapes collector through a pedantic registry (which also checks
// its metrics against their descriptions), as name{label="value",...} →
// value.
func gather(t *testing.T, collector prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			v := m.GetGauge().GetValue()
			if f.GetType().String() == "COUNTER" {
				v = m.GetCounter().GetValue()
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// TestV18MetricsFollowTheCache: Koord-Queue v1.8's gauges and counter say
// what the Cache holds as soon as it changes (no cycle, no refresh): usage
// by quota (cpu in millicores, parents included) and by namespace (cpu in
// cores), turns per queue, units per namespace and job kind; and a series
// goes when its quota, queue, namespace's usage or last unit of a kind does.
func TestV18MetricsFollowTheCache(t *testing.T) {
	c := NewCache()
	c.UpsertNode(wrappers.Node("n1", "32", "64Gi"))
	for _, eq := range []*wrappers.ElasticQuotaWrapper{
		wrappers.MakeElasticQuota("org", "root").IsParent().Max(corev1.ResourceCPU, "100").Max(corev1.ResourceMemory, "100Gi"),
		wrappers.MakeElasticQuota("team-a", "ns-a").Parent("org").Max(corev1.ResourceCPU, "4").Max(corev1.ResourceMemory, "8Gi"),
		wrappers.MakeElasticQuota("team-b", "ns-b").Max(corev1.ResourceCPU, "4").Max(corev1.ResourceMemory, "8Gi"),
	} {
		c.UpsertElasticQuota(eq.Obj())
	}
	for _, q := range []string{"team-a", "team-b"} {
		c.UpsertQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: q}})
	}
	units := map[string]*schedulingv1alpha1.QueueUnit{}
	for _, w := range []*wrappers.QueueUnitWrapper{
		wrappers.MakeQueueUnit("train", "ns-a").Quota("team-a").Consumer().Request(corev1.ResourceCPU, "1500m").Request(corev1.ResourceMemory, "1Gi"),
		wrappers.MakeQueueUnit("tf", "ns-a").Quota("team-a").ConsumerOf("kubeflow.org/v1", "TFJob").Request(corev1.ResourceCPU, "1"),
		wrappers.MakeQueueUnit("train", "ns-b").Quota("team-b").Consumer().Request(corev1.ResourceCPU, "2"),
		wrappers.MakeQueueUnit("big", "ns-b").Quota("team-b").Consumer().Request(corev1.ResourceCPU, "5"),
		wrappers.MakeQueueUnit("plain", "ns-b").Quota("team-b").Request(corev1.ResourceCPU, "1"),
	} {
		u := w.Obj()
		units[u.Namespace+"/"+u.Name] = u
		c.UpsertUnit(u)
	}
	update := func(key string, mutate func(u *schedulingv1alpha1.QueueUnit)) {
		u := units[key].DeepCopy()
		mutate(u)
		units[key] = u
		c.UpsertUnit(u)
	}
	now := time.Unix(1000, 0)

	steps := []struct {
		name string
		do   func()
		want map[string]float64
	}{
		{
			name: "units wait: each existing job counted, nothing held, no queue tried",
			do:   func() {},
			want: map[string]float64{
				`dequeued_quota_usage_by_quota{quota="org",resource="cpu"}`:       0,
				`dequeued_quota_usage_by_quota{quota="org",resource="memory"}`:    0,
				`dequeued_quota_usage_by_quota{quota="team-a",resource="cpu"}`:    0,
				`dequeued_quota_usage_by_quota{quota="team-a",resource="memory"}`: 0,
				`dequeued_quota_usage_by_quota{quota="team-b",resource="cpu"}`:    0,
				`dequeued_quota_usage_by_quota{quota="team-b",resource="memory"}`: 0,
				`queueunits_by_job_type{namespace="ns-a",type="Job"}`:             1,
				`queueunits_by_job_type{namespace="ns-a",type="TFJob"}`:           1,
				`queueunits_by_job_type{namespace="ns-b",type="Job"}`:             2,
			},
		},
		{
			name: "a cycle admits four units (held from the decision on) and big waits",
			do:   func() { c.cycle(now, -1) },
			want: map[string]float64{
				`dequeued_quota_usage_by_quota{quota="org",resource="cpu"}`:             2500,
				`dequeued_quota_usage_by_quota{quota="org",resource="memory"}`:          1 << 30,
				`dequeued_quota_usage_by_quota{quota="team-a",resource="cpu"}`:          2500,
				`dequeued_quota_usage_by_quota{quota="team-a",resource="memory"}`:       1 << 30,
				`dequeued_quota_usage_by_quota{quota="team-b",resource="cpu"}`:          3000,
				`dequeued_quota_usage_by_quota{quota="team-b",resource="memory"}`:       0,
				`dequeued_quota_usage_by_namespace{namespace="ns-a",resource="cpu"}`:    2.5,
				`dequeued_quota_usage_by_namespace{namespace="ns-a",resource="memory"}`: 1 << 30,
				`dequeued_quota_usage_by_namespace{namespace="ns-b",resource="cpu"}`:    3,
				`job_schedule_attempts{queue="team-a",result="scheduled"}`:              2,
				`job_schedule_attempts{queue="team-a",result="unschedulable"}`:          0,
				`job_schedule_attempts{queue="team-b",result="scheduled"}`:              2,
				`job_schedule_attempts{queue="team-b",result="unschedulable"}`:          1,
				`queueunits_by_job_type{namespace="ns-a",type="Job"}`:                   1,
				`queueunits_by_job_type{namespace="ns-a",type="TFJob"}`:                 1,
				`queueunits_by_job_type{namespace="ns-b",type="Job"}`:                   2,
			},
		},
		{
			name: "a job finishes: its usage is released at once, its unit still counted",
			do: func() {
				update("ns-a/train", func(u *schedulingv1alpha1.QueueUnit) { u.Status.Phase = schedulingv1alpha1.Succeed })
			},
			want: map[string]float64{
				`dequeued_quota_usage_by_quota{quota="org",resource="cpu"}`:          1000,
				`dequeued_quota_usage_by_quota{quota="org",resource="memory"}`:       0,
				`dequeued_quota_usage_by_quota{quota="team-a",resource="cpu"}`:       1000,
				`dequeued_quota_usage_by_quota{quota="team-a",resource="memory"}`:    0,
				`dequeued_quota_usage_by_quota{quota="team-b",resource="cpu"}`:       3000,
				`dequeued_quota_usage_by_quota{quota="team-b",resource="memory"}`:    0,
				`dequeued_quota_usage_by_namespace{namespace="ns-a",resource="cpu"}`: 1,
				`dequeued_quota_usage_by_namespace{namespace="ns-b",resource="cpu"}`: 3,
				`job_schedule_attempts{queue="team-a",result="scheduled"}`:           2,
				`job_schedule_attempts{queue="team-a",result="unschedulable"}`:       0,
				`job_schedule_attempts{queue="team-b",result="scheduled"}`:           2,
				`job_schedule_attempts{queue="team-b",result="unschedulable"}`:       1,
				`queueunits_by_job_type{namespace="ns-a",type="Job"}`:                1,
				`queueunits_by_job_type{namespace="ns-a",type="TFJob"}`:              1,
				`queueunits_by_job_type{namespace="ns-b",type="Job"}`:                2,
			},
		},
		{
			name: "ns-a's units are deleted: its usage and job kinds go",
			do: func() {
				c.DeleteUnit("ns-a", "train")
				c.DeleteUnit("ns-a", "tf")
			},
			want: map[string]float64{
				`dequeued_quota_usage_by_quota{quota="org",resource="cpu"}`:          0,
				`dequeued_quota_usage_by_quota{quota="org",resource="memory"}`:       0,
				`dequeued_quota_usage_by_quota{quota="team-a",resource="cpu"}`:       0,
				`dequeued_quota_usage_by_quota{quota="team-a",resource="memory"}`:    0,
				`dequeued_quota_usage_by_quota{quota="team-b",resource="cpu"}`:       3000,
				`dequeued_quota_usage_by_quota{quota="team-b",resource="memory"}`:    0,
				`dequeued_quota_usage_by_namespace{namespace="ns-b",resource="cpu"}`: 3,
				`job_schedule_attempts{queue="team-a",result="scheduled"}`:           2,
				`job_schedule_attempts{queue="team-a",result="unschedulable"}`:       0,
				`job_schedule_attempts{queue="team-b",result="scheduled"}`:           2,
				`job_schedule_attempts{queue="team-b",result="unschedulable"}`:       1,
				`queueunits_by_job_type{namespace="ns-b",type="Job"}`:                2,
			},
		},
		{
			name: "a quota and a queue deleted take their series; units still holding quota still count in their namespace",
			do: func() {
				c.DeleteElasticQuota("ns-a", "team-a")
				c.DeleteQueue("team-a")
			},
			want: map[string]float64{
				`dequeued_quota_usage_by_quota{quota="org",resource="cpu"}`:          0,
				`dequeued_quota_usage_by_quota{quota="org",resource="memory"}`:       0,
				`dequeued_quota_usage_by_quota{quota="team-b",resource="cpu"}`:       3000,
				`dequeued_quota_usage_by_quota{quota="team-b",resource="memory"}`:    0,
				`dequeued_quota_usage_by_namespace{namespace="ns-b",resource="cpu"}`: 3,
				`job_schedule_attempts{queue="team-b",result="scheduled"}`:           2,
				`job_schedule_attempts{queue="team-b",result="unschedulable"}`:       1,
				`queueunits_by_job_type{namespace="ns-b",type="Job"}`:                2,
			},
		},
	}
	for _, step := range steps {
		step.do()
		if diff := cmp.Diff(step.want, gatherV18(t, c)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step.name, diff)
		}
	}
}
