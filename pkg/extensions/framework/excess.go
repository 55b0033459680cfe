package framework

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// What a job runs must fit what its unit was admitted with, per pod set: no
// more pods than admitted (its admissions' replicas, so a partial admission
// counts), and no pod asking for more than a pod of the unit's pod set of
// that name (its per-pod request as resources.PodRequests computes it, the
// containers the framework's operator adds included: unitPodSets). A job's
// spec may change after its admission: a custom resource's templates are
// mutable while it runs (a PyTorchJob's Worker template patched from 1 to 7
// CPU, whose new pods the training-operator makes at 7), replicas of most
// kinds too, and a batch Job's template while it is suspended. A job that
// exceeds its admission is suspended and queued again at its new size
// (release), as Kueue does with a job whose pod sets no longer match its
// workload; one that shrank runs on.

// excess says how sets, a job's pod sets as its unit would ask for them,
// exceed what unit was admitted with: one phrase per pod set that does
// ("pod set worker: cpu per pod 1 -> 7"), none when they fit. partial are
// the counts of a partial admission (the job runs no more pods of a pod
// set it names). A pod set's count is held to its admission's replicas and
// to the unit's spec (the unit may have been resized since its admission;
// its admissions have not); a unit without admissions (admitted before they
// were written) is judged by its spec. A unit adopted from Koord-Queue
// (adoptedPodRequests) admits per pod what the job asked when it was taken
// over.
func excess(unit *schedulingv1alpha1.QueueUnit, sets []schedulingv1alpha1.PodSet, partial map[string]int32) []string {
	admitted := map[string]int32{}
	for _, s := range unit.Spec.PodSets {
		admitted[s.Name] = s.Count
	}
	if len(unit.Status.Admissions) > 0 {
		byAdmission := map[string]int32{}
		for _, a := range unit.Status.Admissions {
			if n, ok := admitted[a.Name]; ok {
				byAdmission[a.Name] = min(n, int32(min(max(a.Replicas, 0), math.MaxInt32)))
			}
		}
		admitted = byAdmission
	}
	adopted := adoptedPodRequests(unit)
	var out []string
	for _, s := range sets {
		spec := unitPodSet(unit, s.Name)
		n, ok := admitted[s.Name]
		if spec == nil || !ok {
			out = append(out, fmt.Sprintf("pod set %s: not admitted", s.Name))
			continue
		}
		var parts []string
		run := s.Count
		if p, ok := partial[s.Name]; ok && p < run {
			run = p
		}
		switch {
		case s.Count > spec.Count:
			parts = append(parts, fmt.Sprintf("%d pods, admitted %d", s.Count, n))
		case run > n:
			parts = append(parts, fmt.Sprintf("%d pods, admitted %d", run, n))
		}
		allowed := resources.PodRequests(&spec.Template.Spec)
		if a, ok := adopted[s.Name]; ok {
			allowed = resources.Max(allowed, a)
		}
		parts = append(parts, grownPerPod(resources.PodRequests(&s.Template.Spec), allowed)...)
		if len(parts) > 0 {
			out = append(out, fmt.Sprintf("pod set %s: %s", s.Name, strings.Join(parts, ", ")))
		}
	}
	return out
}

// grownPerPod says which resources a pod asking perPod asks more of than
// allowed, by name: "cpu per pod 1 -> 7".
func grownPerPod(perPod, allowed corev1.ResourceList) []string {
	var out []string
	for name, q := range perPod {
		if have := allowed[name]; q.Cmp(have) > 0 {
			out = append(out, fmt.Sprintf("%s per pod %s -> %s", name, have.String(), q.String()))
		}
	}
	slices.Sort(out)
	return out
}

// unitPodSet is u's pod set called name, nil if none.
func unitPodSet(u *schedulingv1alpha1.QueueUnit, name string) *schedulingv1alpha1.PodSet {
	for i := range u.Spec.PodSets {
		if u.Spec.PodSets[i].Name == name {
			return &u.Spec.PodSets[i]
		}
	}
	return nil
}

// annotationAdoptedPodRequests, on a unit adopted from Koord-Queue while it
// held quota, records the per-pod request of each of its job's pod sets
// when it was taken over (JSON, pod set name to ResourceList). Koord-Queue
// wrote the unit's templates by its own rules (without the containers
// KubeRay adds, say), so a running job may ask a little more per pod than
// its adopted unit's templates without having grown: it is measured against
// this record, and against its templates, until it is queued again
// (resizeUnit drops the record).
const annotationAdoptedPodRequests = "koord-queue/adopted-pod-requests"

// annotationOutgrown marks the unit of a job found to exceed its admission
// with what grew, before the job is suspended: the decision outlives the
// excess (a RayJob's scaled RayCluster is deleted as the RayJob is
// suspended, and then counts nothing), so the job is queued again, never
// released again under that admission while the pods it grew may still hold
// their nodes. The unit is deleted with it.
const annotationOutgrown = "koord-queue/outgrown"

// maxOutgrownBytes bounds the mark and the Warnings that quote it: what grew
// names the jobs a tenant made under its job, as many as it likes, and a
// unit's annotations may not pass 256 KiB in all (a refused write would
// leave the job running past its admission).
const maxOutgrownBytes = 1024

// outgrownMark joins what grew into the mark, cut to maxOutgrownBytes on a
// character boundary.
func outgrownMark(grown []string) string {
	mark := strings.Join(grown, "; ")
	if len(mark) <= maxOutgrownBytes {
		return mark
	}
	const more = " …"
	cut := maxOutgrownBytes - len(more)
	for cut > 0 && !utf8.RuneStart(mark[cut]) {
		cut--
	}
	return mark[:cut] + more
}

// adoptedPodRequests reads annotationAdoptedPodRequests; nil when u has
// none, or one the extensions did not write.
func adoptedPodRequests(u *schedulingv1alpha1.QueueUnit) map[string]corev1.ResourceList {
	raw, ok := u.Annotations[annotationAdoptedPodRequests]
	if !ok {
		return nil
	}
	var out map[string]corev1.ResourceList
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil
	}
	return out
}

// recordAdoptedPodRequests records on u the per-pod request of each of
// sets (annotationAdoptedPodRequests).
func recordAdoptedPodRequests(u *schedulingv1alpha1.QueueUnit, sets []schedulingv1alpha1.PodSet) {
	record := make(map[string]corev1.ResourceList, len(sets))
	for i := range sets {
		record[sets[i].Name] = resources.PodRequests(&sets[i].Template.Spec)
	}
	data, _ := json.Marshal(record) // a map of quantities always marshals
	if u.Annotations == nil {
		u.Annotations = map[string]string{}
	}
	u.Annotations[annotationAdoptedPodRequests] = string(data)
}
