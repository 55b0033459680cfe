package framework

import (
	"context"
	"fmt"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReasonUnknownPriorityClass is the Warning event of a job naming a
// PriorityClass that does not exist.
const ReasonUnknownPriorityClass = "UnknownPriorityClass"

// declaredClass is the PriorityClass a job names: its own
// (JobWithPriority) first, then that of its first pod template naming one.
func declaredClass(job GenericJob, sets []PodSet) string {
	if p, ok := job.(JobWithPriority); ok {
		if name := p.PriorityClassName(); name != "" {
			return name
		}
	}
	for _, s := range sets {
		if s.Template != nil && s.Template.Spec.PriorityClassName != "" {
			return s.Template.Spec.PriorityClassName
		}
	}
	return ""
}

// resolvePriority is a unit's priority class and priority: the value of the
// PriorityClass the job names, else that of the global default
// PriorityClass, else none (0). Only PriorityClasses, which the cluster's
// admins write, give a priority: the integer priority of a pod template (or
// an Argo Workflow's spec.priority) is the tenant's own word, which the API
// server refuses on a pod but does not check inside a custom resource, and
// is ignored. A class that does not exist gives a warning and the default.
func resolvePriority(ctx context.Context, c client.Reader, job GenericJob, sets []PodSet) (string, *int32, *Warning, error) {
	className := declaredClass(job, sets)
	if className != "" {
		var pc schedulingv1.PriorityClass
		err := c.Get(ctx, client.ObjectKey{Name: className}, &pc)
		switch {
		case err == nil:
			return className, ptr.To(pc.Value), nil, nil
		case !apierrors.IsNotFound(err):
			return "", nil, nil, fmt.Errorf("getting PriorityClass %s: %w", className, err)
		}
	}
	def, err := globalDefault(ctx, c)
	if err != nil {
		return "", nil, nil, err
	}
	var warning *Warning
	if className != "" {
		warning = &Warning{
			Reason:  ReasonUnknownPriorityClass,
			Message: fmt.Sprintf("PriorityClass %q does not exist; the unit takes the default priority (%s)", className, describeDefault(def)),
		}
	}
	if def == nil {
		return "", nil, warning, nil
	}
	return def.Name, ptr.To(def.Value), warning, nil
}

// globalDefault is the global default PriorityClass, nil when there is
// none; of several, the lowest, as the API server's Priority admission
// picks.
func globalDefault(ctx context.Context, c client.Reader) (*schedulingv1.PriorityClass, error) {
	var list schedulingv1.PriorityClassList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing PriorityClasses: %w", err)
	}
	var def *schedulingv1.PriorityClass
	for i := range list.Items {
		pc := &list.Items[i]
		if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	return def, nil
}

func describeDefault(def *schedulingv1.PriorityClass) string {
	if def == nil {
		return "0, no global default PriorityClass"
	}
	return fmt.Sprintf("%d, of the global default PriorityClass %s", def.Value, def.Name)
}
