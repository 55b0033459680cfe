package generator

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/policy"
	"github.com/koord-queue/koord-queue/test/performance/runner"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

func TestUnitDeclaresItsClassRunTime(t *testing.T) {
	for name, tc := range map[string]struct {
		class scenario.Class
		want  *int32
	}{
		"a class that declares 30s":         {class: scenario.DeclaredLong, want: ptr.To[int32](30)},
		"a class that declares nothing":     {class: scenario.Small},
		"the declared scenario's short one": {class: scenario.DeclaredShort, want: ptr.To[int32](10)},
	} {
		t.Run(name, func(t *testing.T) {
			u := Unit("q", tc.class, 1)
			if diff := cmp.Diff(tc.want, u.Spec.MaximumExecutionTimeSeconds); diff != "" {
				t.Errorf("spec.maximumExecutionTimeSeconds (-want +got):\n%s", diff)
			}
			if got, want := u.Labels[runner.LabelRuntime], strconv.FormatInt(tc.class.Runtime.Milliseconds(), 10); got != want {
				t.Errorf("runtime label %q, want %q: the runner ends it before its declared time", got, want)
			}
		})
	}
}

// TestElasticQuotaPreemptsAsKueueLowerPriority: a quota standing for a
// ClusterQueue with withinClusterQueue: LowerPriority lets its units evict
// lower-priority units of the quota, running or not, as Kueue does; a quota
// without it evicts nobody of its own.
func TestElasticQuotaPreemptsAsKueueLowerPriority(t *testing.T) {
	s := &scenario.Scenario{Quotas: []scenario.Quota{{Name: "cq", Min: 20, Max: 120, Preemption: true}, {Name: "other", Min: 20, Max: 120}}}
	for _, tc := range []struct {
		quota                    scenario.Quota
		wantPreempt, wantRunning bool
	}{
		{quota: s.Quotas[0], wantPreempt: true, wantRunning: true},
		{quota: s.Quotas[1]},
	} {
		cfg, err := policy.ConfigFromQueue(schedulingv1alpha1.QueuePolicyPriority, ElasticQuota(s, tc.quota).Annotations)
		if err != nil {
			t.Fatalf("quota %s: %v", tc.quota.Name, err)
		}
		if cfg.EnablePreemption != tc.wantPreempt || cfg.PreemptRunning != tc.wantRunning {
			t.Errorf("quota %s: in-queue preemption %v, of running units %v; want %v, %v", tc.quota.Name, cfg.EnablePreemption, cfg.PreemptRunning, tc.wantPreempt, tc.wantRunning)
		}
	}
}
