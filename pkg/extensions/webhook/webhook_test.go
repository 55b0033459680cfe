package webhook

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/koord-queue/koord-queue/apis"
	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/job"
)

func TestSuspender(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, framework.IndexQuotaNamespaces, framework.QuotaNamespacesIndex).Build()
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
