package framework

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// lastAppliedAnnotation is kubectl's copy of the whole object; units do not
// need it.
const lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation

// unitPodSets turns a job's pod sets into a unit's, checking what the
// QueueUnit API requires: one to MaxPodSets sets with distinct DNS-label
// names, asking for at most MaxResourceNames kinds of resources in all.
// Each template of the unit is the pod as it will be made: with the
// containers the framework's operator adds, and with what its creation
// gives it (made: the defaults the namespace's LimitRanges give its
// containers, its RuntimeClass's overhead), so that the unit asks for what
// its pods will hold.
func unitPodSets(sets []PodSet, made podCreation) ([]schedulingv1alpha1.PodSet, error) {
	switch {
	case len(sets) == 0:
		return nil, fmt.Errorf("the job has no pods")
	case len(sets) > schedulingv1alpha1.MaxPodSets:
		return nil, fmt.Errorf("the job has %d groups of pods; a queue unit holds at most %d", len(sets), schedulingv1alpha1.MaxPodSets)
	}
	out := make([]schedulingv1alpha1.PodSet, 0, len(sets))
	seen := map[string]bool{}
	for _, s := range sets {
		if errs := validation.IsDNS1123Label(s.Name); len(errs) > 0 {
			return nil, fmt.Errorf("pod set name %q: %s", s.Name, strings.Join(errs, "; "))
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("two pod sets are named %q", s.Name)
		}
		seen[s.Name] = true
		if s.Count < 0 {
			return nil, fmt.Errorf("pod set %q has a negative count %d", s.Name, s.Count)
		}
		if s.MinCount != nil && (*s.MinCount < 1 || *s.MinCount > s.Count) {
			return nil, fmt.Errorf("pod set %q can start with at least %d of its %d pods: that must be from 1 to %d", s.Name, *s.MinCount, s.Count, s.Count)
		}
		ps := schedulingv1alpha1.PodSet{Name: s.Name, Count: s.Count, MinCount: s.MinCount}
		if s.Template != nil {
			ps.Template = *s.Template.DeepCopy()
			ps.Template.Spec.Containers = append(ps.Template.Spec.Containers, s.Added.Containers...)
			ps.Template.Spec.InitContainers = append(ps.Template.Spec.InitContainers, s.Added.InitContainers...)
			made.apply(&ps.Template.Spec)
		}
		if err := checkAmounts(s, &ps.Template.Spec); err != nil {
			return nil, err
		}
		out = append(out, ps)
	}
	if n := len(resources.PodSetsRequests(out)); n > schedulingv1alpha1.MaxResourceNames {
		return nil, fmt.Errorf("the job asks for %d kinds of resources; a queue unit holds at most %d", n, schedulingv1alpha1.MaxResourceNames)
	}
	return out, nil
}

// checkAmounts refuses a pod set asking for a negative amount anywhere in
// its template (resources.CheckPodSpec), naming the field; the amounts of a
// made-up template are the job's request as the framework reads it.
func checkAmounts(s PodSet, spec *corev1.PodSpec) error {
	err := resources.CheckPodSpec(spec)
	if s.MadeUp && len(spec.Containers) > 0 {
		if e := resources.CheckList("request", spec.Containers[0].Resources.Requests); e != nil {
			err = e
		}
	}
	if err != nil {
		return fmt.Errorf("pod set %q: %w", s.Name, err)
	}
	return nil
}

// placeholderPodSets stand in for the pod sets of a job that cannot be
// queued: the API requires at least one, with a container. It asks for
// nothing.
func placeholderPodSets() []schedulingv1alpha1.PodSet {
	return []schedulingv1alpha1.PodSet{{
		Name:     schedulingv1alpha1.DefaultPodSetName,
		Count:    0,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "placeholder"}}}},
	}}
}

// unitMeta is what a unit copies from its job: labels, and annotations but
// kubectl's last-applied copy.
func unitMeta(obj client.Object) (labels, annotations map[string]string) {
	labels = maps.Clone(obj.GetLabels())
	annotations = maps.Clone(obj.GetAnnotations())
	delete(annotations, lastAppliedAnnotation)
	return labels, annotations
}

