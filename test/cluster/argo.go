package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// The Argo Workflows workflow-controller (argoproj.io/v1alpha1 Workflow) run
// as a local process, the way the cluster runs kube-controller-manager. The
// names below are Argo's own, from its cmd/workflow-controller and
// workflow/common.
const (
	// workflowControllerConfigMap is its --configmap default: it exits at
	// once when the ConfigMap is missing from its namespace.
	workflowControllerConfigMap = "workflow-controller-configmap"
	// workflowReadyProbe is the workflow StartWorkflowController has the
	// controller run to know it is ready.
	workflowReadyProbe = "workflow-controller-ready"
)

var workflowsResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflows"}

// WorkflowControllerOptions shape the workflow-controller a cluster runs.
type WorkflowControllerOptions struct {
	// Namespace is the only namespace whose workflows the controller
	// manages (--namespaced --managed-namespace), and its own (where its
	// ConfigMap is). Required: workflows elsewhere are left alone.
	Namespace string
	// StartTimeout bounds how long it may take to be ready (default 1 minute).
	StartTimeout time.Duration
}

// StartWorkflowController runs the Argo Workflows workflow-controller that
// hack/ensure-tools.sh builds (`make tools`) against the cluster, as a local
// process that Stop stops first, and waits until it is ready: it has run a
// workflow of its own in opts.Namespace to the end. Install the
// argoproj.io CRDs first (testenv.FrameworkCRDDir has them). It is not part
// of Start: only the tests that need it pay for it. Create opts.Namespace
// first.
//
// Outside a pod the controller lacks what its Deployment gives it, so this
// provides it: its (nearly empty) ConfigMap in opts.Namespace, leader
// election off (LEADER_ELECTION_DISABLE), and an executor image name (no
// image is ever pulled on kwok, and the executor never runs). Its metrics
// server listens on a port free on loopback, without TLS (Argo takes no bind
// address: it listens on every interface); its /healthz is on a fixed port,
// :6060, that every controller on the machine would share (the second to
// start only logs that it is taken), so it is not what readiness is judged
// by.
func (c *Cluster) StartWorkflowController(ctx context.Context, opts WorkflowControllerOptions) (*Process, error) {
	if opts.Namespace == "" {
		return nil, fmt.Errorf("starting the workflow-controller: no namespace to manage")
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = time.Minute
	}
	bin, err := Tool("workflow-controller")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	if err := c.createWorkflowControllerConfigMap(ctx, opts.Namespace, ports[0]); err != nil {
		return nil, err
	}
	p, err := c.StartProcessEnv("workflow-controller", []string{"LEADER_ELECTION_DISABLE=true"}, bin,
		"--kubeconfig="+c.Kubeconfig,
		"--namespace="+opts.Namespace,
		"--namespaced",
		"--managed-namespace="+opts.Namespace,
		"--executor-image=quay.io/argoproj/argoexec:kwok-never-pulled",
	)
	if err != nil {
		return nil, err
	}
	// Only this process is watched: a test may have stopped others on purpose.
	if err := c.waitForWorkflowController(ctx, opts.Namespace, p.Err); err != nil {
		return nil, fmt.Errorf("%w (log in %s)", err, filepath.Join(c.logDir, "workflow-controller.log"))
	}
	return p, nil
}

// createWorkflowControllerConfigMap creates the controller's ConfigMap in ns
// unless it exists: its metrics on metricsPort without TLS (by default they
// are on 9090, with a self-signed certificate, and a port in use makes the
// controller exit).
func (c *Cluster) createWorkflowControllerConfigMap(ctx context.Context, ns string, metricsPort int) error {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: workflowControllerConfigMap},
		Data:       map[string]string{"metricsConfig": fmt.Sprintf("{port: %d, secure: false}", metricsPort)},
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ConfigMap %s/%s: %w", ns, cm.Name, err)
	}
	return nil
}

// waitForWorkflowController has the controller run a workflow of one
// suspend step of no duration, which needs no pod, and waits until the
// workflow Succeeded, then deletes it. That is what ready means: the
// controller's informers have synced and its workers act on ns. Nothing
// else it serves says so: its metrics server starts before its informers
// sync, and its /healthz port is shared.
func (c *Cluster) waitForWorkflowController(ctx context.Context, ns string, alive func() error) error {
	client, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	workflows := client.Resource(workflowsResource).Namespace(ns)
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Workflow",
		"metadata":   map[string]any{"name": workflowReadyProbe},
		"spec": map[string]any{
			"entrypoint": "ready",
			"templates":  []any{map[string]any{"name": "ready", "suspend": map[string]any{"duration": "0"}}},
		},
	}}
	if _, err := workflows.Create(ctx, probe, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating workflow %s/%s: %w", ns, workflowReadyProbe, err)
	}
	err = waitFor(ctx, "the workflow-controller to run workflow "+ns+"/"+workflowReadyProbe, alive, func(ctx context.Context) error {
		wf, err := workflows.Get(ctx, workflowReadyProbe, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if phase, _, _ := unstructured.NestedString(wf.Object, "status", "phase"); phase != "Succeeded" {
			return fmt.Errorf("phase %q, want Succeeded: %w", phase, errNotReady)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := workflows.Delete(ctx, workflowReadyProbe, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting workflow %s/%s: %w", ns, workflowReadyProbe, err)
	}
	return nil
}
