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

// declaredPriority is the priority class and value a job declares: its own
// (JobWithPriority) first, then those of its first pod template that sets
// them.
func declaredPriority(job GenericJob, sets []PodSet) (className string, value *int32) {
	if p, ok := job.(JobWithPriority); ok {
		className, value = p.Priority()
	}
	for _, s := range sets {
		if s.Template == nil {
			continue
		}
		if className == "" {
			className = s.Template.Spec.PriorityClassName
		}
		if value == nil && s.Template.Spec.Priority != nil {
			value = ptr.To(*s.Template.Spec.Priority)
		}
	}
	return className, value
}

// resolvePriority is a unit's priority class and priority: the value of the
// PriorityClass the job names, else the value the job declares. A class that
// does not exist gives a warning, not an error.
func resolvePriority(ctx context.Context, c client.Reader, job GenericJob, sets []PodSet) (string, *int32, *Warning, error) {
	className, value := declaredPriority(job, sets)
	if className == "" {
		return "", value, nil, nil
	}
	var pc schedulingv1.PriorityClass
	err := c.Get(ctx, client.ObjectKey{Name: className}, &pc)
	switch {
	case apierrors.IsNotFound(err):
		return className, value, &Warning{
			Reason: ReasonUnknownPriorityClass,
			Message: fmt.Sprintf("PriorityClass %q does not exist; the unit takes its priority from the pod template (%s)",
				className, describePriority(value)),
		}, nil
	case err != nil:
		return "", nil, nil, fmt.Errorf("getting PriorityClass %s: %w", className, err)
	}
	return className, ptr.To(pc.Value), nil, nil
}

func describePriority(p *int32) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
