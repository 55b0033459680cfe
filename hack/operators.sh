# operators.sh, sourced by hack/ensure-tools.sh and hack/verify.sh, names
# the framework operators the end-to-end tests run. Each is pinned by a Go
# module of its own under hack/tools (its Kubernetes libraries are not the
# control plane's), which must build the release whose API koord-queue's
# go.mod pins: verify.sh checks it.

# operators: the tools module's directory under hack/tools, and the Go
# module it builds the operator from.
operators=(
  "training-operator github.com/kubeflow/training-operator"
  "kuberay github.com/ray-project/kuberay/ray-operator"
  "argo-workflows github.com/argoproj/argo-workflows/v3"
)

# module_version DIR MODULE prints the version of MODULE that the Go module
# in DIR requires.
module_version() { go -C "$1" list -m -f '{{.Version}}' "$2"; }
