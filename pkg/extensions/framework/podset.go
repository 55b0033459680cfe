package framework

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// MadeUpPodSet is a pod set of count pods of one container, named
// container, requesting request: the pod set of a job that keeps no pod
// template the queue could point into (an Argo Workflow, a Spark
// application). Pod set updates aimed at it reach none of the job's pods,
// so they are not applied but reported (missedUpdates).
func MadeUpPodSet(name string, count int32, container string, request corev1.ResourceList) PodSet {
	return PodSet{
		Name:  name,
		Count: count,
		Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      container,
			Resources: corev1.ResourceRequirements{Requests: request},
		}}}},
		MadeUp: true,
	}
}

// missedUpdates are the pod set updates a release could not apply, by the
// pod set they name.
type missedUpdates struct {
	// Unknown pod sets are not the job's at all.
	Unknown []string
	// MadeUp pod sets have no template in the job (MadeUpPodSet).
	MadeUp []string
	// Pool pod sets have no template in the job to take the node affinity
	// of the node pool named PoolProfile.
	Pool        []string
	PoolProfile string
}

func (m missedUpdates) empty() bool {
	return len(m.Unknown) == 0 && len(m.MadeUp) == 0 && len(m.Pool) == 0
}

// String says what was missed, for an event and the unit's condition.
func (m missedUpdates) String() string {
	var parts []string
	if len(m.Unknown) > 0 {
		parts = append(parts, "the job has no pod set "+strings.Join(m.Unknown, ", "))
	}
	if len(m.MadeUp) > 0 {
		parts = append(parts, "the pods of "+strings.Join(m.MadeUp, ", ")+" are made by the framework from templates the job does not hold")
	}
	var out []string
	if len(parts) > 0 {
		out = append(out, "Admission checks' pod set updates were not applied: "+strings.Join(parts, "; "))
	}
	if len(m.Pool) > 0 {
		out = append(out, "The required node affinity of node pool "+m.PoolProfile+" was not put on pod sets "+strings.Join(m.Pool, ", ")+
			": their pods are made by the framework from templates the job does not hold")
	}
	return strings.Join(out, ". ")
}

// applyPodSetUpdates merges the pod set updates of a unit's admission checks
// into the job's templates, as Kueue does with its mutable scheduling
// directives: labels, annotations and node selectors are merged, an update's
// value winning over the template's; tolerations are added unless present.
// It returns the updates it could not apply: those naming pod sets the job
// lacks, or whose template is made up. A unit of a node pool's quota tree
// (pool not nil) has the pool's node selector required by every template
// (requirePool); made-up ones are reported.
func applyPodSetUpdates(sets []PodSet, checks []schedulingv1alpha1.AdmissionCheckState, pool *nodePool) (missed missedUpdates) {
	byName := map[string]PodSet{}
	for _, s := range sets {
		if s.Template != nil {
			byName[s.Name] = s
		}
	}
	for _, check := range checks {
		for _, u := range check.PodSetUpdates {
			s, ok := byName[u.Name]
			if !ok || s.MadeUp {
				into := &missed.Unknown
				if ok {
					into = &missed.MadeUp
				}
				if !slices.Contains(*into, u.Name) {
					*into = append(*into, u.Name)
				}
				continue
			}
			t := s.Template
			t.Labels = mergeInto(t.Labels, u.Labels)
			t.Annotations = mergeInto(t.Annotations, u.Annotations)
			t.Spec.NodeSelector = mergeInto(t.Spec.NodeSelector, u.NodeSelector)
			for _, tol := range u.Tolerations {
				if !slices.ContainsFunc(t.Spec.Tolerations, func(have corev1.Toleration) bool { return have.MatchToleration(&tol) }) {
					t.Spec.Tolerations = append(t.Spec.Tolerations, tol)
				}
			}
		}
	}
	if pool != nil {
		for _, s := range sets {
			if s.Template == nil || s.MadeUp {
				missed.Pool, missed.PoolProfile = append(missed.Pool, s.Name), pool.Profile
				continue
			}
			requirePool(&s.Template.Spec, pool.Requirements)
		}
	}
	return missed
}

// directives are the parts of a pod template pod set updates change.
type directives struct {
	Labels       map[string]string   `json:"labels,omitempty"`
	Annotations  map[string]string   `json:"annotations,omitempty"`
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
	// NodeAffinity is nil in originals recorded before node pools, whose
	// templates' affinity was never changed.
	NodeAffinity *requiredNodeAffinity `json:"nodeAffinity,omitempty"`
}

// podSetOriginals are the directives of each pod set before updates.
type podSetOriginals map[string]directives

// recordOriginals is the directives of each pod set's template as it is.
func recordOriginals(sets []PodSet) podSetOriginals {
	out := podSetOriginals{}
	for _, s := range sets {
		if s.Template == nil {
			continue
		}
		t := s.Template
		out[s.Name] = directives{
			Labels:       maps.Clone(t.Labels),
			Annotations:  maps.Clone(t.Annotations),
			NodeSelector: maps.Clone(t.Spec.NodeSelector),
			Tolerations:  slices.Clone(t.Spec.Tolerations),
			NodeAffinity: &requiredNodeAffinity{Required: requiredOf(&t.Spec)},
		}
	}
	return out
}

