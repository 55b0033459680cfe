package extensions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/pkg/extensions/webhook"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

const (
	// highPriority is the value of the PriorityClass "high".
	highPriority = 1000
	// webhookConfigName is the MutatingWebhookConfiguration the certificate
	// rotator writes its CA into.
	webhookConfigName = "koord-queue-controllers"
	// webhookOffLabel on a namespace keeps the webhook away from its jobs,
	// so that the reconciler alone meets jobs submitted running there.
	webhookOffLabel = "koord-queue.test/webhook-off"
	// podGateLabel on a namespace has the API server call the pod webhook
	// for the pods created there (newNamespaceWithPodGate); elsewhere the
	// tests' pods, made as the frameworks' controllers would make them, are
	// created as they are.
	podGateLabel = "koord-queue.test/pod-gate"
)

var webhookSecret = types.NamespacedName{Namespace: schedulingv1alpha1.QueueNamespace, Name: "koord-queue-controllers-webhook-cert"}

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
	ports, err := cluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	certDir, err := os.MkdirTemp("", "koord-queue-webhook-certs-")
	if err != nil {
		return nil, err
	}
	if err := createFixtures(ctx, port); err != nil {
		return nil, err
	}

	// The manager's writes are counted (managerWrites).
	mgrConfig := rest.CopyConfig(env.Config)
	mgrConfig.WrapTransport = managerWrites.wrap
	// Everything as cmd/extensions caches it.
	cacheOpts, err := framework.CacheOptions(mgrConfig)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(mgrConfig, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
		Cache:                  cacheOpts,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	scope, err := integrations.Scope(all, false, false)
	if err != nil {
		return nil, err
	}
	slots := framework.NewSlotExpectations(clock.RealClock{})
	if err := integrations.Setup(ctx, mgr, all, scope, framework.WithSlotExpectations(slots)); err != nil {
		return nil, err
	}
	err = webhook.Setup(mgr, webhook.Options{
		CertDir: certDir, Rotate: true, Secret: webhookSecret, ConfigName: webhookConfigName, DNSName: "localhost",
		Slots: slots,
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
	config, err := testenv.WebhookConfig(webhookConfigName, integrations.All(), k8s.RESTMapper(), fmt.Sprintf("https://localhost:%d", port), nil,
		&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: webhookOffLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}})
	if err != nil {
		return err
	}
	config.Webhooks = append(config.Webhooks, testenv.PodWebhook(fmt.Sprintf("https://localhost:%d", port), nil,
		&metav1.LabelSelector{MatchLabels: map[string]string{podGateLabel: "on"}}))
	objs = append(objs, config)
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
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