// What the extensions read of a QueueUnit's labels and annotations, and so
// all that their cache keeps of them (StripUnit): the quota its labels
// name (where its pods must run: placementOf), its copy of the runtime its
// job declares (declareRuntime), the hold of an invalid job (holdInvalid)
// and its pod templates as they were before admission checks changed them
// (keepOriginals). A unit copies its job's labels and annotations, which a
// tenant writes: kept whole, every unit would cost its job's metadata a
// second time.
var (
	unitLabelsRead = append([]string{elasticquotav1alpha1.LabelQuotaName, elasticquotav1alpha1.LabelQuotaNameAlibabaCloud},
		maxExecTimeLabels...)
	unitAnnotationsRead = []string{schedulingv1alpha1.AnnotationInvalidJob, schedulingv1alpha1.AnnotationPodSetOriginals, annotationAdoptedPodRequests, annotationOutgrown}
)

// StripUnit is the cache's transform of a QueueUnit: it keeps of the
// unit's labels and annotations those the extensions read (above), of each
// pod set's template what its per-pod request is made of (samePodSets and
// excess read no more: the job's own templates are what a unit is made
// from), and drops its managed fields, as the cache's default transform
// would. A unit holds a copy of its job's pod templates; kept whole, every
// unit would cost its job's templates a second time.
//
// The extensions write a unit by a patch of what their change made
// different (patch.Patch), so what is dropped stays on the unit; a change
// that writes pod sets it did not make from the job reads the unit whole
// first (adopt). It writes into no map it was given (a streamed list
// transforms each object twice): a map that needs no cut is kept, another
// replaced. Anything but a QueueUnit passes unchanged.
func StripUnit(obj any) (any, error) {
	u, ok := obj.(*schedulingv1alpha1.QueueUnit)
	if !ok {
		return obj, nil
	}
	u.ManagedFields = nil
	u.Labels = onlyKeys(u.Labels, unitLabelsRead)
	u.Annotations = onlyKeys(u.Annotations, unitAnnotationsRead)
	if len(u.Spec.PodSets) > 0 {
		sets := make([]schedulingv1alpha1.PodSet, len(u.Spec.PodSets))
		for i, s := range u.Spec.PodSets {
			s.Template = corev1.PodTemplateSpec{Spec: requestsSpec(&s.Template.Spec)}
			sets[i] = s
		}
		u.Spec.PodSets = sets
	}
	return u, nil
}

// onlyKeys is m with only the keys listed: m itself when it has no other.
func onlyKeys(m map[string]string, keys []string) map[string]string {
	if len(m) == 0 {
		return m
	}
	n := 0
	for _, key := range keys {
		if _, ok := m[key]; ok {
			n++
		}
	}
	if n == len(m) {
		return m
	}
	if n == 0 {
		return nil
	}
	out := make(map[string]string, n)
	for _, key := range keys {
		if v, ok := m[key]; ok {
			out[key] = v
		}
	}
	return out
}

// newQueueUnit is the unit a job gets when it is first queued. quota, when
// not empty, is a quota found for the job's namespace rather than on its
// labels; the unit carries it as its quota label. spec.queue names the same
// quota from the start: Koord-Queue writes it at dequeue, and a unit
// created with it needs no second write of its main resource at admission.
func newQueueUnit(integ Integration, obj client.Object, sets []schedulingv1alpha1.PodSet, className string, priority *int32, quota string, rule queueunit.QuotaRule) *schedulingv1alpha1.QueueUnit {
	labels, annotations := unitMeta(obj)
	if quota != "" {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[elasticquotav1alpha1.LabelQuotaName] = quota
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[schedulingv1alpha1.AnnotationQuotaRule] = string(rule)
	}
	request := resources.PodSetsRequests(sets)
	return &schedulingv1alpha1.QueueUnit{
		ObjectMeta: metav1.ObjectMeta{
			Name:            integ.UnitName(obj.GetName()),
			Namespace:       obj.GetNamespace(),
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(obj, integ.GVK)},
		},
		Spec: schedulingv1alpha1.QueueUnitSpec{
			ConsumerRef: &corev1.ObjectReference{
				APIVersion: integ.GVK.GroupVersion().String(),
				Kind:       integ.GVK.Kind,
				Namespace:  obj.GetNamespace(),
				Name:       obj.GetName(),
				UID:        obj.GetUID(),
			},
			Queue:             elasticquotav1alpha1.QuotaNameFromLabels(labels),
			Priority:          priority,
			PriorityClassName: className,
			PodSets:           sets,
			Resource:          request,
			Request:           request.DeepCopy(),
		},
	}
}

