package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// Taking over the units Koord-Queue (v1.8 and before) made. Its extension
// names a job's unit as ours do (Integration.UnitName) and gives it an owner
// reference to the job, but without controller: true, so to the reconciler
// the unit would belong to nobody (QueueUnitNameTaken) and its job would
// never be followed again: a finished job's unit would hold its quota for
// ever. Such a unit is adopted instead: its owner reference to the job
// becomes the controller reference, which is written to the unit and so
// survives restarts, and the job is followed from then on like any other.
//
// Who may be adopted. A unit is adopted by the job its owner reference names
// by UID, and by no other: it lives in the job's namespace under the job's
// unit name (where unitOf looks), it has no controller, its owner reference
// with the job's UID names the job's kind and name, and its consumerRef names
// the job. Its phase and admissions are read as written, as those of the
// units the extension made are: they live in the status subresource, which
// only the queue's own components write, and whoever may write it can
// already release a job by writing Dequeued on the unit the extension made.
// Making a unit (without status) gives a unit that waits, and a waiting unit
// is resized to its job before the queue decides on it.
//
// A unit that holds quota keeps it: it is never admitted again and its
// running job is not suspended. So a unit that holds quota is adopted only
// when its pod sets can be matched with the job's (Koord-Queue names a batch
// Job's one pod set after the job; ours is "main") and the job runs no more
// pods than the unit holds; otherwise the reconciler says why on the job
// (Warning QueueUnitNotAdoptable) and on the unit (condition Adopted False),
// and leaves both as they are.

// ReasonUnitNotAdoptable: the job's unit was made by Koord-Queue and cannot
// be taken over safely; the job is left as it is.
const ReasonUnitNotAdoptable = "QueueUnitNotAdoptable"

// Reasons of a unit's Adopted condition.
const (
	ReasonAdopted      = "AdoptedFromKoordQueue"
	ReasonNotAdoptable = "NotAdoptable"
)

// ownerRefTo is u's owner reference to the object with uid, nil if none.
func ownerRefTo(u *schedulingv1alpha1.QueueUnit, uid string) *metav1.OwnerReference {
	for i := range u.OwnerReferences {
		if string(u.OwnerReferences[i].UID) == uid && uid != "" {
			return &u.OwnerReferences[i]
		}
	}
	return nil
}

// ownerOfKind is u's owner reference of the integration's kind: its
// controller, or, when it has none, its only owner reference of that kind
// (as Koord-Queue writes them).
func (r *JobReconciler) ownerOfKind(u *schedulingv1alpha1.QueueUnit) *metav1.OwnerReference {
	if c := metav1.GetControllerOf(u); c != nil {
		return c
	}
	var found *metav1.OwnerReference
	for i := range u.OwnerReferences {
		if ref := &u.OwnerReferences[i]; r.isOurKind(ref.APIVersion, ref.Kind) {
			if found != nil {
				return nil
			}
			found = ref
		}
	}
	return found
}

// isOurKind reports whether apiVersion and kind name the integration's kind
// (any version of its group).
func (r *JobReconciler) isOurKind(apiVersion, kind string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && kind == r.integ.GVK.Kind && gv.Group == r.integ.GVK.Group
}

// adoption is what taking a unit over changes: the pod sets it renames
// (Koord-Queue's name to the job's), or why it cannot be taken over.
type adoption struct {
	renames map[string]string
	problem string
	// jobSets are the job's pod sets, for a unit that holds quota: their
	// per-pod requests are what the unit admits per pod from then on
	// (annotationAdoptedPodRequests).
	jobSets []schedulingv1alpha1.PodSet
}

