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
// pod set they name, and where its placement may not hold.
type missedUpdates struct {
	// Unknown pod sets are not the job's at all.
	Unknown []string
	// MadeUp pod sets have no template in the job (MadeUpPodSet).
	MadeUp []string
	// Unplaced pod sets have no template in the job, nor fields it lets
	// the reconciler change (JobWithMadeUpAffinity), to take Placement.
	Unplaced []string
	// Overridden are the fields of the job that can still give pods
	// another affinity than Placement (JobWithMadeUpAffinity).
	Overridden []string
	// Placement says what the release puts on the pods (placement.String).
	Placement string
}

func (m missedUpdates) empty() bool {
	return len(m.Unknown) == 0 && len(m.MadeUp) == 0 && len(m.Unplaced) == 0 && len(m.Overridden) == 0
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
	if len(m.Unplaced) > 0 {
		out = append(out, capitalized(m.Placement)+" was not put on pod sets "+strings.Join(m.Unplaced, ", ")+
			": their pods are made by the framework from templates the job does not hold")
	}
	if len(m.Overridden) > 0 {
		out = append(out, capitalized(m.Placement)+" was put on the job, but its pods may take another from "+strings.Join(m.Overridden, ", "))
	}
	return strings.Join(out, ". ")
}

func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// applyPodSetUpdates merges the pod set updates of a unit's admission checks
// into the job's templates, as Kueue does with its mutable scheduling
// directives: labels, annotations and node selectors are merged, an update's
// value winning over the template's; tolerations are added unless present.
// It returns the updates it could not apply: those naming pod sets the job
// lacks, or whose template is made up. A unit whose pods must keep to (or
// off) node pools (place not nil, checked by placementFits) has every
// template's required node affinity placed (placedAffinity), and the
// fields a made-up pod set's pods take theirs from, where job lets them be
// changed (JobWithMadeUpAffinity); the other made-up ones are reported,
// and so is what can still override the fields.
func applyPodSetUpdates(sets []PodSet, checks []schedulingv1alpha1.AdmissionCheckState, place *placement, job GenericJob) (missed missedUpdates) {
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
	if place == nil {
		return missed
	}
	missed.Placement = place.String()
	placedFor := func(podSet string) func(string, *corev1.Affinity) *corev1.Affinity {
		return func(_ string, a *corev1.Affinity) *corev1.Affinity {
			if out, err := placedAffinity(a, place, podSet); err == nil {
				return out
			}
			return a // placementFits said it fits
		}
	}
	madeUp, edits := job.(JobWithMadeUpAffinity)
	for _, s := range sets {
		switch {
		case s.Template == nil:
			missed.Unplaced = append(missed.Unplaced, s.Name)
		case !s.MadeUp:
			s.Template.Spec.Affinity = placedFor(s.Name)("", s.Template.Spec.Affinity)
		case edits:
			for _, o := range madeUp.EditAffinities(s.Name, placedFor(s.Name)) {
				if !slices.Contains(missed.Overridden, o) {
					missed.Overridden = append(missed.Overridden, o)
				}
			}
		default:
			missed.Unplaced = append(missed.Unplaced, s.Name)
		}
	}
	return missed
}

// placementFits reports, as an error to show the user, why the job's pods
// cannot take place: more required node affinity terms than
// maxPlacementTerms, in a template or a field of a made-up pod set's
// (JobWithMadeUpAffinity). It changes nothing.
func placementFits(sets []PodSet, place *placement, job GenericJob) error {
	var err error
	checkFor := func(podSet string) func(string, *corev1.Affinity) *corev1.Affinity {
		return func(_ string, a *corev1.Affinity) *corev1.Affinity {
			if _, e := placedAffinity(a, place, podSet); e != nil && err == nil {
				err = e
			}
			return a
		}
	}
	madeUp, edits := job.(JobWithMadeUpAffinity)
	for _, s := range sets {
		switch {
		case s.Template == nil:
		case !s.MadeUp:
			checkFor(s.Name)("", s.Template.Spec.Affinity)
		case edits:
			madeUp.EditAffinities(s.Name, checkFor(s.Name))
		}
	}
	return err
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
	// MadeUpAffinity is, for a made-up pod set of a JobWithMadeUpAffinity,
	// the required node affinity of each field its pods take theirs from;
	// nil in originals recorded before those fields were placed.
	MadeUpAffinity *madeUpAffinity `json:"madeUpAffinity,omitempty"`
}

// madeUpAffinity is the required node affinity of each field of a job the
// pods of a made-up pod set take their affinity from, by the field's path
// (JobWithMadeUpAffinity): nil for a field that had none.
type madeUpAffinity struct {
	Fields map[string]*corev1.NodeSelector `json:"fields"`
}

// recordMadeUp is the required node affinity of each field of job the pods
// of made-up pod set name take theirs from; nil when job has none to give.
func recordMadeUp(job GenericJob, name string) *madeUpAffinity {
	m, ok := job.(JobWithMadeUpAffinity)
	if !ok {
		return nil
	}
	rec := &madeUpAffinity{Fields: map[string]*corev1.NodeSelector{}}
	m.EditAffinities(name, func(path string, a *corev1.Affinity) *corev1.Affinity {
		rec.Fields[path] = requiredOfAffinity(a)
		return a
	})
	return rec
}

// podSetOriginals are the directives of each pod set before updates.
type podSetOriginals map[string]directives

// recordOriginals is the directives of each pod set's template as it is,
// and of the fields of job a made-up pod set's pods take their affinity
// from (recordMadeUp).
func recordOriginals(sets []PodSet, job GenericJob) podSetOriginals {
	out := podSetOriginals{}
	for _, s := range sets {
		if s.Template == nil {
			continue
		}
		t := s.Template
		d := directives{
			Labels:       maps.Clone(t.Labels),
			Annotations:  maps.Clone(t.Annotations),
			NodeSelector: maps.Clone(t.Spec.NodeSelector),
			Tolerations:  slices.Clone(t.Spec.Tolerations),
			NodeAffinity: &requiredNodeAffinity{Required: requiredOf(&t.Spec)},
		}
		if s.MadeUp {
			d.MadeUpAffinity = recordMadeUp(job, s.Name)
		}
		out[s.Name] = d
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
// tolerations and required node affinity back to the originals, and the
// required node affinity of the fields of job a made-up pod set's pods take
// theirs from, undoing applyPodSetUpdates. It reports whether anything
// changed.
func restorePodSets(sets []PodSet, originals podSetOriginals, job GenericJob) bool {
	changed := false
	for _, s := range sets {
		want, ok := originals[s.Name]
		if !ok || s.Template == nil {
			continue
		}
		if m, edits := job.(JobWithMadeUpAffinity); s.MadeUp && edits && want.MadeUpAffinity != nil {
			m.EditAffinities(s.Name, func(path string, a *corev1.Affinity) *corev1.Affinity {
				required, ok := want.MadeUpAffinity.Fields[path]
				if !ok {
					return a
				}
				out, c := withRequired(a, required)
				changed = changed || c
				return out
			})
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
