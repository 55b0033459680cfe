// Package cluster runs a real Kubernetes control plane on loopback, without
// Docker: etcd, kube-apiserver (TLS, RBAC, service-account keys),
// kube-controller-manager, kube-scheduler and kwok with fake nodes, so Jobs
// really create Pods that are scheduled, run and finish; on request, the
// Kubeflow training-operator too (StartTrainingOperator), so TFJobs,
// PyTorchJobs and MPIJobs do; KubeRay's ray-operator (StartRayOperator), so
// RayClusters and RayJobs get their pods; and the Argo Workflows
// workflow-controller (StartWorkflowController), so Workflows do. The
// binaries are the pinned ones hack/ensure-tools.sh builds into a cache
// outside the checkout.
package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// BinDir is where hack/ensure-tools.sh puts the binaries:
// $KOORD_QUEUE_CACHE/bin, by default $HOME/.cache/koord-queue/bin.
func BinDir() string {
	if dir := os.Getenv("KOORD_QUEUE_CACHE"); dir != "" {
		return filepath.Join(dir, "bin")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "koord-queue", "bin")
}

// ErrToolMissing is returned when a binary has not been built yet.
var ErrToolMissing = errors.New("tool not built")

// Tool is the path of a pinned binary, or ErrToolMissing with what to run.
func Tool(name string) (string, error) {
	path := filepath.Join(BinDir(), name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s not found in %s (run `make tools` to build it): %w", name, BinDir(), ErrToolMissing)
	}
	return path, nil
}
