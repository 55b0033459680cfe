package queueunit

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// Partial admission, as in Kueue: a pod set with a minCount may be admitted
// with fewer pods than its count, down to minCount, when the whole unit does
// not fit. status.admissions[].replicas records what each pod set was
// admitted with; it is the one record of a partial admission, so that a
// restart charges the unit what it was charged when admitted.

// MayAdmitPartially reports whether u may be admitted with fewer pods than
// it asks for: a pod set has a minCount below its count, and its pod sets
// ask for its whole request (Request). A unit whose spec.resource says
// otherwise is admitted whole: what fewer of its pods ask for is not known.
func MayAdmitPartially(u *schedulingv1alpha1.QueueUnit) bool {
	shrinks := false
	for _, ps := range u.Spec.PodSets {
		if ps.MinCount != nil && *ps.MinCount < ps.Count {
			shrinks = true
			break
		}
	}
	return shrinks && podSetsAskRequest(u)
}

// podSetsAskRequest reports whether u's pod sets add up to its request, as
// every extension's unit does.
func podSetsAskRequest(u *schedulingv1alpha1.QueueUnit) bool {
	return resources.Equal(Request(u), resources.PodSetsRequests(u.Spec.PodSets))
}

// PartialCounts is, for a unit admitted partially, the pods each pod set
// that holds fewer than its count was admitted with, by name, as its
// admissions say; nil when the unit holds all its pods or no quota. Only
// pod sets with a minCount count: a unit without one that was resized while
// admitted holds its new request, as it always did.
func PartialCounts(u *schedulingv1alpha1.QueueUnit) map[string]int32 {
	if len(u.Status.Admissions) == 0 {
		return nil
	}
	var out map[string]int32
	for _, ps := range u.Spec.PodSets {
		if ps.MinCount == nil {
			continue
		}
		for _, a := range u.Status.Admissions {
			if a.Name == ps.Name && a.Replicas < int64(ps.Count) {
				if out == nil {
					out = map[string]int32{}
				}
				out[ps.Name] = int32(max(a.Replicas, 0))
			}
		}
	}
	if out != nil && !podSetsAskRequest(u) {
		return nil // edited since: it holds what it reads
	}
	return out
}

// allows reports whether u's pod sets allow the counts of a partial
// admission: each names a pod set with a minCount, below its count, and the
// pod sets ask for u's request, as PartialCounts reads them back.
func allows(u *schedulingv1alpha1.QueueUnit, partial map[string]int32) bool {
	if len(partial) == 0 {
		return true
	}
	for name, n := range partial {
		i := slices.IndexFunc(u.Spec.PodSets, func(ps schedulingv1alpha1.PodSet) bool { return ps.Name == name })
		if i < 0 || u.Spec.PodSets[i].MinCount == nil || n < 0 || n >= u.Spec.PodSets[i].Count {
			return false
		}
	}
	return podSetsAskRequest(u)
}

// Held is what a unit holding quota is charged: its Request, or, admitted
// partially, what the pods it was admitted with ask for.
func Held(u *schedulingv1alpha1.QueueUnit) corev1.ResourceList {
	return HeldWith(u, PartialCounts(u))
}

// HeldWith is what u holds when admitted with counts: the pods of each pod
// set counts names (fewer than its count), all pods of the others. Empty
// counts: its whole Request.
func HeldWith(u *schedulingv1alpha1.QueueUnit, counts map[string]int32) corev1.ResourceList {
	if len(counts) == 0 {
		return Request(u)
	}
	podRequests := make([]corev1.ResourceList, len(u.Spec.PodSets))
	pods := make([]int32, len(u.Spec.PodSets))
	for i := range u.Spec.PodSets {
		ps := &u.Spec.PodSets[i]
		podRequests[i], pods[i] = resources.PodRequests(&ps.Template.Spec), admittedCount(ps, counts)
	}
	return resources.PodsRequests(podRequests, pods)
}

