// Package wrappers builds the API objects tests use (QueueUnits,
// ElasticQuotas, Nodes, pod templates) fluently, so a test case shows only
// what matters to it. Every builder takes the name first, then the
// namespace, as Kueue's do and as the job builders of
// pkg/extensions/extensionstest do:
//
//	wrappers.MakeQueueUnit("a", "default").Quota("team-a").Priority(5).Request("cpu", "4").Obj()
package wrappers

import (
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// QueueUnitWrapper builds a QueueUnit.
type QueueUnitWrapper struct{ schedulingv1alpha1.QueueUnit }

// MakeQueueUnit starts a unit with no request, no pod sets, no quota and no
// status.
func MakeQueueUnit(name, namespace string) *QueueUnitWrapper {
	return &QueueUnitWrapper{schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}}
}

// Obj returns the unit.
func (w *QueueUnitWrapper) Obj() *schedulingv1alpha1.QueueUnit { return &w.QueueUnit }

// Quota labels the unit with its ElasticQuota.
func (w *QueueUnitWrapper) Quota(name string) *QueueUnitWrapper {
	return w.Label(elasticquotav1alpha1.LabelQuotaName, name)
}

// Label sets a label.
func (w *QueueUnitWrapper) Label(key, value string) *QueueUnitWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[key] = value
	return w
}

// Priority sets spec.priority.
func (w *QueueUnitWrapper) Priority(p int32) *QueueUnitWrapper {
	w.Spec.Priority = ptr.To(p)
	return w
}

// Request adds a resource to spec.resource and spec.request.
func (w *QueueUnitWrapper) Request(name corev1.ResourceName, quantity string) *QueueUnitWrapper {
	if w.Spec.Resource == nil {
		w.Spec.Resource, w.Spec.Request = corev1.ResourceList{}, corev1.ResourceList{}
	}
	w.Spec.Resource[name] = resource.MustParse(quantity)
	w.Spec.Request[name] = resource.MustParse(quantity)
	return w
}

// PodSet adds a pod set of count pods, each requesting name, quantity pairs.
func (w *QueueUnitWrapper) PodSet(name string, count int32, requests ...string) *QueueUnitWrapper {
	w.Spec.PodSets = append(w.Spec.PodSets, schedulingv1alpha1.PodSet{Name: name, Count: count, Template: PodTemplate(requests...)})
	return w
}

// PodSetAnnotation annotates the template of the last pod set added
// (a topology level it asks for, say).
func (w *QueueUnitWrapper) PodSetAnnotation(key, value string) *QueueUnitWrapper {
	t := &w.Spec.PodSets[len(w.Spec.PodSets)-1].Template
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[key] = value
	return w
}

// MinCount lets the last pod set added start with n of its pods (partial
// admission).
func (w *QueueUnitWrapper) MinCount(n int32) *QueueUnitWrapper {
	w.Spec.PodSets[len(w.Spec.PodSets)-1].MinCount = ptr.To(n)
	return w
}

// Consumer sets spec.consumerRef to a batch Job of the unit's name.
func (w *QueueUnitWrapper) Consumer() *QueueUnitWrapper {
	return w.ConsumerOf("batch/v1", "Job")
}

// ConsumerOf sets spec.consumerRef to a job of that kind and the unit's name.
func (w *QueueUnitWrapper) ConsumerOf(apiVersion, kind string) *QueueUnitWrapper {
	w.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: w.Namespace, Name: w.Name}
	return w
}

// Inactive sets spec.active to false.
func (w *QueueUnitWrapper) Inactive() *QueueUnitWrapper {
	w.Spec.Active = ptr.To(false)
	return w
}

// Phase sets status.phase.
func (w *QueueUnitWrapper) Phase(p schedulingv1alpha1.QueueUnitPhase) *QueueUnitWrapper {
	w.Status.Phase = p
	return w
}

