package watched

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

func TestElasticQuotaChanged(t *testing.T) {
	base := func() *elasticquotav1alpha1.ElasticQuota {
		eq := wrappers.MakeElasticQuota("team-a", "quotas").
			Min(corev1.ResourceCPU, "4").Max(corev1.ResourceCPU, "8").
			Parent("org").
			Label(elasticquotav1alpha1.LabelQuotaIsParent, "false").
			Policy(schedulingv1alpha1.QueuePolicyBlock).
			Annotation(schedulingv1alpha1.AnnotationMaxDepth, "10").
			Annotation(elasticquotav1alpha1.AnnotationQuotaNamespaces, `["team-a"]`).
			Obj()
		eq.CreationTimestamp = metav1.Unix(100, 0)
		eq.ResourceVersion = "1"
		for _, key := range elasticquotav1alpha1.KoordSchedulerFigures {
			eq.Annotations[key] = `{"cpu":"1"}`
		}
		eq.Status.Used = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		return eq
	}
	cases := map[string]struct {
		update func(*elasticquotav1alpha1.ElasticQuota)
		want   bool
	}{
		"koord-scheduler rewrites its figures and status.used": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				for _, key := range elasticquotav1alpha1.KoordSchedulerFigures {
					eq.Annotations[key] = `{"cpu":"3","memory":"1Gi"}`
				}
				eq.Status.Used = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
				eq.ResourceVersion = "2"
			},
		},
		"another controller's label and annotation": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Labels["team.example.com/owner"] = "alice"
				eq.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
				eq.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "koord-scheduler"}}
				eq.Generation++
			},
		},
		"the same max written another way": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Spec.Max[corev1.ResourceCPU] = resource.MustParse("8000m")
			},
		},
		"max raised": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) { eq.Spec.Max[corev1.ResourceCPU] = resource.MustParse("9") },
			want:   true,
		},
		"min lowered": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) { eq.Spec.Min[corev1.ResourceCPU] = resource.MustParse("2") },
			want:   true,
		},
		"a resource newly limited": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Spec.Max[corev1.ResourceMemory] = resource.MustParse("1Gi")
			},
			want: true,
		},
		"koord-scheduler drops a figure": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				delete(eq.Annotations, elasticquotav1alpha1.AnnotationNonPreemptibleUsed)
			},
		},
		"moved to the root": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) { delete(eq.Labels, elasticquotav1alpha1.LabelQuotaParent) },
			want:   true,
		},
		"moved under another parent": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Labels[elasticquotav1alpha1.LabelQuotaParent] = "other"
			},
			want: true,
		},
		"becomes a parent": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Labels[elasticquotav1alpha1.LabelQuotaIsParent] = "true"
			},
			want: true,
		},
		"stops lending": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Labels[elasticquotav1alpha1.LabelAllowLentResource] = "false"
			},
			want: true,
		},
		"moved to another quota tree": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Labels[elasticquotav1alpha1.LabelQuotaTreeID] = "t1"
			},
			want: true,
		},
		"becomes a quota tree's root": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Labels[elasticquotav1alpha1.LabelQuotaIsRoot] = "true"
			},
			want: true,
		},
		"a tree root's capacity written by koord-manager": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Annotations[elasticquotav1alpha1.AnnotationTotalResource] = `{"cpu":"16"}`
			},
			want: true,
		},
		"a tree root's pool (profile) named": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Labels[elasticquotav1alpha1.LabelQuotaProfile] = "a100"
			},
			want: true,
		},
		"a tree root kept out of the classic tree": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Labels[elasticquotav1alpha1.LabelQuotaIgnoreDefaultTree] = "true"
			},
			want: true,
		},
		"allowed to force updates": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Labels[elasticquotav1alpha1.LabelAllowForceUpdate] = "true"
			},
			want: true,
		},
		"queue policy changed": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Labels[schedulingv1alpha1.LabelQueuePolicy] = string(schedulingv1alpha1.QueuePolicyPriority)
			},
			want: true,
		},
		"a koord-queue annotation changed": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Annotations[schedulingv1alpha1.AnnotationMaxDepth] = "20"
			},
			want: true,
		},
		"a koord-queue annotation removed": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				delete(eq.Annotations, schedulingv1alpha1.AnnotationMaxDepth)
			},
			want: true,
		},
		"a koord-queue annotation added": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Annotations[schedulingv1alpha1.AnnotationEnableQueueUnitPreemption] = "true"
			},
			want: true,
		},
		"shared weight set": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Annotations[elasticquotav1alpha1.AnnotationSharedWeight] = `{"cpu":"2"}`
			},
			want: true,
		},
		"serves another namespace": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.Annotations[elasticquotav1alpha1.AnnotationQuotaNamespaces] = `["team-a","team-b"]`
			},
			want: true,
		},
		"being deleted": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				now := metav1.Unix(200, 0)
				eq.DeletionTimestamp = &now
			},
			want: true,
		},
		"recreated under the same name": {
			update: func(eq *elasticquotav1alpha1.ElasticQuota) {
				eq.UID = "another"
				eq.CreationTimestamp = metav1.Unix(300, 0)
			},
			want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old := base()
			updated := old.DeepCopy()
			tc.update(updated)
			if got := ElasticQuotaChanged(old, updated); got != tc.want {
				t.Errorf("ElasticQuotaChanged = %v, want %v; the update (-old +updated):\n%s", got, tc.want, cmp.Diff(old, updated))
			}
		})
	}
}

