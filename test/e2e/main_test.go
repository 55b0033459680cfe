// Package e2e runs koord-queue's end-to-end tests on a whole local cluster:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok fake
// nodes, so Jobs really create Pods that are scheduled, run and finish, with
// the koord-queue binary running against it as users run it. The Kubeflow
// training jobs are run by the real training-operator (kubeflow_test.go),
// RayClusters and RayJobs by KubeRay's ray-operator (ray_test.go), Argo
// Workflows by the real workflow-controller (argo_test.go).
package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/integrations"
	"github.com/koord-queue/koord-queue/pkg/visibility"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

var (
	localCluster *cluster.Cluster
	k8sClient    client.Client
	// koordQueue is the running koord-queue; visibilityURL its API, served
	// over HTTPS with the certificate in visibilityCertDir, which
	// visibilityHTTP trusts.
	koordQueue        *cluster.Process
	koordQueueBin     string
	visibilityURL     string
	visibilityCertDir string
	visibilityHTTP    *http.Client
	// visibilityToken is a bearer token of a ServiceAccount that may list
	// QueueUnits everywhere, for the visibility API.
	visibilityToken string
	// extensions is the running koord-queue-controllers.
	extensions    *cluster.Process
	extensionsBin string
)

// podRunTime is how long a Job's pod runs on the fake nodes unless its
// template says otherwise.
const podRunTime = 5 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{Nodes: 2, PodRunTime: podRunTime})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting local cluster: %v\n", err)
		if c != nil {
			fmt.Fprintln(os.Stderr, c.Logs(40))
		}
		return 1
	}
	localCluster = c
	code := 1
	if err := setUp(ctx, c); err != nil {
		fmt.Fprintf(os.Stderr, "setting up: %v\n", err)
	} else {
		code = m.Run()
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "tests failed; logs of every process kept in %s\n%s", c.LogDir(), c.Logs(30))
	}
	c.Stop(code != 0)
	return code
}

func setUp(ctx context.Context, c *cluster.Cluster) error {
	frameworkCRDs, err := testenv.FrameworkCRDDir()
	if err != nil {
		return err
	}
	if err := c.InstallCRDs(testenv.CRDDir(), frameworkCRDs); err != nil {
		return err
	}
	scheme, err := testenv.NewScheme()
	if err != nil {
		return err
	}
	if err := integrations.AddToScheme(scheme, integrations.All()); err != nil {
		return err
	}
	if k8sClient, err = client.New(c.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedulingv1alpha1.QueueNamespace}}
	if err := k8sClient.Create(ctx, ns); err != nil {
		return err
	}
	if visibilityToken, err = queueUnitReaderToken(ctx, c); err != nil {
		return err
	}
	if koordQueueBin, err = cluster.BuildBinary(ctx, "./cmd/queue", filepath.Join(c.Dir, "bin"), "koord-queue"); err != nil {
		return err
	}
	if koordQueue, err = startKoordQueue(); err != nil {
		return err
	}
	if extensionsBin, err = cluster.BuildBinary(ctx, "./cmd/extensions", filepath.Join(c.Dir, "bin"), "koord-queue-controllers"); err != nil {
		return err
	}
	// The webhook serves with a certificate made here (its rotation is
	// tested in test/integration/extensions) and is called by URL for the
	// namespaces labelled webhookOnLabel only (its pod path for those
	// labelled podGateLabel): elsewhere the reconciler alone meets jobs
	// submitted running.
	certDir := filepath.Join(c.Dir, "webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	caPEM, err := cluster.WriteServingCert(certDir)
	if err != nil {
		return err
	}
	ports, err := cluster.FreePorts(1)
	if err != nil {
		return err
	}
	config, err := testenv.WebhookConfig("koord-queue-controllers", integrations.All(), k8sClient.RESTMapper(), "https://"+cluster.Loopback(ports[0]), caPEM,
		&metav1.LabelSelector{MatchLabels: map[string]string{webhookOnLabel: "on"}})
	if err != nil {
		return err
	}
	config.Webhooks = append(config.Webhooks, testenv.PodWebhook("https://"+cluster.Loopback(ports[0]), caPEM,
		&metav1.LabelSelector{MatchLabels: map[string]string{podGateLabel: "on"}}))
	if err := k8sClient.Create(ctx, config); err != nil {
		return fmt.Errorf("creating the MutatingWebhookConfiguration: %w", err)
	}
	webhookArgs = []string{"--enable-webhook", "--webhook-cert-rotation=false", "--webhook-cert-dir=" + certDir, fmt.Sprintf("--webhook-port=%d", ports[0])}
	extensions, err = startExtensions()
	return err
}