// originalsOf reads the originals kept on u; nil when it keeps none.
func originalsOf(u *schedulingv1alpha1.QueueUnit) (podSetOriginals, error) {
	raw, ok := u.Annotations[schedulingv1alpha1.AnnotationPodSetOriginals]
	if !ok {
		return nil, nil
	}
	var out podSetOriginals
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("annotation %s of QueueUnit %s: %w", schedulingv1alpha1.AnnotationPodSetOriginals, u.Name, err)
	}
	return out, nil
}

// keepOriginals records o on u; nil o removes the record. It reports
// whether u changed.
func keepOriginals(u *schedulingv1alpha1.QueueUnit, o podSetOriginals) bool {
	if o == nil {
		if _, ok := u.Annotations[schedulingv1alpha1.AnnotationPodSetOriginals]; !ok {
			return false
		}
		delete(u.Annotations, schedulingv1alpha1.AnnotationPodSetOriginals)
		return true
	}
	data, _ := json.Marshal(o) // a map of plain values always marshals
	if u.Annotations[schedulingv1alpha1.AnnotationPodSetOriginals] == string(data) {
		return false
	}
	if u.Annotations == nil {
		u.Annotations = map[string]string{}
	}
	u.Annotations[schedulingv1alpha1.AnnotationPodSetOriginals] = string(data)
	return true
}

// hasPodSetUpdates reports whether any admission check sends updates.
func hasPodSetUpdates(checks []schedulingv1alpha1.AdmissionCheckState) bool {
	return slices.ContainsFunc(checks, func(c schedulingv1alpha1.AdmissionCheckState) bool { return len(c.PodSetUpdates) > 0 })
}

// restorePodSets puts each template's labels, annotations, node selector,
// tolerations and required node affinity back to the originals, undoing applyPodSetUpdates. It
// reports whether anything changed.
func restorePodSets(sets []PodSet, originals podSetOriginals) bool {
	changed := false
	for _, s := range sets {
		want, ok := originals[s.Name]
		if !ok || s.Template == nil {
			continue
		}
		t := s.Template
		if !equality.Semantic.DeepEqual(t.Labels, want.Labels) {
			t.Labels, changed = maps.Clone(want.Labels), true
		}
		if annotations := keepUnitNames(t.Annotations, want.Annotations); !equality.Semantic.DeepEqual(t.Annotations, annotations) {
			t.Annotations, changed = annotations, true
		}
		if !equality.Semantic.DeepEqual(t.Spec.NodeSelector, want.NodeSelector) {
			t.Spec.NodeSelector, changed = maps.Clone(want.NodeSelector), true
		}
		if !equality.Semantic.DeepEqual(t.Spec.Tolerations, want.Tolerations) {
			t.Spec.Tolerations, changed = slices.Clone(want.Tolerations), true
		}
		if want.NodeAffinity != nil && restoreRequired(&t.Spec, want.NodeAffinity.Required) {
			changed = true
		}
	}
	return changed
}

// The release names each pod set's template for the unit
// (schedulingv1alpha1.AnnotationRelatedQueueUnit, as Koord-Queue v1.8
// does), so that every pod made from it is charged to the unit's quota
// whatever owns it, an orphan included (koord-queue's pod ledger). The
// names stay on the template when it is restored: the same unit releases
// it again, and a Job that ran keeps its templates locked.

// namedForUnit reports whether every template of sets names unit.
func namedForUnit(sets []PodSet, unit *schedulingv1alpha1.QueueUnit) bool {
	for _, s := range sets {
		if s.Template == nil || s.MadeUp {
			continue
		}
		a := s.Template.Annotations
		if a[schedulingv1alpha1.AnnotationRelatedQueueUnit] != unitRef(unit) || a[schedulingv1alpha1.AnnotationRelatedPodSet] != s.Name {
			return false
		}
	}
	return true
}

// nameForUnit names every template of sets for unit.
func nameForUnit(sets []PodSet, unit *schedulingv1alpha1.QueueUnit) {
	for _, s := range sets {
		if s.Template == nil || s.MadeUp {
			continue
		}
		s.Template.Annotations = mergeInto(s.Template.Annotations, map[string]string{
			schedulingv1alpha1.AnnotationRelatedQueueUnit: unitRef(unit),
			schedulingv1alpha1.AnnotationRelatedPodSet:    s.Name,
		})
	}
}

// unitRef is how a template names its unit: "<namespace>/<name>".
func unitRef(unit *schedulingv1alpha1.QueueUnit) string { return unit.Namespace + "/" + unit.Name }

// keepUnitNames is want with the unit names have carries.
func keepUnitNames(have, want map[string]string) map[string]string {
	out := maps.Clone(want)
	for _, k := range []string{schedulingv1alpha1.AnnotationRelatedQueueUnit, schedulingv1alpha1.AnnotationRelatedPodSet} {
		if v, ok := have[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

func mergeInto(into, from map[string]string) map[string]string {
	if len(from) == 0 {
		return into
	}
	if into == nil {
		into = make(map[string]string, len(from))
	}
	maps.Copy(into, from)
	return into
}
