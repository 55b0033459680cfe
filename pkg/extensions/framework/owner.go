package framework

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// A job that another queued job made (a RayJob's RayCluster) runs within
// its maker's admission, as in Kueue, where a child job runs while its
// parent's workload is admitted and is suspended otherwise. An owner
// reference is the tenant's to write, so naming an owner earns nothing by
// itself: the owner must exist, be the very object named, be of a kind that
// makes such jobs, and be admitted; and what its admission covers is only
// what its unit asks for:
//
//   - an owner whose unit asks for the pods of the jobs its framework makes
//     for it (JobWithMadeJobs: a RayJob's unit counts its RayCluster and
//     submitter Job) answers for them itself: they are covered while it is
//     admitted, and it is queued again when they outgrow its admission
//     (madeExcess, release);
//   - any other owner (an Argo Workflow, whose unit asks for its
//     koord-queue/min-resources) covers the jobs it made only within what
//     its unit was admitted with, in the order they were made
//     (coveredWithin): a job that would take them past it is not covered.
//
// A job whose owner does not cover it is judged as any other job (a
// labelled one is queued by itself), and is judged again whenever its
// owner's unit is admitted, evicted or gone, or (for an owner of the second
// kind) a job of its kind the same owner made changes.

// IndexJobController indexes an integration's jobs by their controller
// (PodOwner.key), to find the jobs a job made from its unit.
const IndexJobController = "job.controller"

// ownerOf is the integration of Owners whose jobs, of kind ownerKind, make
// jobs of kind child.
func (s Scope) ownerOf(ownerKind, child schema.GroupKind) (Integration, bool) {
	for _, o := range s.Owners {
		if o.GVK.GroupKind() == ownerKind && o.makes(child) {
			return o, true
		}
	}
	return Integration{}, false
}

// coveredByOwner reports whether obj, a job of kind kind, runs within its
// owner's admission: its controller reference names a job of one of Owners
// that makes jobs of kind kind, and that job exists in obj's namespace with
// the reference's UID and controls a unit that covers it
// (queueunit.CoversMadeJob: admitted, not finished). When obj names
// such an owner that does not cover it, why says why.
func (s Scope) coveredByOwner(ctx context.Context, c client.Reader, kind schema.GroupKind, job GenericJob) (covered bool, why string, err error) {
	obj := job.Object()
	ref, ok := controllerOf(obj)
	if !ok {
		return false, "", nil
	}
	integ, ok := s.ownerOf(ref.Kind, kind)
	if !ok {
		return false, "", nil
	}
	named := fmt.Sprintf("its owner %s %s", integ.GVK.Kind, ref.Name)
	owner := integ.NewJob().Object()
	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}
	switch err := c.Get(ctx, key, owner); {
	case apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err):
		return false, named + " does not exist", nil
	case err != nil:
		return false, "", fmt.Errorf("reading the job's owner %s %s: %w", integ.GVK.Kind, key, err)
	case owner.GetUID() != ref.UID:
		return false, fmt.Sprintf("%s is not the object its owner reference names (UID %s, not %s)", named, owner.GetUID(), ref.UID), nil
	}
	var unit schedulingv1alpha1.QueueUnit
	unitKey := client.ObjectKey{Namespace: key.Namespace, Name: integ.UnitName(ref.Name)}
	switch err := c.Get(ctx, unitKey, &unit); {
	case apierrors.IsNotFound(err):
		return false, named + " is not queued", nil
	case err != nil:
		return false, "", fmt.Errorf("reading the QueueUnit %s of the job's owner: %w", unitKey, err)
	}
	if u := metav1.GetControllerOf(&unit); u == nil || u.UID != ref.UID {
		return false, named + " is not queued", nil
	}
	if !queueunit.CoversMadeJob(&unit) {
		return false, fmt.Sprintf("%s is not admitted (QueueUnit %s is %s)", named, unit.Name, unit.EffectivePhase()), nil
	}
	if _, answers := integ.NewJob().(JobWithMadeJobs); answers {
		return true, "", nil
	}
	return s.coveredWithin(ctx, c, integ, ref, &unit, kind, job)
}

