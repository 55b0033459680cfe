package webhook

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/koord-queue/koord-queue/apis"
	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
	"github.com/koord-queue/koord-queue/pkg/extensions/ray"
)

func TestSuspender(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// Two RayJobs: "admitted", whose unit runs, and "waiting", whose unit
	// waits in the queue.
	var owners []client.Object
	for name, phase := range map[string]schedulingv1alpha1.QueueUnitPhase{"admitted": schedulingv1alpha1.Running, "waiting": schedulingv1alpha1.Enqueued} {
		rj := extensionstest.MakeRayJob(name, "ns", extensionstest.MakeRayClusterSpec("cpu", "1").Obj()).Quota("team-a").Obj()
		rj.UID = types.UID(name + "-uid")
		u := &schedulingv1alpha1.QueueUnit{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-ray-qu", Namespace: "ns",
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rj, ray.RayJobIntegration().GVK)}},
			Status: schedulingv1alpha1.QueueUnitStatus{Phase: phase},
		}
		owners = append(owners, rj, u)
	}
	withOwners := framework.Scope{Owners: []framework.Integration{ray.RayJobIntegration()}}
	madeBy := func(owner string) string {
		return `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"ns","labels":{"` +
			elasticquotav1alpha1.LabelQuotaName + `":"team-a"},"ownerReferences":[{"apiVersion":"ray.io/v1","kind":"RayJob","name":"` +
			owner + `","uid":"` + owner + `-uid","controller":true}]},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox"}],"restartPolicy":"Never"}}}}`
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(owners...).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, framework.IndexQuotaNamespaces, framework.QuotaNamespacesIndex).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, framework.IndexQuotaName, framework.QuotaNameIndex).Build()
	labelledRunning := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"ns","labels":{"` +
		elasticquotav1alpha1.LabelQuotaName + `":"team-a"}},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox"}],"restartPolicy":"Never"}}}}`

	cases := map[string]struct {
		raw       string
		scope     framework.Scope
		operation admissionv1.Operation
		wantPatch []jsonpatch.Operation
	}{
		"a labelled Job created running is suspended, and fields the Go types lack are kept": {
			raw: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"ns","labels":{"` +
				elasticquotav1alpha1.LabelQuotaName + `":"team-a"}},"spec":{"futureField":1,"template":{"spec":{"containers":[{"name":"c","image":"busybox"}],"restartPolicy":"Never"}}}}`,
			wantPatch: []jsonpatch.Operation{{Operation: "add", Path: "/spec/suspend", Value: true}},
		},
		"a labelled Job created suspended is left alone": {
			raw: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"ns","labels":{"` +
				elasticquotav1alpha1.LabelQuotaName + `":"team-a"}},"spec":{"suspend":true,"template":{"spec":{"containers":[{"name":"c","image":"busybox"}],"restartPolicy":"Never"}}}}`,
		},
		"an unlabelled Job is left alone": {
			raw: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"ns"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox"}],"restartPolicy":"Never"}}}}`,
		},
		"with --leave-jobs-submitted-running a labelled Job created running is left alone (Koord-Queue v1.8)": {
			raw:   labelledRunning,
			scope: framework.Scope{LeaveJobsSubmittedRunning: true},
		},
		"a labelled Job an admitted RayJob made is left to run within the RayJob's admission": {
			raw:   madeBy("admitted"),
			scope: withOwners,
		},
		"a labelled Job naming a RayJob that waits in the queue is suspended": {
			raw:       madeBy("waiting"),
			scope:     withOwners,
			wantPatch: []jsonpatch.Operation{{Operation: "add", Path: "/spec/suspend", Value: true}},
		},
		"a labelled Job naming a RayJob that does not exist is suspended": {
			raw:       madeBy("missing"),
			scope:     withOwners,
			wantPatch: []jsonpatch.Operation{{Operation: "add", Path: "/spec/suspend", Value: true}},
		},
		"an update is left alone": {
			raw: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"ns","labels":{"` +
				elasticquotav1alpha1.LabelQuotaName + `":"team-a"}},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox"}],"restartPolicy":"Never"}}}}`,
			operation: admissionv1.Update,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			op := tc.operation
			if op == "" {
				op = admissionv1.Create
			}
			s := &suspender{integ: job.Integration(), scope: tc.scope, reader: reader, decoder: admission.NewDecoder(scheme)}
			resp := s.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: op, Namespace: "ns", Object: runtime.RawExtension{Raw: []byte(tc.raw)},
			}})
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			if diff := cmp.Diff(tc.wantPatch, resp.Patches); diff != "" {
				patch, _ := json.Marshal(resp.Patches)
				t.Errorf("patch (-want +got):\n%s\n%s", diff, patch)
			}
		})
	}
}
