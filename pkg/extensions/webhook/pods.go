package webhook

import (
	"context"
	"fmt"
	"net/http"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// PodPath is where the pod webhook is served, in kubebuilder's form for
// the core group.
const PodPath = "/mutate--v1-pod"

// podGater creates the pods of queued jobs that their unit's admission
// does not cover with koord-queue's scheduling gate (framework.PodGate).
type podGater struct {
	gate    *framework.PodGate
	decoder admission.Decoder
}

var _ admission.Handler = (*podGater)(nil)

// Handle answers one admission request for a pod.
func (g *podGater) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	pod := &corev1.Pod{}
	if err := g.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the pod: %w", err))
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	log := logf.FromContext(ctx).WithValues("namespace", pod.Namespace, "pod", pod.Name, "generateName", pod.GenerateName)
	verdict, err := g.gate.Decide(ctx, pod)
	switch {
	case err != nil:
		// Never stall the API server; koord-queue still charges what the
		// pod holds.
		log.Error(err, "Cannot tell whether a queued job's admission covers the pod; letting it in ungated")
		return admission.Allowed("").WithWarnings("koord-queue could not tell whether this pod's job is admitted, so the pod was not held: " + err.Error())
	case verdict.Refuse != "":
		log.V(2).Info("Refusing a pod", "why", verdict.Refuse)
		return admission.Denied(verdict.Refuse)
	case !verdict.Gate:
		return admission.Allowed("")
	}
	log.V(2).Info("Holding a pod at koord-queue's scheduling gate", "why", verdict.Why)
	gate := corev1.PodSchedulingGate{Name: schedulingv1alpha1.SchedulingGateAdmission}
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == gate.Name {
			return admission.Allowed("")
		}
	}
	op := jsonpatch.Operation{Operation: "add", Path: "/spec/schedulingGates/-", Value: gate}
	if len(pod.Spec.SchedulingGates) == 0 {
		op = jsonpatch.Operation{Operation: "add", Path: "/spec/schedulingGates", Value: []corev1.PodSchedulingGate{gate}}
	}
	return admission.Patched("", op)
}