// Admission adds an admission of replicas to a pod set.
func (w *QueueUnitWrapper) Admission(name string, replicas int64) *QueueUnitWrapper {
	w.Status.Admissions = append(w.Status.Admissions, schedulingv1alpha1.Admission{Name: name, Replicas: replicas})
	return w
}

// RunningAdmission adds an admission of replicas to a pod set, running
// of whose pods are scheduled.
func (w *QueueUnitWrapper) RunningAdmission(name string, replicas, running int64) *QueueUnitWrapper {
	w.Status.Admissions = append(w.Status.Admissions, schedulingv1alpha1.Admission{Name: name, Replicas: replicas, Running: running})
	return w
}

// Condition adds a condition.
func (w *QueueUnitWrapper) Condition(typ string, status metav1.ConditionStatus, reason string) *QueueUnitWrapper {
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason})
	return w
}

// PodTemplate is a template of one busybox container, never restarted,
// requesting name, quantity pairs.
func PodTemplate(requests ...string) corev1.PodTemplateSpec {
	c := corev1.Container{Name: "main", Image: "busybox"}
	if len(requests) > 0 {
		c.Resources.Requests = qt.Res(requests...)
	}
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{c},
	}}
}

// ElasticQuotaWrapper builds an ElasticQuota.
type ElasticQuotaWrapper struct {
	elasticquotav1alpha1.ElasticQuota
}

// MakeElasticQuota starts a quota under the root with no min or max.
func MakeElasticQuota(name, namespace string) *ElasticQuotaWrapper {
	return &ElasticQuotaWrapper{elasticquotav1alpha1.ElasticQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{}, Annotations: map[string]string{}},
	}}
}

// Obj returns the quota.
func (w *ElasticQuotaWrapper) Obj() *elasticquotav1alpha1.ElasticQuota { return &w.ElasticQuota }

// Max sets a resource's max.
func (w *ElasticQuotaWrapper) Max(name corev1.ResourceName, quantity string) *ElasticQuotaWrapper {
	if w.Spec.Max == nil {
		w.Spec.Max = corev1.ResourceList{}
	}
	w.Spec.Max[name] = resource.MustParse(quantity)
	return w
}

// Min sets a resource's min.
func (w *ElasticQuotaWrapper) Min(name corev1.ResourceName, quantity string) *ElasticQuotaWrapper {
	if w.Spec.Min == nil {
		w.Spec.Min = corev1.ResourceList{}
	}
	w.Spec.Min[name] = resource.MustParse(quantity)
	return w
}

// Parent sets the parent quota.
func (w *ElasticQuotaWrapper) Parent(name string) *ElasticQuotaWrapper {
	w.Labels[elasticquotav1alpha1.LabelQuotaParent] = name
	return w
}

// IsParent labels the quota is-parent: "true", as Koordinator requires of a
// quota with children.
func (w *ElasticQuotaWrapper) IsParent() *ElasticQuotaWrapper {
	w.Labels[elasticquotav1alpha1.LabelQuotaIsParent] = "true"
	return w
}

// Policy sets the koord-queue/queue-policy label.
func (w *ElasticQuotaWrapper) Policy(p schedulingv1alpha1.QueuePolicy) *ElasticQuotaWrapper {
	w.Labels[schedulingv1alpha1.LabelQueuePolicy] = string(p)
	return w
}

// Label sets a label.
func (w *ElasticQuotaWrapper) Label(key, value string) *ElasticQuotaWrapper {
	w.Labels[key] = value
	return w
}

// Annotation sets an annotation.
func (w *ElasticQuotaWrapper) Annotation(key, value string) *ElasticQuotaWrapper {
	w.Annotations[key] = value
	return w
}

// Topology is a Topology of the node labels levels, broadest first.
func Topology(name string, levels ...string) *schedulingv1alpha1.Topology {
	t := &schedulingv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, l := range levels {
		t.Spec.Levels = append(t.Spec.Levels, schedulingv1alpha1.TopologyLevel{NodeLabel: l})
	}
	return t
}

