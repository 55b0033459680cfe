package chart

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework/frameworktest"
	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/pkg/extensions/kubeflow"
	"github.com/koord-queue/koord-queue/pkg/extensions/spark"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestRejectJobsSubmittedRunning applies the chart's ValidatingAdmissionPolicies
// (rejectJobsSubmittedRunning, every extension on) to the real API server and
// creates, for every kind, jobs that it must refuse and jobs it must let
// through.
func TestRejectJobsSubmittedRunning(t *testing.T) {
	ctx := context.Background()
	values := everything()
	values["rejectJobsSubmittedRunning"] = map[string]any{"enable": true}
	objs, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, o := range objs {
		if o.GetKind() != "ValidatingAdmissionPolicy" && o.GetKind() != "ValidatingAdmissionPolicyBinding" || !strings.HasPrefix(o.GetName(), "koord-queue-reject-running-") {
			continue
		}
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
		applied++
	}
	if want := 2 * len(integrations.All()); applied != want {
		t.Fatalf("%d policies and bindings rendered, want %d (one of each per kind)", applied, want)
	}
	if err := integrations.AddToScheme(env.Scheme, integrations.All()); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "reject-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	labelled := map[string]func() client.Object{
		"job": func() client.Object {
			return extensionstest.MakeJob("j", ns.Name).Quota("team-a").Request("cpu", "1").Obj()
		},
		"tfjob": func() client.Object {
			return extensionstest.MakeTFJob("j", ns.Name).Quota("team-a").Replica("Worker", 1, "cpu", "1").Obj()
		},
		"pytorchjob": func() client.Object {
			return extensionstest.MakePyTorchJob("j", ns.Name).Quota("team-a").Replica("Master", 1, "cpu", "1").Obj()
		},
		"mpijob": func() client.Object {
			return extensionstest.MakeMPIJob("j", ns.Name).Quota("team-a").Replica("Launcher", 1, "cpu", "1").Obj()
		},
		"workflow": func() client.Object {
			return extensionstest.MakeWorkflow("j", ns.Name).Quota("team-a").MinResources("cpu: 1").Suspend(true).Obj()
		},
		"rayjob": func() client.Object {
			return extensionstest.MakeRayJob("j", ns.Name, extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota("team-a").Obj()
		},
		"raycluster": func() client.Object {
			return extensionstest.MakeRayCluster("j", ns.Name, extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota("team-a").Obj()
		},
		"sparkapplication": func() client.Object {
			return extensionstest.MakeSparkApplication("j", ns.Name).Quota("team-a").Obj()
		},
	}
	// The policies take effect once the API server has read them, and it
	// reads them as they come: waiting for one kind's policy to be in force
	// says nothing about the others (CI once saw the Job's refused and every
	// other kind let in), so wait for each kind's.
	mustRefuse := func(integ framework.Integration) client.Object {
		if integ.Name == "workflow" {
			return labelled[integ.Name]() // no koord-queue-suspend template
		}
		return frameworktest.SubmittedRunning(t, integ, labelled[integ.Name]()).Object()
	}
	testenv.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		for _, integ := range integrations.All() {
			if labelled[integ.Name] == nil {
				continue // reported by the subtests below
			}
			if err := dryRun(c, mustRefuse(integ)); err == nil {
				return fmt.Errorf("a labelled %s created running was let in: its policy is not in force yet", integ.GVK.Kind)
			}
		}
		return nil
	})

	for _, integ := range integrations.All() {
		newJob := labelled[integ.Name]
		if newJob == nil {
			t.Fatalf("no case for extension %s", integ.Name)
		}
		t.Run(integ.Name, func(t *testing.T) {
			suspended := newJob()
			if integ.Name == "workflow" {
				// A Workflow is queued by its koord-queue-suspend template,
				// which holds it wherever it is submitted.
				err := dryRun(c, suspended)
				if err == nil || !strings.Contains(err.Error(), "koord-queue-suspend") {
					t.Errorf("a labelled Workflow without the koord-queue-suspend template: %v, want refused, naming the template", err)
				}
				withTemplate := extensionstest.MakeWorkflow("j", ns.Name).Quota("team-a").QueueTemplate().MinResources("cpu: 1").Obj()
				if err := dryRun(c, withTemplate); err != nil {
					t.Errorf("a labelled Workflow with the template, submitted running: %v, want it let in", err)
				}
				return
			}
			if err := dryRun(c, suspended); err != nil {
				t.Errorf("submitted suspended: %v, want it let in", err)
			}
			err := dryRun(c, frameworktest.SubmittedRunning(t, integ, newJob()).Object())
			t.Logf("submitted running: %v", err)
			if err == nil || !strings.Contains(err.Error(), "names quota team-a but would start running before koord-queue admits it: submit it with") {
				t.Errorf("submitted running: %v, want refused with a message saying how to submit it", err)
			}

			unlabelled := frameworktest.SubmittedRunning(t, integ, newJob()).Object()
			unlabelled.SetLabels(nil)
			if err := dryRun(c, unlabelled); err != nil {
				t.Errorf("unlabelled, submitted running: %v, want it let in", err)
			}
			// The policy cannot read the owner: it lets in a job whose
			// controller is of a kind that makes jobs of its kind
			// (Integration.Makes; the webhook and the extension check that
			// owner), and refuses one naming any other kind.
			for _, maker := range integrations.All() {
				owner := metav1.OwnerReference{APIVersion: maker.GVK.GroupVersion().String(), Kind: maker.GVK.Kind, Name: "parent", UID: "uid", Controller: ptr.To(true)}
				want := maker.Makes != nil && maker.Makes(integ.GVK.GroupKind())
				child := frameworktest.SubmittedRunning(t, integ, newJob()).Object()
				child.SetOwnerReferences([]metav1.OwnerReference{owner})
				if err := dryRun(c, child); (err == nil) != want {
					t.Errorf("made by a %s, running: %v, want let in %v", maker.GVK.Kind, err, want)
				}
				owner.APIVersion = "example.com/v1"
				child.SetOwnerReferences([]metav1.OwnerReference{owner})
				if err := dryRun(c, child); err == nil {
					t.Errorf("made by an example.com/v1 %s, running: let in, want refused", maker.GVK.Kind)
				}
			}
		})
	}

	t.Run("Koord-Queue's suspend annotation counts as suspended for a SparkApplication", func(t *testing.T) {
		a := frameworktest.SubmittedRunning(t, spark.Integration(), labelled["sparkapplication"]()).Object()
		a.SetAnnotations(map[string]string{schedulingv1alpha1.AnnotationSuspend: "true"})
		if err := dryRun(c, a); err != nil {
			t.Errorf("a SparkApplication with %s: \"true\": %v, want it let in", schedulingv1alpha1.AnnotationSuspend, err)
		}
	})

	t.Run("Kubeflow's suspend annotation counts as suspended", func(t *testing.T) {
		j := frameworktest.SubmittedRunning(t, kubeflow.TFJobIntegration(), labelled["tfjob"]()).Object()
		j.SetAnnotations(map[string]string{schedulingv1alpha1.AnnotationSuspend: "true"})
		if err := dryRun(c, j); err != nil {
			t.Errorf("a TFJob with %s: \"true\": %v, want it let in", schedulingv1alpha1.AnnotationSuspend, err)
		}
	})
}