// coveredWithin reports whether job, of kind kind, made by the job ref of
// integration owner, whose unit unit is admitted, fits in what that unit
// was admitted with (queueunit.Charged), with the jobs the owner made
// before it that it covers: taken in the order they were made (creation
// time, then kind and name; job, when it is not created yet, last), each
// is covered if it fits with those covered before it. A job made before
// that ended, or that is queued by itself (it has a unit of its own), takes
// nothing; one whose request cannot be read is not covered. So whatever a
// tenant makes under an admitted owner, the jobs it covers ask in all for
// no more than the owner's admission, and a job made later never takes the
// place of one made earlier. When job does not fit, why says so.
func (s Scope) coveredWithin(ctx context.Context, c client.Reader, owner Integration, ref PodOwner, unit *schedulingv1alpha1.QueueUnit, kind schema.GroupKind, job GenericJob) (covered bool, why string, err error) {
	obj := job.Object()
	named := fmt.Sprintf("its owner %s %s", owner.GVK.Kind, ref.Name)
	request, readErr, err := jobRequest(ctx, c, job)
	if err != nil {
		return false, "", err
	}
	if readErr != nil {
		return false, fmt.Sprintf("%s covers only what it was admitted with, and the job's request cannot be read: %v", named, readErr), nil
	}
	before, err := s.madeBefore(ctx, c, owner, ref, kind, obj)
	if err != nil {
		return false, "", err
	}
	admitted := queueunit.Charged(unit)
	taken := corev1.ResourceList{}
	for _, m := range before {
		if with := sumOf(taken, m.request); resources.Fits(with, admitted) {
			taken = with
		}
	}
	if resources.Fits(sumOf(taken, request), admitted) {
		return true, "", nil
	}
	why = fmt.Sprintf("%s was admitted with %s and covers only that; the job asks for %s", named, resources.Describe(admitted), resources.Describe(request))
	if !isZero(taken) {
		why += fmt.Sprintf(", beyond the %s of the jobs it made before", resources.Describe(taken))
	}
	return false, why, nil
}

// madeJob is a job an owner made, as coveredWithin orders and counts it.
type madeJob struct {
	created metav1.Time
	kind    string
	name    string
	request corev1.ResourceList
}

// madeBefore are the jobs the job ref of integration owner made, of every
// enabled kind it makes, that were made before obj (of kind kind) and take
// a share of its admission: not finished, not queued by themselves, their
// request readable. They come in the order they were made.
func (s Scope) madeBefore(ctx context.Context, c client.Reader, owner Integration, ref PodOwner, kind schema.GroupKind, obj client.Object) ([]madeJob, error) {
	this := madeJob{created: obj.GetCreationTimestamp(), kind: kind.String(), name: obj.GetName()}
	var out []madeJob
	for _, integ := range s.Jobs {
		if !owner.makes(integ.GVK.GroupKind()) {
			continue
		}
		names, err := namesIndexed(ctx, c, integ, obj.GetNamespace(), IndexJobController, ref.key())
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			m := madeJob{kind: integ.GVK.GroupKind().String(), name: name}
			if m.kind == this.kind && m.name == this.name {
				continue
			}
			made := integ.NewJob()
			if err := c.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, made.Object()); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, fmt.Errorf("reading %s %s, made by %s %s: %w", integ.GVK.Kind, name, owner.GVK.Kind, ref.Name, err)
			}
			m.created = made.Object().GetCreationTimestamp()
			if maker, ok := controllerOf(made.Object()); !ok || maker.UID != ref.UID || !madeEarlier(m, this) {
				continue
			}
			if _, _, finished := made.Finished(); finished {
				continue
			}
			queued, err := hasOwnUnit(ctx, c, integ, made.Object())
			if err != nil {
				return nil, err
			}
			if queued {
				continue
			}
			request, readErr, err := jobRequest(ctx, c, made)
			if err != nil {
				return nil, err
			}
			if readErr != nil {
				continue
			}
			m.request = request
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b madeJob) int {
		switch {
		case madeEarlier(a, b):
			return -1
		case madeEarlier(b, a):
			return 1
		}
		return 0
	})
	return out, nil
}

// madeEarlier reports whether a was made before b: by creation time (a job
// not created yet, zero, last), then by kind and name.
func madeEarlier(a, b madeJob) bool {
	switch {
	case a.created.IsZero() != b.created.IsZero():
		return b.created.IsZero()
	case !a.created.Equal(&b.created):
		return a.created.Before(&b.created)
	case a.kind != b.kind:
		return a.kind < b.kind
	}
	return a.name < b.name
}

// hasOwnUnit reports whether obj, a job of integ, is queued by itself: a
// unit under its unit name has it as its controller.
func hasOwnUnit(ctx context.Context, c client.Reader, integ Integration, obj client.Object) (bool, error) {
	var u schedulingv1alpha1.QueueUnit
	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: integ.UnitName(obj.GetName())}
	if err := c.Get(ctx, key, &u); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading QueueUnit %s: %w", key, err)
	}
	owner := metav1.GetControllerOf(&u)
	return owner != nil && owner.UID == obj.GetUID(), nil
}