// BenchmarkElasticQuotaChanged: the comparison runs twice for each of
// koord-scheduler's writes (the admission cache, the Queue controller).
func BenchmarkElasticQuotaChanged(b *testing.B) {
	old := wrappers.MakeElasticQuota("team-a", "quotas").
		Min(corev1.ResourceCPU, "4").Max(corev1.ResourceCPU, "8").Max(corev1.ResourceMemory, "64Gi").
		Parent("org").Policy(schedulingv1alpha1.QueuePolicyBlock).
		Annotation(schedulingv1alpha1.AnnotationMaxDepth, "10").
		Obj()
	for _, key := range elasticquotav1alpha1.KoordSchedulerFigures {
		old.Annotations[key] = `{"cpu":"1","memory":"1Gi"}`
	}
	updated := old.DeepCopy()
	for _, key := range elasticquotav1alpha1.KoordSchedulerFigures {
		updated.Annotations[key] = `{"cpu":"2","memory":"2Gi"}`
	}
	b.ReportAllocs()
	for b.Loop() {
		if ElasticQuotaChanged(old, updated) {
			b.Fatal("koord-scheduler's figures taken for a change")
		}
	}
}

func TestNodeCapacity(t *testing.T) {
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	node := func(mutate func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n"},
			Status: corev1.NodeStatus{
				Allocatable: cpu("32"),
				Conditions: []corev1.NodeCondition{
					{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
					{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
				},
			},
		}
		if mutate != nil {
			mutate(n)
		}
		return n
	}
	deleted := metav1.Unix(100, 0)
	cases := map[string]struct {
		node *corev1.Node
		want corev1.ResourceList
	}{
		"ready and schedulable: its allocatable": {node: node(nil), want: cpu("32")},
		"cordoned": {
			node: node(func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		},
		"being deleted": {
			node: node(func(n *corev1.Node) { n.DeletionTimestamp = &deleted }),
		},
		"not ready": {
			node: node(func(n *corev1.Node) { n.Status.Conditions[1].Status = corev1.ConditionFalse }),
		},
		"readiness unknown": {
			node: node(func(n *corev1.Node) { n.Status.Conditions[1].Status = corev1.ConditionUnknown }),
		},
		"no Ready condition yet": {
			node: node(func(n *corev1.Node) { n.Status.Conditions = n.Status.Conditions[:1] }),
		},
		"tainted but schedulable: taints are the scheduler's business": {
			node: node(func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
			}),
			want: cpu("32"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, NodeCapacity(tc.node)); diff != "" {
				t.Errorf("NodeCapacity (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCapacityChanged(t *testing.T) {
	list := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	cases := map[string]struct {
		before, after corev1.ResourceList
		want          bool
	}{
		"the same":                      {before: list("cpu", "32", "memory", "64Gi"), after: list("cpu", "32", "memory", "64Gi")},
		"the same amount written again": {before: list("cpu", "32"), after: list("cpu", "32000m")},
		"none before, none after":       {},
		"none and an empty list":        {before: nil, after: list()},
		"cpu lowered":                   {before: list("cpu", "32"), after: list("cpu", "31"), want: true},
		"a resource added":              {before: list("cpu", "32"), after: list("cpu", "32", "nvidia.com/gpu", "8"), want: true},
		"a resource gone":               {before: list("cpu", "32", "nvidia.com/gpu", "8"), after: list("cpu", "32"), want: true},
		"the node stops counting":       {before: list("cpu", "32"), want: true},
		"the node starts counting":      {after: list("cpu", "32"), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := CapacityChanged(tc.before, tc.after); got != tc.want {
				t.Errorf("CapacityChanged(%v, %v) = %v, want %v", tc.before, tc.after, got, tc.want)
			}
		})
	}
}

// TestNodeHeartbeatChangesNoCapacity: what the kubelet and the node
// lifecycle controller rewrite all the time leaves the capacity as it was.
func TestNodeHeartbeatChangesNoCapacity(t *testing.T) {
	before := wrappers.Node("n", "32", "64Gi")
	after := before.DeepCopy()
	after.ResourceVersion = "2"
	after.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0"}
	after.Labels = map[string]string{"topology.kubernetes.io/zone": "a"}
	after.Status.Conditions[0].LastHeartbeatTime = metav1.Unix(200, 0)
	after.Status.Conditions = append(after.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse})
	after.Status.Images = []corev1.ContainerImage{{Names: []string{"busybox"}}}
	if CapacityChanged(NodeCapacity(before), NodeCapacity(after)) {
		t.Errorf("a heartbeat changed the capacity: %v, then %v", NodeCapacity(before), NodeCapacity(after))
	}
}