func dryRun(c client.Client, obj client.Object) error {
	return c.Create(context.Background(), obj, client.DryRunAll)
}

// TestRejectPolicyExemptsOnlyEnabledMakers: a policy lets in, for what made
// a job, only kinds the release queues: a maker the chart does not run has
// no unit to be admitted.
func TestRejectPolicyExemptsOnlyEnabledMakers(t *testing.T) {
	cases := map[string]struct {
		extension  map[string]any
		wantMakers string // in the Job policy's owner condition; empty: no such condition
	}{
		"Jobs alone: an owner reference earns nothing": {
			extension: map[string]any{"batchjob": map[string]any{"enable": true}},
		},
		"with Ray: a RayJob's submitter Job": {
			extension:  map[string]any{"batchjob": map[string]any{"enable": true}, "ray": map[string]any{"enable": true}},
			wantMakers: "[['ray.io/', 'RayJob']]",
		},
		"with Argo: a Workflow's resource": {
			extension:  map[string]any{"batchjob": map[string]any{"enable": true}, "argo": map[string]any{"enable": true}},
			wantMakers: "[['argoproj.io/', 'Workflow']]",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs, err := render(t, map[string]any{"extension": tc.extension, "rejectJobsSubmittedRunning": map[string]any{"enable": true}})
			if err != nil {
				t.Fatal(err)
			}
			p := find(objs, "ValidatingAdmissionPolicy", "koord-queue-reject-running-job")
			if p == nil {
				t.Fatal("no policy for Jobs")
			}
			conditions, _, _ := unstructured.NestedSlice(p.Object, "spec", "matchConditions")
			var got string
			for _, c := range conditions {
				if expr, _ := c.(map[string]any)["expression"].(string); strings.Contains(expr, "ownerReferences") {
					got = expr[strings.LastIndex(expr, "[[") : strings.Index(expr, "]]")+2]
				}
			}
			if got != tc.wantMakers {
				t.Errorf("makers let in %q, want %q", got, tc.wantMakers)
			}
		})
	}
}