// planAdoption decides whether the reconciler may take over u, the unit at
// job's unit name whose owner reference ref has the job's UID.
func (r *JobReconciler) planAdoption(job GenericJob, u *schedulingv1alpha1.QueueUnit, ref *metav1.OwnerReference) adoption {
	obj := job.Object()
	what := fmt.Sprintf("%s %s", r.integ.GVK.Kind, obj.GetName())
	if !r.isOurKind(ref.APIVersion, ref.Kind) || ref.Name != obj.GetName() {
		return adoption{problem: fmt.Sprintf("its owner reference with the job's UID names %s %s (%s), not %s", ref.Kind, ref.Name, ref.APIVersion, what)}
	}
	c := u.Spec.ConsumerRef
	switch {
	case c == nil:
		return adoption{problem: "it has no spec.consumerRef"}
	case !r.isOurKind(c.APIVersion, c.Kind) || c.Name != obj.GetName() || (c.Namespace != "" && c.Namespace != obj.GetNamespace()):
		return adoption{problem: fmt.Sprintf("its spec.consumerRef names %s %s/%s, not %s", c.Kind, c.Namespace, c.Name, what)}
	case c.UID != "" && string(c.UID) != string(obj.GetUID()):
		return adoption{problem: "its spec.consumerRef names another job of this name (UID " + string(c.UID) + ")"}
	}
	if !queueunit.HoldsQuota(u) {
		// A waiting unit is resized to its job (hold) before the queue
		// decides on it: its pod sets need no matching.
		return adoption{}
	}
	sets, err := job.PodSets()
	var jobSets []schedulingv1alpha1.PodSet
	if err == nil {
		jobSets, err = unitPodSets(sets, podCreation{}) // counts are compared, not requests
	}
	if err != nil {
		return adoption{} // release does not resize an invalid job
	}
	jobSets = withoutSetsKoordQueueLeftOut(job, u, jobSets)
	renames, ok := podSetRenames(u.Spec.PodSets, jobSets)
	if !ok {
		return adoption{problem: fmt.Sprintf("it holds quota for pod sets %s, which do not match the job's %s",
			podSetNames(u.Spec.PodSets), podSetNames(jobSets))}
	}
	if grew(renamed(u.Spec.PodSets, renames), jobSets) {
		return adoption{problem: fmt.Sprintf("the job runs more pods than it holds quota for (pod sets %s, the job's %s)",
			podSetCounts(u.Spec.PodSets), podSetCounts(jobSets))}
	}
	return adoption{renames: renames, jobSets: jobSets}
}

// isAdopted reports whether u was taken over from Koord-Queue.
func isAdopted(u *schedulingv1alpha1.QueueUnit) bool {
	return apimeta.IsStatusConditionTrue(u.Status.Conditions, schedulingv1alpha1.QueueUnitAdopted)
}

// withoutSetsKoordQueueLeftOut is a job's pod sets, sets, without those
// Koord-Queue leaves out of its units (JobWithPodSetsKoordQueueLeftOut)
// that u has none of: what u, made by Koord-Queue, holds quota for.
func withoutSetsKoordQueueLeftOut(job GenericJob, u *schedulingv1alpha1.QueueUnit, sets []schedulingv1alpha1.PodSet) []schedulingv1alpha1.PodSet {
	j, ok := job.(JobWithPodSetsKoordQueueLeftOut)
	if !ok {
		return sets
	}
	leftOut := j.PodSetsKoordQueueLeftOut()
	return slices.DeleteFunc(slices.Clone(sets), func(s schedulingv1alpha1.PodSet) bool {
		return slices.Contains(leftOut, s.Name) && !slices.ContainsFunc(u.Spec.PodSets, func(us schedulingv1alpha1.PodSet) bool { return us.Name == s.Name })
	})
}

// podSetRenames matches a unit's pod sets with its job's, by name, else by
// name in lower case (Koord-Queue's Kubeflow sets), else one with one (its
// batch Job's set is named after the job): the renames needed, Koord-Queue's
// name to the job's; ok is false when some set of the unit matches none, or
// two match one.
func podSetRenames(unit, job []schedulingv1alpha1.PodSet) (renames map[string]string, ok bool) {
	names := make([]string, len(job))
	for i := range job {
		names[i] = job[i].Name
	}
	taken := map[string]bool{}
	for _, s := range unit {
		to := ""
		switch {
		case slices.Contains(names, s.Name):
			to = s.Name
		case slices.Contains(names, strings.ToLower(s.Name)):
			to = strings.ToLower(s.Name)
		case len(unit) == 1 && len(job) == 1:
			to = names[0]
		default:
			return nil, false
		}
		if taken[to] {
			return nil, false
		}
		taken[to] = true
		if to != s.Name {
			if renames == nil {
				renames = map[string]string{}
			}
			renames[s.Name] = to
		}
	}
	return renames, true
}

// renamed is a copy of sets with renames applied.
func renamed(sets []schedulingv1alpha1.PodSet, renames map[string]string) []schedulingv1alpha1.PodSet {
	out := slices.Clone(sets)
	for i := range out {
		if to, ok := renames[out[i].Name]; ok {
			out[i].Name = to
		}
	}
	return out
}

