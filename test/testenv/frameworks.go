package testenv

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// frameworkCRD is a CRD file a framework's Go module ships.
type frameworkCRD struct{ module, path string }

var frameworkCRDFiles = []frameworkCRD{
	{"github.com/kubeflow/training-operator", "manifests/base/crds/kubeflow.org_tfjobs.yaml"},
	{"github.com/kubeflow/training-operator", "manifests/base/crds/kubeflow.org_pytorchjobs.yaml"},
	{"github.com/kubeflow/training-operator", "manifests/base/crds/kubeflow.org_mpijobs.yaml"},
	// The minimal CRDs are the ones Argo installs by default: the Workflow,
	// and those its workflow-controller also watches
	// (cluster.StartWorkflowController), from the same release.
	{"github.com/argoproj/argo-workflows/v3", "manifests/base/crds/minimal/argoproj.io_workflows.yaml"},
	{"github.com/argoproj/argo-workflows/v3", "manifests/base/crds/minimal/argoproj.io_workflowtemplates.yaml"},
	{"github.com/argoproj/argo-workflows/v3", "manifests/base/crds/minimal/argoproj.io_clusterworkflowtemplates.yaml"},
	{"github.com/argoproj/argo-workflows/v3", "manifests/base/crds/minimal/argoproj.io_cronworkflows.yaml"},
	{"github.com/argoproj/argo-workflows/v3", "manifests/base/crds/minimal/argoproj.io_workflowtasksets.yaml"},
	{"github.com/argoproj/argo-workflows/v3", "manifests/base/crds/minimal/argoproj.io_workflowtaskresults.yaml"},
	{"github.com/argoproj/argo-workflows/v3", "manifests/base/crds/minimal/argoproj.io_workflowartifactgctasks.yaml"},
	{"github.com/ray-project/kuberay/ray-operator", "config/crd/bases/ray.io_rayjobs.yaml"},
	{"github.com/ray-project/kuberay/ray-operator", "config/crd/bases/ray.io_rayclusters.yaml"},
	// Not queued, but the ray-operator the e2e tests run exits without it
	// (its RayService controller's cache never syncs; 2 minutes, then it
	// stops).
	{"github.com/ray-project/kuberay/ray-operator", "config/crd/bases/ray.io_rayservices.yaml"},
}

// sparkApplicationCRD is the spark-operator's CRD, whose module is not
// served to this project: written from its public schema (see the file).
//
//go:embed crds/sparkoperator.k8s.io_sparkapplications.yaml
var sparkApplicationCRD []byte

// FrameworkCRDDir copies the job frameworks' CRDs (TFJob, PyTorchJob, MPIJob,
// Workflow and the other Argo kinds its controller watches, RayJob,
// RayCluster, and RayService) from the Go module cache, from the very
// module versions go.mod pins (the operators the e2e tests run are built
// from the same versions: hack/verify.sh checks it), into a new directory,
// with the SparkApplication CRD this package carries. Nothing is downloaded.
func FrameworkCRDDir() (string, error) {
	dir, err := os.MkdirTemp("", "koord-queue-framework-crds-")
	if err != nil {
		return "", err
	}
	for _, f := range frameworkCRDFiles {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", f.module).Output()
		if err != nil {
			return "", fmt.Errorf("finding module %s (is it downloaded? run `go mod download`): %w", f.module, err)
		}
		data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), f.path))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f.path)), data, 0o644); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "sparkoperator.k8s.io_sparkapplications.yaml"), sparkApplicationCRD, 0o644); err != nil {
		return "", err
	}
	return dir, nil
}
