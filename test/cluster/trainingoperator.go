package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The Kubeflow training-operator (kubeflow.org/v1 TFJob, PyTorchJob,
// MPIJob, ...) run as a local process, the way the cluster runs
// kube-controller-manager. The names below are the operator's own, from
// its pkg/cert and flag defaults.
const (
	// TrainingOperatorNamespace is the operator's own namespace (what its
	// MY_POD_NAMESPACE says in a pod), where its webhook Secret is.
	TrainingOperatorNamespace = "kubeflow"
	// trainingOperatorSecret is its --webhook-secret-name default: the
	// Secret its certificate rotator fills.
	trainingOperatorSecret = "training-operator-webhook-cert"
	// trainingOperatorWebhook is the ValidatingWebhookConfiguration the
	// rotator injects its CA into, and waits for.
	trainingOperatorWebhook = "validator.training-operator.kubeflow.org"
	// trainingOperatorCertDir is where the rotator waits for tls.crt to
	// appear (as the kubelet mounts the Secret in a pod) before it lets the
	// controllers start. It is a constant of the operator's pkg/cert that
	// no flag changes.
	trainingOperatorCertDir = "/tmp/k8s-webhook-server/serving-certs"
)

// TrainingOperatorOptions shape the training-operator a cluster runs. The
// zero value runs every kind it supports, for every namespace.
type TrainingOperatorOptions struct {
	// Namespace is the only namespace whose jobs the operator manages (its
	// --namespace); every namespace when empty.
	Namespace string
	// Schemes are the kinds it runs (--enable-scheme: "tfjob",
	// "pytorchjob", "mpijob", ...); when empty, every kind it supports,
	// MXJob, XGBoostJob and PaddleJob too, whose CRDs are then needed.
	Schemes []string
	// StartTimeout bounds how long it may take to be ready (default 1 minute).
	StartTimeout time.Duration
}

// StartTrainingOperator runs the Kubeflow training-operator that
// hack/ensure-tools.sh builds (`make tools`) against the cluster, as a
// local process that Stop stops first, and waits until it is ready: its
// certificates are in place, so its controllers run. Install the
// kubeflow.org CRDs first. It is not part of Start: only the tests that
// need it pay for it.
//
// Outside a pod the operator lacks what its Deployment gives it, so this
// provides it first: the namespace TrainingOperatorNamespace with the
// (empty) Secret its certificate rotator fills, and the
// ValidatingWebhookConfiguration it injects its CA into, with one webhook
// entry that has no rules, so the API server never calls it (the
// operator's validating webhooks are not exercised). Its webhook server
// reads a certificate of this cluster's own from its TMPDIR, set to a
// directory of the cluster; the rotator only checks that tls.crt exists in
// the fixed /tmp/k8s-webhook-server/serving-certs, so a copy of the
// certificate is left there if none is (it is shared by every cluster on
// the machine and never removed).
func (c *Cluster) StartTrainingOperator(ctx context.Context, opts TrainingOperatorOptions) (*Process, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = time.Minute
	}
	bin, err := Tool("training-operator")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := c.createTrainingOperatorObjects(ctx); err != nil {
		return nil, err
	}
	tmp := filepath.Join(c.Dir, "training-operator")
	certDir := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the training-operator's certificate directory: %w", err)
	}
	if _, err := WriteServingCert(certDir); err != nil {
		return nil, err
	}
	if err := ensureFile(filepath.Join(trainingOperatorCertDir, "tls.crt"), filepath.Join(certDir, "tls.crt")); err != nil {
		return nil, err
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--leader-elect=false",
		"--namespace=" + opts.Namespace,
		"--metrics-bind-address=" + Loopback(ports[0]),
		"--health-probe-bind-address=" + Loopback(ports[1]),
		"--webhook-server-port=" + strconv.Itoa(ports[2]),
	}
	for _, s := range opts.Schemes {
		args = append(args, "--enable-scheme="+s)
	}
	p, err := c.StartProcessEnv("training-operator",
		[]string{"TMPDIR=" + tmp, "MY_POD_NAMESPACE=" + TrainingOperatorNamespace}, bin, args...)
	if err != nil {
		return nil, err
	}
	// /readyz answers once the certificates are ready and the webhook
	// server listens: the controllers are set up by then. Only this
	// process is watched: a test may have stopped others on purpose.
	if err := waitForHTTP(ctx, "training-operator /readyz", &http.Client{Timeout: 5 * time.Second}, "http://"+Loopback(ports[1])+"/readyz", p.Err); err != nil {
		return nil, fmt.Errorf("%w (log in %s)", err, filepath.Join(c.logDir, "training-operator.log"))
	}
	return p, nil
}

// createTrainingOperatorObjects creates the operator's namespace, its empty
// webhook Secret and its placeholder ValidatingWebhookConfiguration, unless
// they exist.
func (c *Cluster) createTrainingOperatorObjects(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: TrainingOperatorNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: TrainingOperatorNamespace, Name: trainingOperatorSecret}}
	if _, err := client.CoreV1().Secrets(secret.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: trainingOperatorWebhook},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "placeholder.training-operator.kubeflow.org",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Namespace: TrainingOperatorNamespace, Name: "training-operator"},
			},
			// No rules: nothing is ever sent to it.
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, config, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ValidatingWebhookConfiguration %s: %w", config.Name, err)
	}
	return nil
}

// ensureFile copies from to path unless path exists. The copy is renamed
// into place, so a process that sees path sees it whole.
func ensureFile(path, from string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("reading %s: %w", from, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