func podSetNames(sets []schedulingv1alpha1.PodSet) string {
	names := make([]string, len(sets))
	for i := range sets {
		names[i] = sets[i].Name
	}
	return "[" + strings.Join(names, " ") + "]"
}

func podSetCounts(sets []schedulingv1alpha1.PodSet) string {
	parts := make([]string, len(sets))
	for i := range sets {
		parts[i] = fmt.Sprintf("%s %d", sets[i].Name, sets[i].Count)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// adopt takes u over for job, or says on both why it cannot: adopted is
// false then, and the job is left as it is. The status goes first (the
// admissions renamed, condition Adopted), then the owner reference: until
// that is written the unit is not the job's, and the next pass does what is
// left.
func (r *JobReconciler) adopt(ctx context.Context, job GenericJob, u *schedulingv1alpha1.QueueUnit, ref *metav1.OwnerReference) (adopted bool, err error) {
	obj := job.Object()
	plan := r.planAdoption(job, u, ref)
	if plan.problem != "" {
		msg := fmt.Sprintf("QueueUnit %s was made by Koord-Queue for this job and cannot be taken over: %s. The job and the unit are left as they are; the unit keeps what it holds until it is deleted", u.Name, plan.problem)
		r.recorder.Event(obj, corev1.EventTypeWarning, ReasonUnitNotAdoptable, msg)
		return false, r.patchUnit(ctx, u, true, func(u *schedulingv1alpha1.QueueUnit) bool {
			return apimeta.SetStatusCondition(&u.Status.Conditions, metav1.Condition{
				Type: schedulingv1alpha1.QueueUnitAdopted, Status: metav1.ConditionFalse, Reason: ReasonNotAdoptable,
				Message: "cannot be taken over: " + plan.problem, ObservedGeneration: u.Generation,
				LastTransitionTime: metav1.NewTime(r.clock.Now()),
			})
		})
	}
	msg := fmt.Sprintf("taken over from Koord-Queue by koord-queue-controllers: %s %s is its controller", r.integ.GVK.Kind, obj.GetName())
	if err := r.patchUnit(ctx, u, true, func(u *schedulingv1alpha1.QueueUnit) bool {
		changed := false
		for i := range u.Status.Admissions {
			if to, ok := plan.renames[u.Status.Admissions[i].Name]; ok {
				u.Status.Admissions[i].Name, changed = to, true
			}
		}
		if !apimeta.IsStatusConditionTrue(u.Status.Conditions, schedulingv1alpha1.QueueUnitAdopted) {
			apimeta.SetStatusCondition(&u.Status.Conditions, metav1.Condition{
				Type: schedulingv1alpha1.QueueUnitAdopted, Status: metav1.ConditionTrue, Reason: ReasonAdopted,
				Message: msg, ObservedGeneration: u.Generation, LastTransitionTime: metav1.NewTime(r.clock.Now()),
			})
			changed = true
		}
		return changed
	}); err != nil {
		return false, err
	}
	uid := ref.UID
	if len(plan.renames) > 0 {
		// Renamed pod sets are written whole, templates included, and the
		// cache keeps a unit's templates stripped (StripUnit): they are
		// renamed on the unit as the API server has it, read into u, which
		// the caller goes on with.
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return false, fmt.Errorf("reading QueueUnit %s to rename its pod sets: %w", u.Name, err)
		}
	}
	if err := r.patchUnit(ctx, u, false, func(u *schedulingv1alpha1.QueueUnit) bool {
		for i := range u.OwnerReferences {
			if o := &u.OwnerReferences[i]; o.UID == uid {
				o.Controller, o.BlockOwnerDeletion = ptr.To(true), ptr.To(true)
			}
		}
		u.Spec.PodSets = renamed(u.Spec.PodSets, plan.renames)
		if plan.jobSets != nil {
			recordAdoptedPodRequests(u, plan.jobSets)
		}
		if u.Spec.ConsumerRef.UID == "" {
			u.Spec.ConsumerRef.UID = obj.GetUID()
		}
		return true
	}); err != nil {
		return false, err
	}
	ctrl.LoggerFrom(ctx).Info("Adopted the QueueUnit Koord-Queue made for the job", "queueUnit", klog.KObj(u), "phase", u.EffectivePhase(), "renamedPodSets", plan.renames)
	return true, nil
}
