// Package argo queues Argo Workflows (argoproj.io/v1alpha1). A workflow is
// the queue's when it has a template named koord-queue-suspend with a
// suspend field; it waits with spec.suspend set or with that template's
// suspend node running. It is released the way `argo resume` does it:
// spec.suspend is cleared and the running koord-queue-suspend nodes are
// marked Succeeded, so the workflow goes on past them. Its request is the
// koord-queue/min-resources annotation, a YAML or JSON ResourceList, as one
// pod set "main" of one pod.
package argo

import (
	"fmt"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// ReasonMissingMinResources is the Warning event of a queued workflow
// without the koord-queue/min-resources annotation.
const ReasonMissingMinResources = "MissingMinResources"

// resumedMessage is the message of a suspend node the queue completed.
const resumedMessage = "Resumed by koord-queue: the workflow's QueueUnit was admitted"

// Integration is the Argo Workflow extension, enabled by the name
// "workflow". A workflow's unit has the workflow's own name.
func Integration() framework.Integration {
	return framework.Integration{
		Name:        "workflow",
		GVK:         wfv1.SchemeGroupVersion.WithKind("Workflow"),
		NewJob:      func() framework.GenericJob { return &Workflow{} },
		AddToScheme: wfv1.AddToScheme,
		// A resource template with setOwnerReference makes any object,
		// controlled by the Workflow, once the Workflow runs past its
		// koord-queue-suspend step.
		Makes: func(schema.GroupKind) bool { return true },
	}
}

// Workflow is an Argo Workflow as the queue sees it.
type Workflow wfv1.Workflow

var (
	_ framework.GenericJob            = (*Workflow)(nil)
	_ framework.JobWithManagedCheck   = (*Workflow)(nil)
	_ framework.JobWithPriority       = (*Workflow)(nil)
	_ framework.JobWithWarnings       = (*Workflow)(nil)
	_ framework.JobWithMadeUpAffinity = (*Workflow)(nil)
)

// Object is the Workflow.
func (w *Workflow) Object() client.Object { return (*wfv1.Workflow)(w) }

// IsManaged reports whether the workflow has the koord-queue-suspend
// template, in its spec or among its stored templates.
func (w *Workflow) IsManaged() bool {
	for _, t := range w.Spec.Templates {
		if isQueueTemplate(&t) {
			return true
		}
	}
	for _, t := range w.Status.StoredTemplates {
		if isQueueTemplate(&t) {
			return true
		}
	}
	return false
}

func isQueueTemplate(t *wfv1.Template) bool {
	return t.Name == schedulingv1alpha1.ArgoSuspendTemplate && t.Suspend != nil
}

// IsSuspended reports spec.suspend or a running koord-queue-suspend node.
func (w *Workflow) IsSuspended() bool {
	if ptr.Deref(w.Spec.Suspend, false) {
		return true
	}
	for _, n := range w.Status.Nodes {
		if isQueueNode(&n) {
			return true
		}
	}
	return false
}

// isQueueNode reports whether n is a running suspend node of the
// koord-queue-suspend template.
func isQueueNode(n *wfv1.NodeStatus) bool {
	if !n.IsActiveSuspendNode() {
		return false
	}
	if n.TemplateRef != nil {
		return n.TemplateRef.Template == schedulingv1alpha1.ArgoSuspendTemplate
	}
	return n.TemplateName == schedulingv1alpha1.ArgoSuspendTemplate
}

// Suspend sets spec.suspend: Argo starts no further step. Pods already
// running run on; Argo has no way to stop them and keep the workflow.
func (w *Workflow) Suspend() { w.Spec.Suspend = ptr.To(true) }

// Resume clears spec.suspend and completes the running koord-queue-suspend
// nodes, as `argo resume` does.
func (w *Workflow) Resume() {
	w.Spec.Suspend = nil
	now := metav1.Now()
	for id, n := range w.Status.Nodes {
		if !isQueueNode(&n) {
			continue
		}
		n.Phase = wfv1.NodeSucceeded
		n.Message = resumedMessage
		n.FinishedAt = now
		w.Status.Nodes[id] = n
	}
}

// PodSets is one pod set "main" of one pod requesting the workflow's
// koord-queue/min-resources. The template is made up: the queue's pod set
// updates do not reach a workflow's pods; its node pool's affinity does
// (EditAffinities).
func (w *Workflow) PodSets() ([]framework.PodSet, error) {
	request, err := w.minResources()
	if err != nil {
		return nil, err
	}
	return []framework.PodSet{framework.MadeUpPodSet(schedulingv1alpha1.DefaultPodSetName, 1, "workflow", request)}, nil
}

// EditAffinities edits the affinities the workflow's pods take theirs
// from, as Argo's controller gives a pod its affinity (its
// addSchedulingConstraints): its template's, else its boundary template's
// (a steps or DAG template of the workflow's), else spec.affinity. So
// spec.affinity (used by every pod whose templates have none, the agent
// pod of HTTP and plugin templates too) and each template's that is set are
// edited; a template without one is left without. What can still give a
// pod another affinity is reported: a podSpecPatch (of the workflow or a
// template) that may set it, and templates of WorkflowTemplates
// (spec.workflowTemplateRef, a templateRef), which keep their own.
func (w *Workflow) EditAffinities(podSet string, edit func(string, *corev1.Affinity) *corev1.Affinity) (overridden []string) {
	if podSet != schedulingv1alpha1.DefaultPodSetName {
		return nil
	}
	w.Spec.Affinity = edit("spec.affinity", w.Spec.Affinity)
	for i := range w.Spec.Templates {
		if t := &w.Spec.Templates[i]; t.Affinity != nil {
			t.Affinity = edit("spec.templates["+t.Name+"].affinity", t.Affinity)
		}
	}
	if patchMaySetAffinity(w.Spec.PodSpecPatch) {
		overridden = append(overridden, "spec.podSpecPatch")
	}
	if w.Spec.WorkflowTemplateRef != nil {
		overridden = append(overridden, "spec.workflowTemplateRef")
	}
	if hooksReferTemplates(w.Spec.Hooks) {
		overridden = append(overridden, "spec.hooks (a templateRef)")
	}
	for _, t := range w.Spec.Templates {
		if patchMaySetAffinity(t.PodSpecPatch) {
			overridden = append(overridden, "spec.templates["+t.Name+"].podSpecPatch")
		}
		if refersTemplates(&t) {
			overridden = append(overridden, "spec.templates["+t.Name+"] (a templateRef)")
		}
	}
	return overridden
}

// patchMaySetAffinity reports whether an Argo podSpecPatch may change a
// pod's affinity: a strategic merge patch of the pod spec, in YAML or JSON,
// whose top level names affinity (in any case: Go reads a pod spec's keys
// so) or a patch directive ($patch: replace drops what it does not name),
// or that cannot be read until Argo substitutes its parameters ({{...}}).
func patchMaySetAffinity(patch string) bool {
	if strings.TrimSpace(patch) == "" {
		return false
	}
	if strings.Contains(patch, "{{") {
		return true
	}
	var top map[string]any
	if err := yaml.Unmarshal([]byte(patch), &top); err != nil {
		return true // Argo fails the pod: nothing runs, but say so
	}
	for k := range top {
		if strings.EqualFold(k, "affinity") || strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

// refersTemplates reports whether a steps or DAG template runs a template
// of a WorkflowTemplate (a templateRef), in a step, a task or a hook.
func refersTemplates(t *wfv1.Template) bool {
	for _, group := range t.Steps {
		for _, s := range group.Steps {
			if s.TemplateRef != nil || hooksReferTemplates(s.Hooks) {
				return true
			}
		}
	}
	if t.DAG != nil {
		for _, task := range t.DAG.Tasks {
			if task.TemplateRef != nil || hooksReferTemplates(task.Hooks) {
				return true
			}
		}
	}
	return false
}

func hooksReferTemplates(hooks wfv1.LifecycleHooks) bool {
	for _, h := range hooks {
		if h.TemplateRef != nil {
			return true
		}
	}
	return false
}

// minResources parses the koord-queue/min-resources annotation; a missing
// annotation is an empty request.
func (w *Workflow) minResources() (corev1.ResourceList, error) {
	raw, ok := w.Annotations[schedulingv1alpha1.AnnotationMinResources]
	if !ok {
		return nil, nil
	}
	var request corev1.ResourceList
	if err := yaml.UnmarshalStrict([]byte(raw), &request); err != nil {
		return nil, fmt.Errorf("annotation %s is not a ResourceList such as \"cpu: 4\": %w", schedulingv1alpha1.AnnotationMinResources, err)
	}
	for name, q := range request {
		if q.Sign() < 0 {
			return nil, fmt.Errorf("annotation %s: %s is negative", schedulingv1alpha1.AnnotationMinResources, name)
		}
	}
	if len(request) == 0 && strings.TrimSpace(raw) != "" && strings.TrimSpace(raw) != "{}" {
		return nil, fmt.Errorf("annotation %s is not a ResourceList such as \"cpu: 4\"", schedulingv1alpha1.AnnotationMinResources)
	}
	return request, nil
}

// Warnings warns of a missing koord-queue/min-resources annotation.
func (w *Workflow) Warnings() []framework.Warning {
	if _, ok := w.Annotations[schedulingv1alpha1.AnnotationMinResources]; ok {
		return nil
	}
	return []framework.Warning{{
		Reason: ReasonMissingMinResources,
		Message: fmt.Sprintf("The workflow has no %s annotation, so it is queued as asking for nothing; set it to the workflow's request, such as \"cpu: 4\"",
			schedulingv1alpha1.AnnotationMinResources),
	}}
}

// PriorityClass is spec.podPriorityClassName. (spec.priority, an integer
// the workflow's author chooses, gives no priority.)
func (w *Workflow) PriorityClass() (name, field string) {
	return w.Spec.PodPriorityClassName, "spec.podPriorityClassName"
}

// Finished reports a Succeeded, Failed or Error phase.
func (w *Workflow) Finished() (string, bool, bool) {
	switch w.Status.Phase {
	case wfv1.WorkflowSucceeded:
		return w.Status.Message, true, true
	case wfv1.WorkflowFailed, wfv1.WorkflowError:
		return w.Status.Message, false, true
	}
	return "", false, false
}

// Pods counts the workflow's pod nodes that run and that wait.
func (w *Workflow) Pods() map[string]framework.PodCount {
	var c framework.PodCount
	for _, n := range w.Status.Nodes {
		if n.Type != wfv1.NodeTypePod {
			continue
		}
		switch n.Phase {
		case wfv1.NodeRunning:
			c.Running++
		case wfv1.NodePending:
			c.Pending++
		}
	}
	return map[string]framework.PodCount{schedulingv1alpha1.DefaultPodSetName: c}
}
