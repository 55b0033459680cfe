package extensions

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/extensions/spark"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestJobsLandOnTheirPool: a Job of a quota in a node pool's tree (as
// koord-manager's ElasticQuotaProfile controller and webhook label them) is
// released requiring the pool's nodes, and evicted it is as it was queued.
func TestJobsLandOnTheirPool(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	// Quota names are the cluster's: these are the test's own.
	root, leaf, tree := ns+"-a100-root", ns+"-a100-team", ns+"-tree"
	create(t, &quotav1alpha1.ElasticQuotaProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "a100", Namespace: ns},
		Spec: quotav1alpha1.ElasticQuotaProfileSpec{QuotaName: root, NodeSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"pool": "a100"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "gpu-health", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"bad"}},
			},
		}},
	})
	create(t, wrappers.MakeElasticQuota(root, ns).Max("cpu", "100").IsParent().
		Label(elasticquotav1alpha1.LabelQuotaIsRoot, "true").Label(elasticquotav1alpha1.LabelQuotaTreeID, tree).
		Label(elasticquotav1alpha1.LabelQuotaProfile, "a100").Obj())
	create(t, wrappers.MakeElasticQuota(leaf, ns).Max("cpu", "10").Parent(root).
		Label(elasticquotav1alpha1.LabelQuotaTreeID, tree).Obj())

	// The Job requires a zone of its own: each of its terms gets the pool.
	j := extensionstest.MakeJob("train", ns).Quota(leaf).Request("cpu", "1").Obj()
	j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}},
		}},
	}}
	queued := j.Spec.Template.Spec.Affinity.DeepCopy()
	create(t, j)
	key := client.ObjectKeyFromObject(j)
	unitWhere(t, key, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })

	admit(t, key)
	released := jobWhere(t, job.Integration(), key, "released", func(j framework.GenericJob) bool { return !j.IsSuspended() })
	want := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}},
				{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"a100"}},
				{Key: "gpu-health", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"bad"}},
			}},
		}},
	}}
	if diff := cmp.Diff(want, templateOf(t, released, "main").Spec.Affinity); diff != "" {
		t.Errorf("released with affinity (-want +got):\n%s", diff)
	}
	unitWhere(t, key, "PodSetUpdatesApplied True, naming the pool", func(u *schedulingv1alpha1.QueueUnit) bool {
		c := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitPodSetUpdatesApplied)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "node pool a100")
	})

	evict(t, key)
	jobWhere(t, job.Integration(), key, "suspended with its own affinity back", func(j framework.GenericJob) bool {
		return j.IsSuspended() && cmp.Equal(queued, templateOf(t, j, "main").Spec.Affinity)
	})

	// Admitted again: the pool's requirements once, not twice.
	admit(t, key)
	released = jobWhere(t, job.Integration(), key, "released again", func(j framework.GenericJob) bool { return !j.IsSuspended() })
	if diff := cmp.Diff(want, templateOf(t, released, "main").Spec.Affinity); diff != "" {
		t.Errorf("released again with affinity (-want +got):\n%s", diff)
	}

	// A Spark application's pods come from templates it does not hold:
	// released all the same, its unit says the pool's affinity missed them.
	app := extensionstest.MakeSparkApplication("etl", ns).Quota(leaf).Driver(1, "1g").Executors(1, 1, "1g").Obj()
	create(t, app)
	appKey := client.ObjectKey{Namespace: ns, Name: spark.Integration().UnitName(app.Name)}
	unitWhere(t, appKey, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
	admit(t, appKey)
	unitWhere(t, appKey, "PodSetUpdatesApplied False, naming the pool", func(u *schedulingv1alpha1.QueueUnit) bool {
		c := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitPodSetUpdatesApplied)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "node pool a100 was not put on pod sets driver, executor")
	})
}
