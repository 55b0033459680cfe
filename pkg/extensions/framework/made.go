package framework

import (
	"context"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// The jobs a JobWithMadeJobs made are the tenant's to edit once made: a
// RayJob's RayCluster can be scaled past what the RayJob's unit was
// admitted with (KubeRay makes the cluster from the RayJob's
// rayClusterSpec once, and leaves it to whoever edits it after), and a Job
// can be made under a RayJob by hand. Their pods count as the maker's:
// summed by the maker's pod set they count in (JobWithMadeJobs.MadeSets),
// they are measured against the maker's admission as the maker's own pod
// sets are (excess), and a maker whose made jobs exceed it is queued again.

// madeExcess says how the jobs job made exceed what unit, its unit, was
// admitted with: one phrase per pod set of job that they exceed, naming
// the jobs ("in RayCluster rc: pod set workers: 5 pods, admitted 2").
// Made jobs being deleted, queued by themselves (a unit of their own
// controls them), or running no pod (JobWithMadeJobs.MadeSets) count
// nothing.
func (r *JobReconciler) madeExcess(ctx context.Context, job GenericJob, unit *schedulingv1alpha1.QueueUnit) ([]string, error) {
	maker, ok := job.(JobWithMadeJobs)
	if !ok {
		return nil, nil
	}
	obj := job.Object()
	key := PodOwner{Kind: r.integ.GVK.GroupKind(), Name: obj.GetName()}.key()
	var names, bad []string
	counts := map[string]int64{}
	perPod := map[string]corev1.ResourceList{}
	var order []string
	for _, kind := range maker.MadeKinds() {
		gvk, err := apiutil.GVKForObject(kind, r.client.Scheme())
		if err != nil {
			return nil, fmt.Errorf("the kind of the jobs a %s makes: %w", r.integ.GVK.Kind, err)
		}
		objList, err := newListOf(r.client, gvk)
		if err != nil {
			return nil, err
		}
		if err := r.client.List(ctx, objList, client.InNamespace(obj.GetNamespace()), client.MatchingFields{IndexJobController: key}); err != nil {
			if apimeta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("listing the %ss %s %s made: %w", gvk.Kind, r.integ.GVK.Kind, obj.GetName(), err)
		}
		var items []client.Object
		_ = apimeta.EachListItem(objList, func(o runtime.Object) error {
			if m, ok := o.(client.Object); ok {
				items = append(items, m)
			}
			return nil
		})
		for _, m := range items {
			if c, ok := controllerOf(m); !ok || c.UID != obj.GetUID() || !m.GetDeletionTimestamp().IsZero() {
				continue
			}
			if queued, err := r.queuedByItself(ctx, gvk.GroupKind().String(), m); err != nil || queued {
				if err != nil {
					return nil, err
				}
				continue
			}
			name := gvk.Kind + " " + m.GetName()
			sets, err := maker.MadeSets(m)
			var unitSets []schedulingv1alpha1.PodSet
			if err == nil && len(sets) > 0 {
				var made podCreation
				if made, err = creationOf(ctx, r.client, obj.GetNamespace(), sets); err != nil {
					return nil, err
				}
				unitSets, err = unitPodSets(sets, made)
			}
			if err != nil {
				bad = append(bad, fmt.Sprintf("in %s: %v", name, err))
				continue
			}
			if len(unitSets) > 0 {
				names = append(names, name)
			}
			for _, s := range unitSets {
				if _, ok := perPod[s.Name]; !ok {
					order = append(order, s.Name)
				}
				counts[s.Name] += int64(s.Count)
				perPod[s.Name] = resources.Max(perPod[s.Name], resources.PodRequests(&s.Template.Spec))
			}
		}
	}
	sets := make([]schedulingv1alpha1.PodSet, 0, len(order))
	for _, name := range order {
		sets = append(sets, schedulingv1alpha1.PodSet{
			Name:  name,
			Count: int32(min(counts[name], math.MaxInt32)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "pod", Resources: corev1.ResourceRequirements{Requests: perPod[name]}},
			}}},
		})
	}
	if isAdopted(unit) {
		sets = withoutSetsKoordQueueLeftOut(job, unit, sets)
	}
	out := bad
	for _, phrase := range excess(unit, sets, nil) {
		out = append(out, "in "+strings.Join(names, ", ")+": "+phrase)
	}
	return out, nil
}

// queuedByItself reports whether m, a job of kind kind (a GroupKind's
// String), has a unit of its own: only a job of an enabled framework can.
func (r *JobReconciler) queuedByItself(ctx context.Context, kind string, m client.Object) (bool, error) {
	for _, integ := range r.scope.Jobs {
		if integ.GVK.GroupKind().String() == kind {
			return hasOwnUnit(ctx, r.client, integ, m)
		}
	}
	return false, nil
}
