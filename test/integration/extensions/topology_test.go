package extensions

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestJobLandsInItsRack: a Job whose unit was admitted to rack r1 of
// block b1 (status.topologyAssignments) is released requiring that rack,
// added to its own required node affinity (never widening it), and,
// evicted, it has its own affinity back.
func TestJobLandsInItsRack(t *testing.T) {
	ns := newNamespace(t)
	quota := ns + "-team"
	create(t, wrappers.MakeElasticQuota(quota, ns).Max("cpu", "10").Obj())
	zone := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}
	j := extensionstest.MakeJob("train", ns).Quota(quota).Request("cpu", "1").Obj()
	j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{zone}}}}}}
	queued := j.Spec.Template.Spec.Affinity.DeepCopy()
	create(t, j)
	key := client.ObjectKey{Namespace: ns, Name: job.Integration().UnitName(j.Name)}
	unitWhere(t, key, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
	setUnitStatus(t, key, func(u *schedulingv1alpha1.QueueUnit) {
		u.Status.TopologyAssignments = []schedulingv1alpha1.PodSetTopologyAssignment{{Name: "main", Topology: "default",
			Levels:  []string{"example.com/block", "example.com/rack"},
			Domains: []schedulingv1alpha1.TopologyDomainAssignment{{Values: []string{"b1", "r1"}, Count: 1}}}}
	})
	admit(t, key)
	released := jobWhere(t, job.Integration(), client.ObjectKeyFromObject(j), "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })
	want := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{zone,
				{Key: "example.com/block", Operator: corev1.NodeSelectorOpIn, Values: []string{"b1"}},
				{Key: "example.com/rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r1"}}}}}}}}
	if diff := cmp.Diff(want, templateOf(t, released, "main").Spec.Affinity); diff != "" {
		t.Errorf("released with affinity (-want +got):\n%s", diff)
	}
	placementApplied(t, key, "topology domains")

	evict(t, key)
	jobWhere(t, job.Integration(), client.ObjectKeyFromObject(j), "suspended with its own affinity back", func(j framework.GenericJob) bool {
		return j.IsSuspended() && cmp.Equal(queued, templateOf(t, j, "main").Spec.Affinity)
	})
}
