package framework

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// A job that another queued job made (a RayJob's RayCluster) runs within
// its maker's admission, as in Kueue, where a child job runs while its
// parent's workload is admitted and is suspended otherwise. An owner
// reference is the tenant's to write, so naming an owner earns nothing by
// itself: the owner must exist, be the very object named, be of a kind that
// makes such jobs, and be admitted. A job whose owner does not cover it is
// judged as any other job (a labelled one is queued by itself), and is
// judged again whenever its owner's unit is admitted, evicted or gone.

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
func (s Scope) coveredByOwner(ctx context.Context, c client.Reader, kind schema.GroupKind, obj client.Object) (covered bool, why string, err error) {
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
	return true, "", nil
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
