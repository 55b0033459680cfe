// Package webhook is the mutating webhook that suspends, as it is created,
// a job the queue manages but that was submitted running, so that none of its
// pods starts before its QueueUnit is admitted. The job reconciler suspends
// such jobs too (the backstop while the webhook is off or down), but only
// after the framework's controller may have started pods. It serves one path
// per enabled kind.
//
// Its pod path (PodPath) creates a pod of a queued job that the job's unit's
// admission does not cover with koord-queue's scheduling gate
// (framework.PodGate), which the job's reconciler removes once the
// admission covers the pod: a job un-suspended by an update, or created
// running while the job webhook was down, makes pods that wait gated,
// holding nothing. It refuses a bare pod that names a quota.
//
// Its TLS certificate is made, rotated and its CA written into the
// MutatingWebhookConfiguration by the controller itself, with
// open-policy-agent/cert-controller. The configuration should use
// failurePolicy Ignore and a short timeout (docs/concepts/admission.md shows one), so
// that the API server never waits on the webhook for long: a job created
// while the webhook is down runs until the job's reconciler, the backstop,
// suspends it and queues it.
package webhook

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// Path is where the webhook of integ's kind is served, in kubebuilder's
// form: /mutate-<group with dashes>-<version>-<kind in lower case>.
func Path(integ framework.Integration) string {
	gvk := integ.GVK
	return fmt.Sprintf("/mutate-%s-%s-%s", strings.ReplaceAll(gvk.Group, ".", "-"), gvk.Version, strings.ToLower(gvk.Kind))
}

// suspender suspends the managed jobs of one kind that are created running.
type suspender struct {
	integ   framework.Integration
	scope   framework.Scope
	reader  client.Reader
	decoder admission.Decoder
}

var _ admission.Handler = (*suspender)(nil)

// Handle answers one admission request.
func (s *suspender) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	job := s.integ.NewJob()
	obj := job.Object()
	if err := s.decoder.Decode(req, obj); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding %s: %w", s.integ.GVK.Kind, err))
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(req.Namespace)
	}
	if job.IsSuspended() {
		return admission.Allowed("")
	}
	if _, _, finished := job.Finished(); finished {
		return admission.Allowed("")
	}
	log := logf.FromContext(ctx).WithValues("kind", s.integ.GVK.Kind, "namespace", req.Namespace, "name", obj.GetName())
	verdict, err := s.scope.Judge(ctx, s.reader, s.integ.GVK.GroupKind(), job)
	if err != nil {
		// Never stall the API server: let the job in, and say why.
		log.Error(err, "Cannot tell whether the queue manages the job; letting it in running")
		return admission.Allowed("").WithWarnings("koord-queue could not tell whether it manages this job, so the job was not suspended: " + err.Error())
	}
	if !verdict.EvenIfRunning {
		// Not the queue's, or --leave-jobs-submitted-running.
		return admission.Allowed("")
	}
	orig := obj.DeepCopyObject().(client.Object)
	job.Suspend()
	// Patch the request's own JSON with only what Suspend changed, so that
	// fields the Go types do not know are kept.
	change, err := client.MergeFrom(orig).Data(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	suspended, err := jsonpatch.MergePatch(req.Object.Raw, change)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("suspending: %w", err))
	}
	log.V(2).Info("Suspending a job created running so that it waits for its QueueUnit")
	return admission.PatchResponseFromRaw(req.Object.Raw, suspended).
		WithWarnings("koord-queue suspended this job: it waits in the queue until its QueueUnit is admitted")
}