// holdInvalid makes u the unit of a job that cannot be queued: inactive,
// with placeholder pod sets when it has none, and the reason recorded.
func holdInvalid(u *schedulingv1alpha1.QueueUnit, reason string) {
	if u.Annotations == nil {
		u.Annotations = map[string]string{}
	}
	u.Annotations[schedulingv1alpha1.AnnotationInvalidJob] = reason
	u.Spec.Active = new(bool)
	if len(u.Spec.PodSets) == 0 {
		u.Spec.PodSets = placeholderPodSets()
	}
}

// invalidCondition sets u's InvalidJob condition to say message; it reports
// whether that changed u.
func invalidCondition(u *schedulingv1alpha1.QueueUnit, message string, now metav1.Time) bool {
	return apimeta.SetStatusCondition(&u.Status.Conditions, metav1.Condition{
		Type:               schedulingv1alpha1.QueueUnitInvalidJob,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonInvalidJob,
		Message:            message,
		ObservedGeneration: u.Generation,
		LastTransitionTime: now,
	})
}

// isHeldInvalid reports whether the extension holds u for an invalid job.
func isHeldInvalid(u *schedulingv1alpha1.QueueUnit) bool {
	_, ok := u.Annotations[schedulingv1alpha1.AnnotationInvalidJob]
	return ok
}

// resizeUnit sets u's pod sets and request to those of its job and lifts a
// hold for an invalid job. It reports whether anything changed. A unit
// adopted from Koord-Queue, resized, admits its own templates per pod from
// then on (annotationAdoptedPodRequests).
func resizeUnit(u *schedulingv1alpha1.QueueUnit, sets []schedulingv1alpha1.PodSet) bool {
	if !isHeldInvalid(u) && samePodSets(u.Spec.PodSets, sets) {
		return false
	}
	if isHeldInvalid(u) {
		delete(u.Annotations, schedulingv1alpha1.AnnotationInvalidJob)
		u.Spec.Active = nil
	}
	delete(u.Annotations, annotationAdoptedPodRequests)
	request := resources.PodSetsRequests(sets)
	u.Spec.PodSets = sets
	u.Spec.Resource = request
	u.Spec.Request = request.DeepCopy()
	return true
}

// samePodSets reports whether two lists of pod sets ask the queue for the
// same thing: the same names, counts, minimum counts and per-pod requests.
// Templates are not compared whole: the API server defaults a unit's copy
// differently from the job's.
func samePodSets(a, b []schedulingv1alpha1.PodSet) bool {
	return slices.EqualFunc(a, b, func(x, y schedulingv1alpha1.PodSet) bool {
		return x.Name == y.Name && x.Count == y.Count && ptr.Equal(x.MinCount, y.MinCount) &&
			equality.Semantic.DeepEqual(resources.PodRequests(&x.Template.Spec), resources.PodRequests(&y.Template.Spec))
	})
}

// grew reports whether a job asks for more than its unit holds: a pod set the
// unit does not have, or one with more pods.
func grew(unit, job []schedulingv1alpha1.PodSet) bool {
	held := map[string]int32{}
	for _, s := range unit {
		held[s.Name] = s.Count
	}
	for _, s := range job {
		if n, ok := held[s.Name]; !ok || s.Count > n {
			return true
		}
	}
	return false
}
