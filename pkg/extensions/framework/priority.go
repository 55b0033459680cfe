package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reasons of the Warning events of a job whose PriorityClass gives its unit
// no priority.
const (
	// ReasonUnknownPriorityClass: the job names a PriorityClass that does
	// not exist.
	ReasonUnknownPriorityClass = "UnknownPriorityClass"
	// ReasonPriorityClassNotAllowed: the job names a system PriorityClass,
	// or one above the highest priority a unit may take (PriorityLimit).
	ReasonPriorityClassNotAllowed = "PriorityClassNotAllowed"
)

// HighestUserDefinablePriority is the highest value the API server lets a
// PriorityClass have unless it is one of its system classes
// (system-node-critical, 2,000,001,000, and system-cluster-critical,
// 2,000,000,000): Kubernetes' scheduling.HighestUserDefinablePriority.
const HighestUserDefinablePriority int32 = 1_000_000_000

// systemClassPrefix begins the name of every system PriorityClass; the API
// server refuses any other class named so.
const systemClassPrefix = "system-"

// PriorityLimit is which PriorityClasses give a unit their value: those of
// value at most Max, and of the system classes (named system-*, above any
// class a user may create) only those AllowedSystem names, whatever their
// value. System classes keep the node's own pods running: a tenant's job
// naming one would pass every other unit in its queue, and preempt them.
type PriorityLimit struct {
	Max           int32
	AllowedSystem []string
}

// DefaultPriorityLimit honours every class a user may create, and no
// system class.
var DefaultPriorityLimit = PriorityLimit{Max: HighestUserDefinablePriority}

// refuses says why a unit may not take pc's value; empty when it may.
func (l PriorityLimit) refuses(pc *schedulingv1.PriorityClass) string {
	if slices.Contains(l.AllowedSystem, pc.Name) {
		return ""
	}
	if strings.HasPrefix(pc.Name, systemClassPrefix) {
		return fmt.Sprintf("a system PriorityClass (of value %d), which units may take only if koord-queue-controllers' --allowed-system-priority-classes names it", pc.Value)
	}
	if pc.Value > l.Max {
		return fmt.Sprintf("of value %d, above the highest priority a unit may take (%d, koord-queue-controllers' --max-unit-priority)", pc.Value, l.Max)
	}
	return ""
}

// declaredClass is the PriorityClass a job names, and the field naming it:
// its own (JobWithPriority) first, then that of its first pod template
// naming one.
func declaredClass(job GenericJob, sets []PodSet) (name, field string) {
	if p, ok := job.(JobWithPriority); ok {
		if name, field := p.PriorityClass(); name != "" {
			return name, field
		}
	}
	for _, s := range sets {
		if s.Template != nil && s.Template.Spec.PriorityClassName != "" {
			return s.Template.Spec.PriorityClassName, fmt.Sprintf("spec.priorityClassName of pod set %s's template", s.Name)
		}
	}
	return "", ""
}

// resolvePriority is a unit's priority class and priority: the value of the
// PriorityClass the job names, else that of the global default
// PriorityClass, else none (0). Only PriorityClasses, which the cluster's
// admins write, give a priority: the integer priority of a pod template (or
// an Argo Workflow's spec.priority) is the tenant's own word, which the API
// server refuses on a pod but does not check inside a custom resource, and
// is ignored. A class that does not exist, or that limit refuses, gives a
// warning naming the field and the class, and the default.
func resolvePriority(ctx context.Context, c client.Reader, limit PriorityLimit, job GenericJob, sets []PodSet) (string, *int32, *Warning, error) {
	className, field := declaredClass(job, sets)
	var refused string
	if className != "" {
		var pc schedulingv1.PriorityClass
		err := c.Get(ctx, client.ObjectKey{Name: className}, &pc)
		switch {
		case err == nil:
			if refused = limit.refuses(&pc); refused == "" {
				return className, ptr.To(pc.Value), nil, nil
			}
		case !apierrors.IsNotFound(err):
			return "", nil, nil, fmt.Errorf("getting PriorityClass %s: %w", className, err)
		}
	}
	def, err := globalDefault(ctx, c, limit)
	if err != nil {
		return "", nil, nil, err
	}
	var warning *Warning
	switch {
	case refused != "":
		warning = &Warning{
			Reason: ReasonPriorityClassNotAllowed,
			Message: fmt.Sprintf("%s names PriorityClass %q, %s; the unit takes the default priority (%s)",
				field, className, refused, describeDefault(def)),
		}
	case className != "":
		warning = &Warning{
			Reason: ReasonUnknownPriorityClass,
			Message: fmt.Sprintf("%s names PriorityClass %q, which does not exist; the unit takes the default priority (%s)",
				field, className, describeDefault(def)),
		}
	}
	if def == nil {
		return "", nil, warning, nil
	}
	return def.Name, ptr.To(def.Value), warning, nil
}

// globalDefault is the global default PriorityClass that limit allows, nil
// when there is none; of several, the lowest, as the API server's Priority
// admission picks.
func globalDefault(ctx context.Context, c client.Reader, limit PriorityLimit) (*schedulingv1.PriorityClass, error) {
	var list schedulingv1.PriorityClassList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing PriorityClasses: %w", err)
	}
	var def *schedulingv1.PriorityClass
	for i := range list.Items {
		pc := &list.Items[i]
		if pc.GlobalDefault && limit.refuses(pc) == "" && (def == nil || pc.Value < def.Value) {
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
