package testenv

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/webhook"
)

// WebhookConfig is the MutatingWebhookConfiguration docs/concepts/admission.md
// describes, for integs, with the webhook called by URL at baseURL (a test's
// API server cannot reach a Service): CREATE only, failurePolicy Ignore, a
// 5 s timeout, for the namespaces selector selects. caPEM may be empty when
// the certificate rotator writes the CA in.
func WebhookConfig(name string, integs []framework.Integration, mapper meta.RESTMapper, baseURL string, caPEM []byte, selector *metav1.LabelSelector) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	config := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, integ := range integs {
		mapping, err := mapper.RESTMapping(integ.GVK.GroupKind(), integ.GVK.Version)
		if err != nil {
			return nil, fmt.Errorf("mapping %s: %w", integ.GVK, err)
		}
		url := baseURL + webhook.Path(integ)
		config.Webhooks = append(config.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name:         integ.Name + ".koord-queue.x-k8s.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{integ.GVK.Group},
					APIVersions: []string{integ.GVK.Version},
					Resources:   []string{mapping.Resource.Resource},
				},
			}},
			NamespaceSelector:       selector,
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](5),
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	return config, nil
}

// PodWebhook is the pod webhook docs/concepts/pod-ledger.md describes (the pod
// gate), called by URL at baseURL, for the namespaces selector selects:
// CREATE of pods, failurePolicy Ignore, a 5 s timeout. caPEM may be empty
// when the certificate rotator writes the CA in.
func PodWebhook(baseURL string, caPEM []byte, selector *metav1.LabelSelector) admissionregistrationv1.MutatingWebhook {
	url := baseURL + webhook.PodPath
	return admissionregistrationv1.MutatingWebhook{
		Name:         "pods.koord-queue.x-k8s.io",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
		NamespaceSelector:       selector,
		FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](5),
		AdmissionReviewVersions: []string{"v1"},
	}
}