// admittedCount is how many pods of ps counts admits: all of them unless
// counts names fewer.
func admittedCount(ps *schedulingv1alpha1.PodSet, counts map[string]int32) int32 {
	if n, ok := counts[ps.Name]; ok && n < ps.Count {
		return max(n, 0)
	}
	return ps.Count
}

// PartialNote says which pod sets counts admits with fewer pods than they
// ask for, in words for a message or an event ("2 of 4 pods of pod set
// main"); "" when counts admits every pod.
func PartialNote(u *schedulingv1alpha1.QueueUnit, counts map[string]int32) string {
	var parts []string
	for i := range u.Spec.PodSets {
		ps := &u.Spec.PodSets[i]
		if n := admittedCount(ps, counts); n < ps.Count {
			parts = append(parts, fmt.Sprintf("%d of %d pods of pod set %s", n, ps.Count, ps.Name))
		}
	}
	return strings.Join(parts, ", ")
}

// Charged is what a unit that holds quota is charged: what its admissions
// hold, written when it was admitted, whatever its spec says since (see
// ResizedSinceAdmitted); Held when they do not record it. A new size is
// charged only by a new admission, with a fit check: a unit resized while
// it holds quota keeps its admitted size until it is queued again (its
// extension queues its job again; see docs/design/decision-core.md).
func Charged(u *schedulingv1alpha1.QueueUnit) corev1.ResourceList {
	if admitted, ok := admittedResources(u); ok {
		return admitted
	}
	return Held(u)
}

// ResizedSinceAdmitted reports whether a unit holding quota asks for other
// than its admissions hold: its spec was resized after its admission was
// written. It is charged what it was admitted with (Charged).
func ResizedSinceAdmitted(u *schedulingv1alpha1.QueueUnit) bool {
	admitted, ok := admittedResources(u)
	return ok && HoldsQuota(u) && !resources.Equal(Held(u), admitted)
}

// admittedResources is what u's admissions hold, summed over its pod sets.
// ok is false when they do not record its charge: it has none, one of them
// records no resources (written by an older writer), or its pod sets do not
// add up to its request (it is charged the request, and its admissions
// hold what its pod sets ask for).
func admittedResources(u *schedulingv1alpha1.QueueUnit) (corev1.ResourceList, bool) {
	if len(u.Status.Admissions) == 0 || len(u.Spec.PodSets) > 0 && !podSetsAskRequest(u) {
		return nil, false
	}
	sum := corev1.ResourceList{}
	for _, a := range u.Status.Admissions {
		if len(a.Resources) == 0 {
			return nil, false
		}
		for name, q := range a.Resources {
			total := sum[name]
			total.Add(q)
			sum[name] = total
		}
	}
	return sum, true
}

// AdmittedPods is what u's admission covers of its pod set podSet: how
// many pods, and what each may ask for (its template's request, as
// PodSetsRequests counts it). ok is false when u is not admitted (Admitted,
// not being deleted) or has no such pod set. The count is the pod set's
// admissions[].replicas (fewer than its count after a partial admission),
// else its count.
func AdmittedPods(u *schedulingv1alpha1.QueueUnit, podSet string) (count int32, perPod corev1.ResourceList, ok bool) {
	if !Admitted(u.EffectivePhase()) || u.DeletionTimestamp != nil {
		return 0, nil, false
	}
	i := slices.IndexFunc(u.Spec.PodSets, func(ps schedulingv1alpha1.PodSet) bool { return ps.Name == podSet })
	if i < 0 {
		return 0, nil, false
	}
	ps := &u.Spec.PodSets[i]
	count = ps.Count
	for _, a := range u.Status.Admissions {
		if a.Name == podSet {
			count = int32(min(max(a.Replicas, 0), int64(ps.Count)))
		}
	}
	return count, resources.PodRequests(&ps.Template.Spec), true
}
