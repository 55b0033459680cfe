package argo

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

func TestWorkflow(t *testing.T) {
	cases := map[string]struct {
		wf            *wfv1.Workflow
		wantManaged   bool
		wantSuspended bool
		wantRequest   corev1.ResourceList
		wantErr       bool
		wantWarnings  int
		wantFinished  bool
		wantSucceeded bool
		wantPods      framework.PodCount
	}{
		"a workflow without the template is not the queue's": {
			wf:            extensionstest.MakeWorkflow("wf", "ns").Suspend(true).MinResources("cpu: 1").Obj(),
			wantSuspended: true,
			wantRequest:   qt.Res("cpu", "1"),
		},
		"the seed's workflow: YAML min-resources and spec.suspend": {
			wf:            extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().Suspend(true).MinResources("cpu: 5\nmemory: 5Gi\n").Obj(),
			wantManaged:   true,
			wantSuspended: true,
			wantRequest:   qt.Res("cpu", "5", "memory", "5Gi"),
		},
		"JSON min-resources": {
			wf:          extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().MinResources(`{"cpu": "500m"}`).Obj(),
			wantManaged: true,
			wantRequest: qt.Res("cpu", "500m"),
		},
		"waiting at its koord-queue-suspend node": {
			wf: extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().MinResources("cpu: 1").
				Node("wf-1", wfv1.NodeTypeSuspend, schedulingv1alpha1.ArgoSuspendTemplate, wfv1.NodeRunning).Obj(),
			wantManaged:   true,
			wantSuspended: true,
			wantRequest:   qt.Res("cpu", "1"),
		},
		"a suspend node of the user's own is not the queue's": {
			wf: extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().MinResources("cpu: 1").
				Node("wf-1", wfv1.NodeTypeSuspend, "approve", wfv1.NodeRunning).Obj(),
			wantManaged: true,
			wantRequest: qt.Res("cpu", "1"),
		},
		"a missing annotation is a warning, and no request": {
			wf:           extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().Obj(),
			wantManaged:  true,
			wantWarnings: 1,
		},
		"a malformed annotation is an error": {
			wf:          extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().MinResources("cpu: lots").Obj(),
			wantManaged: true,
			wantErr:     true,
		},
		"an annotation that is not a map is an error": {
			wf:          extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().MinResources("4 cpus").Obj(),
			wantManaged: true,
			wantErr:     true,
		},
		"a negative request is an error": {
			wf:          extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().MinResources("cpu: -1").Obj(),
			wantManaged: true,
			wantErr:     true,
		},
		"a running workflow counts its pod nodes": {
			wf: extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().MinResources("cpu: 1").Phase(wfv1.WorkflowRunning).
				Node("a", wfv1.NodeTypePod, "main", wfv1.NodeRunning).
				Node("b", wfv1.NodeTypePod, "main", wfv1.NodePending).
				Node("c", wfv1.NodeTypeSteps, "main", wfv1.NodeRunning).Obj(),
			wantManaged: true,
			wantRequest: qt.Res("cpu", "1"),
			wantPods:    framework.PodCount{Running: 1, Pending: 1},
		},
		"an Error phase is a failure": {
			wf:           extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().MinResources("cpu: 1").Phase(wfv1.WorkflowError).Obj(),
			wantManaged:  true,
			wantRequest:  qt.Res("cpu", "1"),
			wantFinished: true,
		},
		"a Succeeded phase": {
			wf:            extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().MinResources("cpu: 1").Phase(wfv1.WorkflowSucceeded).Obj(),
			wantManaged:   true,
			wantRequest:   qt.Res("cpu", "1"),
			wantFinished:  true,
			wantSucceeded: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := (*Workflow)(tc.wf)
			if got := w.IsManaged(); got != tc.wantManaged {
				t.Errorf("IsManaged = %v, want %v", got, tc.wantManaged)
			}
			if got := w.IsSuspended(); got != tc.wantSuspended {
				t.Errorf("IsSuspended = %v, want %v", got, tc.wantSuspended)
			}
			sets, err := w.PodSets()
			if (err != nil) != tc.wantErr {
				t.Fatalf("PodSets error = %v, want one: %v", err, tc.wantErr)
			}
			if err == nil {
				if len(sets) != 1 || sets[0].Name != "main" || sets[0].Count != 1 {
					t.Fatalf("PodSets = %+v, want one pod set main of one pod", sets)
				}
				got := resources.PodRequests(&sets[0].Template.Spec)
				if diff := cmp.Diff(tc.wantRequest, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("request (-want +got):\n%s", diff)
				}
			}
			if got := len(w.Warnings()); got != tc.wantWarnings {
				t.Errorf("%d warnings, want %d", got, tc.wantWarnings)
			}
			_, ok, finished := w.Finished()
			if finished != tc.wantFinished || ok != tc.wantSucceeded {
				t.Errorf("Finished = (%v, %v), want (%v, %v)", ok, finished, tc.wantSucceeded, tc.wantFinished)
			}
			if diff := cmp.Diff(tc.wantPods, w.Pods()["main"]); diff != "" {
				t.Errorf("Pods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResumeCompletesTheQueueSuspendNodeOnly(t *testing.T) {
	w := (*Workflow)(extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().Suspend(true).
		Node("queue", wfv1.NodeTypeSuspend, schedulingv1alpha1.ArgoSuspendTemplate, wfv1.NodeRunning).
		Node("approve", wfv1.NodeTypeSuspend, "approve", wfv1.NodeRunning).Obj())
	w.Resume()
	if w.Spec.Suspend != nil {
		t.Errorf("spec.suspend = %v, want unset", *w.Spec.Suspend)
	}
	if got := w.Status.Nodes["queue"]; got.Phase != wfv1.NodeSucceeded || got.FinishedAt.IsZero() || got.Message == "" {
		t.Errorf("the koord-queue-suspend node = %+v, want Succeeded with a finish time and a message", got)
	}
	if got := w.Status.Nodes["approve"].Phase; got != wfv1.NodeRunning {
		t.Errorf("the user's suspend node is %s, want it left Running", got)
	}
	if w.IsSuspended() {
		t.Errorf("the workflow is still suspended after Resume")
	}
	w.Suspend()
	if !w.IsSuspended() {
		t.Errorf("Suspend left the workflow running")
	}
}

// TestEditAffinities: the placement reaches spec.affinity and every
// template's own affinity, which Argo puts on a pod instead of
// spec.affinity; what can still give a pod another affinity is reported.
func TestEditAffinities(t *testing.T) {
	placed := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	own := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
	withTemplate := func(tmpl wfv1.Template) *wfv1.Workflow {
		w := extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().Obj()
		w.Spec.Templates = append(w.Spec.Templates, tmpl)
		return w
	}
	patched := func(patch string) *wfv1.Workflow {
		w := extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().Obj()
		w.Spec.Templates[0].PodSpecPatch = patch
		return w
	}
	refStep := wfv1.Template{Name: "steps", Steps: []wfv1.ParallelSteps{{Steps: []wfv1.WorkflowStep{
		{Name: "s", TemplateRef: &wfv1.TemplateRef{Name: "shared", Template: "train"}}}}}}
	refTask := wfv1.Template{Name: "dag", DAG: &wfv1.DAGTemplate{Tasks: []wfv1.DAGTask{
		{Name: "t", Template: "main", Hooks: wfv1.LifecycleHooks{wfv1.ExitLifecycleEvent: {TemplateRef: &wfv1.TemplateRef{Name: "shared", Template: "notify"}}}}}}}
	cases := map[string]struct {
		wf             *wfv1.Workflow
		wantPaths      []string
		wantOverridden []string
	}{
		"spec.affinity, whether set or not": {
			wf:        extensionstest.MakeWorkflow("wf", "ns").QueueTemplate().Obj(),
			wantPaths: []string{"spec.affinity"},
		},
		"a template's own affinity too": {
			wf:        withTemplate(wfv1.Template{Name: "pinned", Affinity: own.DeepCopy()}),
			wantPaths: []string{"spec.affinity", "spec.templates[pinned].affinity"},
		},
		"a podSpecPatch setting affinity is reported": {
			wf:             patched(`{"affinity": {"nodeAffinity": null}}`),
			wantPaths:      []string{"spec.affinity"},
			wantOverridden: []string{"spec.templates[main].podSpecPatch"},
		},
		"in YAML, in any case": {
			wf:             patched("Affinity:\n  nodeAffinity: {}\n"),
			wantPaths:      []string{"spec.affinity"},
			wantOverridden: []string{"spec.templates[main].podSpecPatch"},
		},
		"a patch directive is reported": {
			wf:             patched(`{"$patch": "replace", "containers": [{"name": "main"}]}`),
			wantPaths:      []string{"spec.affinity"},
			wantOverridden: []string{"spec.templates[main].podSpecPatch"},
		},
		"a patch read only once its parameters are substituted is reported": {
			wf:             patched(`{{workflow.parameters.patch}}`),
			wantPaths:      []string{"spec.affinity"},
			wantOverridden: []string{"spec.templates[main].podSpecPatch"},
		},
		"a patch of resources only is not": {
			wf:        patched(`{"containers": [{"name": "main", "resources": {"limits": {"cpu": "1"}}}]}`),
			wantPaths: []string{"spec.affinity"},
		},
		"a workflow of a WorkflowTemplate is reported": {
			wf: func() *wfv1.Workflow {
				w := extensionstest.MakeWorkflow("wf", "ns").Obj()
				w.Spec.WorkflowTemplateRef = &wfv1.WorkflowTemplateRef{Name: "shared"}
				w.Spec.PodSpecPatch = "affinity: {}"
				return w
			}(),
			wantPaths:      []string{"spec.affinity"},
			wantOverridden: []string{"spec.podSpecPatch", "spec.workflowTemplateRef"},
		},
		"steps and tasks of WorkflowTemplates are reported": {
			wf: func() *wfv1.Workflow {
				w := withTemplate(refStep)
				w.Spec.Templates = append(w.Spec.Templates, refTask)
				return w
			}(),
			wantPaths:      []string{"spec.affinity"},
			wantOverridden: []string{"spec.templates[steps] (a templateRef)", "spec.templates[dag] (a templateRef)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := (*Workflow)(tc.wf)
			var paths []string
			overridden := w.EditAffinities("main", func(path string, _ *corev1.Affinity) *corev1.Affinity {
				paths = append(paths, path)
				return placed
			})
			if diff := cmp.Diff(tc.wantPaths, paths); diff != "" {
				t.Errorf("paths edited (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantOverridden, overridden); diff != "" {
				t.Errorf("overridden (-want +got):\n%s", diff)
			}
			if w.Spec.Affinity != placed {
				t.Errorf("spec.affinity = %v, want the edit's", w.Spec.Affinity)
			}
			for _, tmpl := range w.Spec.Templates {
				if tmpl.Affinity != nil && tmpl.Affinity != placed {
					t.Errorf("template %s's affinity = %v, want the edit's", tmpl.Name, tmpl.Affinity)
				}
			}
			if got := w.EditAffinities("other", func(path string, a *corev1.Affinity) *corev1.Affinity {
				t.Errorf("edited %s for another pod set", path)
				return a
			}); got != nil {
				t.Errorf("overridden for another pod set: %v", got)
			}
		})
	}
}
