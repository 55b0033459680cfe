package extensions

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	schedv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/pkg/extensions/webhook"
)

const (
	// highPriority is the value of the PriorityClass "high".
	highPriority = 1000
	// webhookConfigName is the MutatingWebhookConfiguration the certificate
	// rotator writes its CA into.
	webhookConfigName = "koord-queue-controllers"
)

var webhookSecret = types.NamespacedName{Namespace: schedv1alpha1.QueueNamespace, Name: "koord-queue-controllers-webhook-cert"}

// startControllers starts a manager running every extension and the
// webhook, as in production: the rotator makes the certificate, writes it
// into the Secret and its CA into the webhook configuration, and the
// controller writes the certificate files the webhook server reads. It
// waits until the webhook answers. stop waits for the manager to end after
// ctx is cancelled.
func startControllers(ctx context.Context) (stop func(), err error) {
	all := integrations.All()
	if err := integrations.AddToScheme(env.Scheme, all); err != nil {
		return nil, err
	}
	// Tests poll; envtest's default of 5 queries a second would starve them.
	env.Config.QPS, env.Config.Burst = 1000, 2000
	if k8s, err = client.New(env.Config, client.Options{Scheme: env.Scheme}); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	certDir, err := os.MkdirTemp("", "koord-queue-webhook-certs-")
	if err != nil {
		return nil, err
	}
	if err := createFixtures(ctx, port); err != nil {
		return nil, err
	}

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	scope := integrations.Scope(false)
	if err := integrations.Setup(ctx, mgr, all, scope); err != nil {
		return nil, err
	}
	err = webhook.Setup(mgr, webhook.Options{
		CertDir: certDir, Rotate: true, Secret: webhookSecret, ConfigName: webhookConfigName, DNSName: "localhost",
	}, all, scope)
	if err != nil {
		return nil, err
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "extensions: manager: %v\n", err)
		}
	})
	stop = func() {
		wg.Wait()
		_ = os.RemoveAll(certDir)
	}
	if err := waitForWebhook(ctx); err != nil {
		return stop, err
	}
	return stop, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// createFixtures creates what the cluster has before the controllers start:
// the namespace of the webhook's Secret, the Secret (empty, as a Helm chart
// would create it), the MutatingWebhookConfiguration and the PriorityClass
// "high".
func createFixtures(ctx context.Context, port int) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: webhookSecret.Namespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: webhookSecret.Name, Namespace: webhookSecret.Namespace}},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: highPriority},
	}
	config, err := webhookConfig(port)
	if err != nil {
		return err
	}
	objs = append(objs, config)
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// webhookConfig is the configuration docs/extensions.md describes, with the
// webhook called by URL: envtest's API server cannot reach a Service.
func webhookConfig(port int) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	config := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookConfigName}}
	for _, integ := range integrations.All() {
		mapping, err := k8s.RESTMapper().RESTMapping(integ.GVK.GroupKind(), integ.GVK.Version)
		if err != nil {
			return nil, fmt.Errorf("mapping %s: %w", integ.GVK, err)
		}
		url := fmt.Sprintf("https://localhost:%d%s", port, webhook.Path(integ))
		config.Webhooks = append(config.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name:         integ.Name + ".koord-queue.x-k8s.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{integ.GVK.Group},
					APIVersions: []string{integ.GVK.Version},
					Resources:   []string{mapping.Resource.Resource},
				},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](5),
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	return config, nil
}

// waitForWebhook waits until the API server calls the webhook: a dry-run of a
// labelled Job created running comes back suspended.
func waitForWebhook(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		probe := extensionstest.MakeJob("webhook-probe", metav1.NamespaceDefault).Quota("probe").Suspend(false).Obj()
		if err := k8s.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, nil
		}
		return ptr.Deref(probe.Spec.Suspend, false), nil
	})
	if err != nil {
		var cfg admissionregistrationv1.MutatingWebhookConfiguration
		_ = k8s.Get(context.Background(), client.ObjectKey{Name: webhookConfigName}, &cfg)
		injected := len(cfg.Webhooks) > 0 && len(cfg.Webhooks[0].ClientConfig.CABundle) > 0
		return errors.Join(fmt.Errorf("the webhook never answered (CA injected: %v)", injected), err)
	}
	return nil
}
