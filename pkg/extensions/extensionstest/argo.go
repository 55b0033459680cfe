package extensionstest

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// WorkflowWrapper builds an Argo Workflow.
type WorkflowWrapper struct{ wfv1.Workflow }

// MakeWorkflow starts a workflow whose entrypoint "main" runs one container.
func MakeWorkflow(name, namespace string) *WorkflowWrapper {
	return &WorkflowWrapper{wfv1.Workflow{
		ObjectMeta: meta(name, namespace),
		Spec: wfv1.WorkflowSpec{
			Entrypoint: "main",
			Templates: []wfv1.Template{{
				Name:      "main",
				Container: &wrappers.PodTemplate().Spec.Containers[0],
			}},
		},
	}}
}

// QueueTemplate adds the koord-queue-suspend template that marks the
// workflow as the queue's.
func (w *WorkflowWrapper) QueueTemplate() *WorkflowWrapper {
	w.Spec.Templates = append(w.Spec.Templates, wfv1.Template{Name: schedulingv1alpha1.ArgoSuspendTemplate, Suspend: &wfv1.SuspendTemplate{}})
	return w
}

// Command sets main's command. A real workflow-controller needs one for an
// image it cannot look up in a registry (Argo's emissary executor runs the
// command itself).
func (w *WorkflowWrapper) Command(cmd ...string) *WorkflowWrapper {
	for i := range w.Spec.Templates {
		if w.Spec.Templates[i].Name == "main" {
			w.Spec.Templates[i].Container.Command = cmd
		}
	}
	return w
}

// QueueStepFirst adds the koord-queue-suspend template and makes the
// entrypoint a steps template that runs it first, then main: submitted
// running, the workflow waits at its first step.
func (w *WorkflowWrapper) QueueStepFirst() *WorkflowWrapper {
	w.QueueTemplate()
	w.Spec.Templates = append(w.Spec.Templates, wfv1.Template{Name: "queue-then-main", Steps: []wfv1.ParallelSteps{
		{Steps: []wfv1.WorkflowStep{{Name: "queue", Template: schedulingv1alpha1.ArgoSuspendTemplate}}},
		{Steps: []wfv1.WorkflowStep{{Name: "main", Template: "main"}}},
	}})
	w.Spec.Entrypoint = "queue-then-main"
	return w
}

// MinResources sets the koord-queue/min-resources annotation.
func (w *WorkflowWrapper) MinResources(v string) *WorkflowWrapper {
	setAnnotation(&w.ObjectMeta, schedulingv1alpha1.AnnotationMinResources, v)
	return w
}

// Quota labels the workflow with a quota.
func (w *WorkflowWrapper) Quota(q string) *WorkflowWrapper { quotaLabel(&w.ObjectMeta, q); return w }

// Suspend sets spec.suspend.
func (w *WorkflowWrapper) Suspend(s bool) *WorkflowWrapper {
	w.Spec.Suspend = ptr.To(s)
	return w
}

// PriorityClass sets spec.podPriorityClassName.
func (w *WorkflowWrapper) PriorityClass(name string) *WorkflowWrapper {
	w.Spec.PodPriorityClassName = name
	return w
}

// Node adds a node to the status, as Argo's controller would.
func (w *WorkflowWrapper) Node(id string, typ wfv1.NodeType, template string, phase wfv1.NodePhase) *WorkflowWrapper {
	if w.Status.Nodes == nil {
		w.Status.Nodes = wfv1.Nodes{}
	}
	w.Status.Nodes[id] = wfv1.NodeStatus{ID: id, Name: id, Type: typ, TemplateName: template, Phase: phase}
	return w
}

// Phase sets the workflow's phase.
func (w *WorkflowWrapper) Phase(p wfv1.WorkflowPhase) *WorkflowWrapper { w.Status.Phase = p; return w }

// Obj returns the workflow.
func (w *WorkflowWrapper) Obj() *wfv1.Workflow { return &w.Workflow }