// webhookArgs are koord-queue-controllers' webhook flags.
var webhookArgs []string

// startExtensions runs the koord-queue-controllers binary against the
// cluster with every extension and the webhook.
func startExtensions() (*cluster.Process, error) {
	endpoints, err := endpointFlags()
	if err != nil {
		return nil, err
	}
	extensionsStarts++
	args := append([]string{"--kubeconfig=" + localCluster.Kubeconfig, "--leader-elect=false",
		"--enabled-extensions=" + strings.Join(integrations.Names(), ",")}, endpoints...)
	return localCluster.StartProcess(fmt.Sprintf("koord-queue-controllers-%d", extensionsStarts), extensionsBin, append(args, webhookArgs...)...)
}

// endpointFlags put a binary's /metrics and probes on free loopback ports.
func endpointFlags() ([]string, error) {
	ports, err := cluster.FreePorts(2)
	if err != nil {
		return nil, err
	}
	return []string{"--metrics-bind-address=" + cluster.Loopback(ports[0]), "--health-probe-bind-address=" + cluster.Loopback(ports[1])}, nil
}

// extensionsStarts counts koord-queue-controllers starts, so each process
// logs to its own file.
var extensionsStarts int

// webhookOnLabel on a namespace has the API server call the extensions'
// webhook for the jobs created there.
const webhookOnLabel = "koord-queue.e2e/webhook"

// podGateLabel on a namespace has the API server call the extensions' pod
// webhook for the pods created there (the pod gate).
const podGateLabel = "koord-queue.e2e/pod-gate"

// startKoordQueue runs the koord-queue binary against the cluster, as a
// user would, with its visibility API on a free loopback port. No
// koord-manager runs here, so koord-queue computes the node pools' tree
// capacities itself (--compute-tree-capacity, for TestNodePoolsOnKwok):
// with no ElasticQuotaProfile, which only that test makes, nothing changes.
func startKoordQueue() (*cluster.Process, error) {
	if visibilityURL == "" {
		ports, err := cluster.FreePorts(1)
		if err != nil {
			return nil, err
		}
		visibilityURL = "https://" + cluster.Loopback(ports[0])
		visibilityCertDir = filepath.Join(localCluster.Dir, "visibility-certs")
		if err := os.MkdirAll(visibilityCertDir, 0o700); err != nil {
			return nil, err
		}
		caPEM, err := cluster.WriteServingCert(visibilityCertDir)
		if err != nil {
			return nil, err
		}
		if visibilityHTTP, err = visibility.HTTPClientTrusting(caPEM); err != nil {
			return nil, err
		}
	}
	endpoints, err := endpointFlags()
	if err != nil {
		return nil, err
	}
	restarts++
	return localCluster.StartProcess(fmt.Sprintf("koord-queue-%d", restarts), koordQueueBin, append([]string{
		"--kubeconfig=" + localCluster.Kubeconfig, "--leader-elect=false",
		"--visibility-bind-address=" + strings.TrimPrefix(visibilityURL, "https://"), "--visibility-cert-dir=" + visibilityCertDir,
		"--queue-status-refresh-interval=1s", "--compute-tree-capacity"}, endpoints...)...)
}

// restarts counts koord-queue starts, so each process logs to its own file.
var restarts int

// queueUnitReaderToken creates a ServiceAccount that may list QueueUnits in
// every namespace and returns a token of it: koord-queue's visibility API
// checks it with TokenReview and SubjectAccessReview, as in a cluster.
func queueUnitReaderToken(ctx context.Context, c *cluster.Cluster) (string, error) {
	const name = "e2e-queueunit-reader"
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{schedulingv1alpha1.GroupVersion.Group}, Resources: []string{"queueunits"}, Verbs: []string{"get", "list"},
		}}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: schedulingv1alpha1.QueueNamespace, Name: name}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: schedulingv1alpha1.QueueNamespace, Name: name}},
		},
	}
	for _, o := range objs {
		if err := k8sClient.Create(ctx, o); err != nil {
			return "", fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return serviceAccountToken(ctx, c, schedulingv1alpha1.QueueNamespace, name)
}

// serviceAccountToken asks the API server for a day's token of the
// ServiceAccount ns/name (TokenRequest), as a pod of it would get.
func serviceAccountToken(ctx context.Context, c *cluster.Cluster, ns, name string) (string, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return "", err
	}
	day := int64(24 * 3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &day}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating a token of %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, nil
}