// Node is a Ready, schedulable node with the given allocatable cpu and memory.
func Node(name, cpu, memory string) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Allocatable: alloc,
			Capacity:    alloc,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// KoordSchedulerPatch is the write koord-scheduler's elasticquota plugin
// makes to a quota whose figures moved, about once a second: one JSON merge
// patch of the object, with its annotations (every one of
// elasticquotav1alpha1.KoordSchedulerFigures, here all cpu) and status.used
// together. Koordinator's ElasticQuota CRD has no status subresource, so
// status.used lands through this patch of the object itself.
func KoordSchedulerPatch(cpu string) client.Patch {
	figure := fmt.Sprintf(`{"cpu":%q}`, cpu)
	figures := map[string]string{}
	for _, key := range elasticquotav1alpha1.KoordSchedulerFigures {
		figures[key] = figure
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": figures},
		"status":   map[string]any{"used": map[string]string{"cpu": cpu}},
	})
	return client.RawPatch(types.MergePatchType, patch)
}

// KoordQueueV18Annotations are what Koord-Queue v1.8 writes on a job it
// queued; a job it released also carries koord-queue/job-dequeue-timestamp.
// Only their presence is meaningful (the values are Go's time.Now().String()).
func KoordQueueV18Annotations(released bool) map[string]string {
	a := map[string]string{
		"koord-queue/job-has-enqueued":      "true",
		"koord-queue/job-enqueue-timestamp": "2026-12-03 10:04:05.000000001 +0000 UTC m=+1.000000001",
	}
	if released {
		a["koord-queue/job-dequeue-timestamp"] = "2026-12-03 10:05:00.000000001 +0000 UTC m=+56.000000001"
	}
	return a
}

// KoordQueueV18Unit is the QueueUnit Koord-Queue v1.8 makes for job, of the
// kind gvk: named unitName (the job's name plus its kind's suffix), in the
// job's namespace, owned by the job without controller: true, with the
// job's labels and annotations and its pod sets under Koord-Queue's names.
// Its status is what v1.8 writes in phase: for Running, status.admissions
// of every pod set, all running. Create the unit, then write its status
// through the status subresource.
func KoordQueueV18Unit(job metav1.Object, gvk metav1.GroupVersionKind, unitName string, sets []schedulingv1alpha1.PodSet, phase schedulingv1alpha1.QueueUnitPhase) *schedulingv1alpha1.QueueUnit {
	request := resources.PodSetsRequests(sets)
	apiVersion := gvk.Group + "/" + gvk.Version
	if gvk.Group == "" {
		apiVersion = gvk.Version
	}
	u := &schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{
			Name: unitName, Namespace: job.GetNamespace(),
			Labels: maps.Clone(job.GetLabels()), Annotations: maps.Clone(job.GetAnnotations()),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: gvk.Kind, Name: job.GetName(), UID: job.GetUID()}},
		},
		Spec: schedulingv1alpha1.QueueUnitSpec{
			ConsumerRef: &corev1.ObjectReference{APIVersion: apiVersion, Kind: gvk.Kind, Name: job.GetName(), Namespace: job.GetNamespace()},
			Resource:    request, Request: request.DeepCopy(), PodSets: sets,
		},
	}
	u.Status.Phase, u.Status.Message = phase, string(phase)
	if phase == schedulingv1alpha1.Running {
		pods := 0
		for _, s := range sets {
			u.Status.Admissions = append(u.Status.Admissions, schedulingv1alpha1.Admission{
				Name: s.Name, Replicas: int64(s.Count), Running: int64(s.Count),
				Resources: resources.PodSetsRequests([]schedulingv1alpha1.PodSet{s}),
			})
			pods += int(s.Count)
		}
		u.Status.PodState = schedulingv1alpha1.PodState{Running: pods}
	}
	return u
}