// jobRequest is what job's unit would ask for, with what its pods'
// creation gives them (read through c); readErr says the request cannot be
// read, err that the cache could not be.
func jobRequest(ctx context.Context, c client.Reader, job GenericJob) (request corev1.ResourceList, readErr, err error) {
	sets, readErr := job.PodSets()
	if readErr != nil {
		return nil, readErr, nil
	}
	made, err := creationOf(ctx, c, job.Object().GetNamespace(), sets)
	if err != nil {
		return nil, nil, err
	}
	unitSets, readErr := unitPodSets(sets, made)
	if readErr != nil {
		return nil, readErr, nil
	}
	return resources.PodSetsRequests(unitSets), nil, nil
}

// sumOf is a + b, a new list.
func sumOf(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	resources.Add(out, a)
	resources.Add(out, b)
	return out
}

// namesIndexed names the jobs of integ in namespace ns whose index holds
// key. c must know its scheme (the manager's client does), to make the list.
func namesIndexed(ctx context.Context, c client.Reader, integ Integration, ns, index, key string) ([]string, error) {
	list, err := newListOf(c, integ.GVK)
	if err != nil {
		return nil, err
	}
	return listNames(ctx, c, list, integ, ns, index, key)
}

// listNames names the jobs of integ in namespace ns whose index holds key,
// read into list (an empty list of integ's kind). Only the names are read:
// the cache's objects need no copy.
func listNames(ctx context.Context, c client.Reader, list client.ObjectList, integ Integration, ns, index, key string) ([]string, error) {
	if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingFields{index: key}, client.UnsafeDisableDeepCopy); err != nil {
		if apimeta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %ss by %s: %w", integ.GVK.Kind, index, err)
	}
	var names []string
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		if job, ok := o.(client.Object); ok {
			names = append(names, job.GetName())
		}
		return nil
	})
	return names, nil
}

// newListOf is an empty list of kind gvk, made by c's scheme.
func newListOf(c client.Reader, gvk schema.GroupVersionKind) (client.ObjectList, error) {
	schemed, ok := c.(interface{ Scheme() *runtime.Scheme })
	if !ok {
		return nil, fmt.Errorf("cannot list %ss: the client has no scheme", gvk.Kind)
	}
	o, err := schemed.Scheme().New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, fmt.Errorf("making a %sList: %w", gvk.Kind, err)
	}
	list, ok := o.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%sList is not a list", gvk.Kind)
	}
	return list, nil
}

// ownsJobsOfKind reports whether some of Owners make jobs of kind child.
func (s Scope) ownsJobsOfKind(child schema.GroupKind) bool {
	for _, o := range s.Owners {
		if o.makes(child) {
			return true
		}
	}
	return false
}

// jobsMadeByUnitsJob names the jobs of the reconciler's kind that the job of
// unit u made, so that they are judged again when u is admitted, evicted
// or gone (IndexJobController).
func (r *JobReconciler) jobsMadeByUnitsJob(ctx context.Context, u client.Object) []reconcile.Request {
	owner, ok := controllerOf(u)
	if !ok {
		return nil
	}
	if _, ok := r.scope.ownerOf(owner.Kind, r.integ.GVK.GroupKind()); !ok {
		return nil
	}
	jobs, err := r.jobsIndexed(ctx, u.GetNamespace(), IndexJobController, owner.key())
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot find the jobs a unit's job made", "queueUnit", klog.KObj(u), "kind", r.integ.GVK.Kind)
	}
	return jobs
}

// jobsMadeBySameOwner names the jobs of the reconciler's kind that the
// controller of job j made, when that controller covers the jobs it made
// only within its admission (coveredWithin): a change to one of them may
// take a share of the admission that the others were judged without.
func (r *JobReconciler) jobsMadeBySameOwner(ctx context.Context, j client.Object) []reconcile.Request {
	owner, ok := controllerOf(j)
	if !ok {
		return nil
	}
	integ, ok := r.scope.ownerOf(owner.Kind, r.integ.GVK.GroupKind())
	if !ok {
		return nil
	}
	if _, answers := integ.NewJob().(JobWithMadeJobs); answers {
		return nil
	}
	jobs, err := r.jobsIndexed(ctx, j.GetNamespace(), IndexJobController, owner.key())
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot find the jobs made by a job's owner", "job", klog.KObj(j), "kind", r.integ.GVK.Kind)
	}
	return jobs
}

// admissionChanged lets through the unit events that can change whether
// the unit's job covers the jobs it made: a unit that comes or goes, or is
// admitted or leaves admission.
var admissionChanged = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return true },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return unitAdmitted(e.ObjectOld) != unitAdmitted(e.ObjectNew)
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func unitAdmitted(o client.Object) bool {
	u, ok := o.(*schedulingv1alpha1.QueueUnit)
	return ok && queueunit.Admitted(u.EffectivePhase()) && u.DeletionTimestamp == nil
}
