package extensions

import (
	"context"
	"slices"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/argo"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/extensions/ray"
	"github.com/koord-queue/koord-queue/pkg/extensions/spark"
	sparkv1beta2 "github.com/koord-queue/koord-queue/pkg/extensions/spark/v1beta2"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestJobsLandOnTheirPool: a Job of a quota in a node pool's tree (as
// koord-manager's ElasticQuotaProfile controller and webhook label them) is
// released requiring the pool's nodes, and evicted it is as it was queued;
// so is a Spark application, through its driver's and executors'
// affinity. A Job of the classic tree, whose nodeSelector names the pool's
// nodes, is released requiring nodes outside the pool, and so are an Argo
// Workflow's pods and a RayJob's default submitter.
//
// It does not run in parallel: while its ElasticQuotaProfile exists, every
// job of the classic tree in the cluster keeps off its pool, which the
// other tests do not expect. It takes the profile away before it ends.
func TestJobsLandOnTheirPool(t *testing.T) {
	ns := newNamespace(t)
	// Quota names are the cluster's: these are the test's own.
	root, leaf, tree := ns+"-a100-root", ns+"-a100-team", ns+"-tree"
	profile := &quotav1alpha1.ElasticQuotaProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "a100", Namespace: ns},
		Spec: quotav1alpha1.ElasticQuotaProfileSpec{QuotaName: root, NodeSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"pool": "a100"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "gpu-health", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"bad"}},
			},
		}},
	}
	create(t, profile)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), profile) })
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
	released, key := admitAndRelease(t, job.Integration(), j)
	// onPool is the pool's requirements after own, in a single term.
	onPool := func(own ...corev1.NodeSelectorRequirement) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: append(slices.Clone(own),
					corev1.NodeSelectorRequirement{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"a100"}},
					corev1.NodeSelectorRequirement{Key: "gpu-health", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"bad"}})},
			}},
		}}
	}
	want := onPool(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}})
	if diff := cmp.Diff(want, templateOf(t, released, "main").Spec.Affinity); diff != "" {
		t.Errorf("released with affinity (-want +got):\n%s", diff)
	}
	placementApplied(t, key, "node pool a100")

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
	// the operator's webhook gives them the driver's and the executors'
	// affinity, which take the pool's.
	app := extensionstest.MakeSparkApplication("etl", ns).Quota(leaf).Driver(1, "1g").Executors(1, 1, "1g").Obj()
	releasedApp, appKey := admitAndRelease(t, spark.Integration(), app)
	spec := releasedApp.Object().(*sparkv1beta2.SparkApplication).Spec
	if diff := cmp.Diff(onPool(), spec.Driver.Affinity); diff != "" {
		t.Errorf("driver affinity (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(onPool(), spec.Executor.Affinity); diff != "" {
		t.Errorf("executor affinity (-want +got):\n%s", diff)
	}
	placementApplied(t, appKey, "node pool a100")
	evict(t, appKey)
	jobWhere(t, spark.Integration(), client.ObjectKeyFromObject(app), "suspended without affinity", func(j framework.GenericJob) bool {
		a := j.Object().(*sparkv1beta2.SparkApplication)
		return j.IsSuspended() && a.Spec.Driver.Affinity == nil && a.Spec.Executor.Affinity == nil
	})

	// The classic tree: its capacity is the cluster's less the pool's, so
	// its Job keeps off the pool's nodes even when its nodeSelector names
	// them (its pods then fit no node, and wait). Off the pool is "pool not
	// a100, or gpu-health bad".
	classic := ns + "-classic"
	create(t, wrappers.MakeElasticQuota(classic, ns).Max("cpu", "10").Obj())
	offPool := func(own ...corev1.NodeSelectorRequirement) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: append(slices.Clone(own), corev1.NodeSelectorRequirement{Key: "pool", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a100"}})},
				{MatchExpressions: append(slices.Clone(own), corev1.NodeSelectorRequirement{Key: "gpu-health", Operator: corev1.NodeSelectorOpIn, Values: []string{"bad"}})},
			}},
		}}
	}
	hostile := extensionstest.MakeJob("on-a100", ns).Quota(classic).Request("cpu", "1").Obj()
	hostile.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a100"}
	released, hostileKey := admitAndRelease(t, job.Integration(), hostile)
	tmpl := templateOf(t, released, "main")
	if diff := cmp.Diff(offPool(), tmpl.Spec.Affinity); diff != "" {
		t.Errorf("classic Job released with affinity (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"pool": "a100"}, tmpl.Spec.NodeSelector); diff != "" {
		t.Errorf("classic Job's own nodeSelector (-want +got):\n%s", diff)
	}
	placementApplied(t, hostileKey, "keeping them off node pool a100")
	evict(t, hostileKey)
	jobWhere(t, job.Integration(), hostileKey, "suspended with no affinity", func(j framework.GenericJob) bool {
		return j.IsSuspended() && templateOf(t, j, "main").Spec.Affinity == nil
	})

	// An Argo Workflow of the classic tree: every pod without an affinity
	// of its template's takes spec.affinity.
	wf := extensionstest.MakeWorkflow("steps", ns).QueueTemplate().Suspend(true).MinResources("cpu: 1").Quota(classic).Obj()
	releasedWf, wfKey := admitAndRelease(t, argo.Integration(), wf)
	if diff := cmp.Diff(offPool(), releasedWf.Object().(*wfv1.Workflow).Spec.Affinity); diff != "" {
		t.Errorf("classic Workflow's spec.affinity (-want +got):\n%s", diff)
	}
	evict(t, wfKey)
	jobWhere(t, argo.Integration(), wfKey, "suspended without affinity", func(j framework.GenericJob) bool {
		return j.IsSuspended() && j.Object().(*wfv1.Workflow).Spec.Affinity == nil
	})

	// A RayJob of the classic tree: its submitter, made from KubeRay's
	// default, gets that default with the affinity, and loses both again.
	rj := extensionstest.MakeRayJob("ray", ns, extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota(classic).Obj()
	releasedRj, rjKey := admitAndRelease(t, ray.RayJobIntegration(), rj)
	if submitter := releasedRj.Object().(*rayv1.RayJob).Spec.SubmitterPodTemplate; submitter == nil {
		t.Errorf("classic RayJob released without a submitter template")
	} else if diff := cmp.Diff(offPool(), submitter.Spec.Affinity); diff != "" {
		t.Errorf("classic RayJob's submitter affinity (-want +got):\n%s", diff)
	}
	evict(t, rjKey)
	jobWhere(t, ray.RayJobIntegration(), client.ObjectKeyFromObject(rj), "suspended without a submitter template", func(j framework.GenericJob) bool {
		return j.IsSuspended() && j.Object().(*rayv1.RayJob).Spec.SubmitterPodTemplate == nil
	})

	// Without the profile, a Job of the classic tree keeps off nothing: the
	// manager has seen it go, and the tests after this one see no pool.
	if err := k8s.Delete(context.Background(), profile); err != nil {
		t.Fatal(err)
	}
	free := extensionstest.MakeJob("free", ns).Quota(classic).Request("cpu", "1").Obj()
	released, _ = admitAndRelease(t, job.Integration(), free)
	if a := templateOf(t, released, "main").Spec.Affinity; a != nil {
		t.Errorf("classic Job released with affinity %v once no pool is left", a)
	}
}

// admitAndRelease creates obj, a job of integ, admits its unit once it is
// queued, and is the job once released, and its unit's key.
func admitAndRelease(t *testing.T, integ framework.Integration, obj client.Object) (framework.GenericJob, client.ObjectKey) {
	t.Helper()
	create(t, obj)
	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: integ.UnitName(obj.GetName())}
	unitWhere(t, key, "Enqueued", func(u *schedulingv1alpha1.QueueUnit) bool { return u.EffectivePhase() == schedulingv1alpha1.Enqueued })
	admit(t, key)
	return jobWhere(t, integ, client.ObjectKeyFromObject(obj), "released", func(j framework.GenericJob) bool { return !j.IsSuspended() }), key
}

// placementApplied waits for the unit's PodSetUpdatesApplied condition to
// be True, its message saying text.
func placementApplied(t *testing.T, key client.ObjectKey, text string) {
	t.Helper()
	unitWhere(t, key, "PodSetUpdatesApplied True, saying "+text, func(u *schedulingv1alpha1.QueueUnit) bool {
		c := apimeta.FindStatusCondition(u.Status.Conditions, schedulingv1alpha1.QueueUnitPodSetUpdatesApplied)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, text)
	})
}
