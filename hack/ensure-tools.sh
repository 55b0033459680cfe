#!/usr/bin/env bash
# ensure-tools.sh builds the pinned binaries that tests and the local cluster
# run, once per version, into a cache outside the checkout (CI clones afresh on
# the same machine, so the cache outlives the clone). It prints the cache's bin
# directory on its last line.
#
#   KOORD_QUEUE_CACHE   cache root (default: $HOME/.cache/koord-queue)
set -euo pipefail

K8S_VERSION=v1.34.4
ETCD_VERSION=v3.6.4
KWOK_VERSION=v0.8.0
CONTROLLER_GEN_VERSION=v0.19.0
STATICCHECK_VERSION=v0.6.1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${KOORD_QUEUE_CACHE:-$HOME/.cache/koord-queue}

# The framework operators the end-to-end tests run are each pinned by a Go
# module of their own under hack/tools (hack/operators.sh); their versions
# are read from there (hack/verify.sh checks each is the one koord-queue's
# go.mod pins).
source "$root/hack/operators.sh"
TRAINING_OPERATOR_VERSION=$(module_version "$root/hack/tools/training-operator" github.com/kubeflow/training-operator)
KUBERAY_VERSION=$(module_version "$root/hack/tools/kuberay" github.com/ray-project/kuberay/ray-operator)
ARGO_WORKFLOWS_VERSION=$(module_version "$root/hack/tools/argo-workflows" github.com/argoproj/argo-workflows/v3)
# Kueue's own scheduler performance test, for `make perf-compare` only (not
# part of `all`): pinned by hack/tools/kueue.
KUEUE_VERSION=$(module_version "$root/hack/tools/kueue" sigs.k8s.io/kueue)

log() { printf '[ensure-tools] %s\n' "$*" >&2; }

# build_once DIR NAME... CMD: runs CMD (which writes into DIR/bin) unless every
# NAME already exists there. The stamp is written last, so an interrupted build
# is redone rather than trusted.
build_once() {
  local dir=$1; shift
  local stamp=$dir/.complete
  if [[ -f $stamp ]]; then return 0; fi
  mkdir -p "$dir/bin"
  local start=$SECONDS
  "$@"
  touch "$stamp"
  log "built $(basename "$dir") in $((SECONDS - start))s"
}

k8s_ldflags() {
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  local pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    printf -- '-X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean -X %s.buildDate=1970-01-01T00:00:00Z ' \
      "$pkg" "$K8S_VERSION" "$pkg" "$pkg" "$minor" "$pkg" "$pkg"
  done
}

build_k8s() {
  log "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $K8S_VERSION (first time: several minutes)"
  (cd "$root/hack/tools" && go build -trimpath -ldflags "-s -w $(k8s_ldflags)" -o "$cache/k8s-$K8S_VERSION/bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
}

build_etcd() {
  log "building etcd $ETCD_VERSION"
  (cd "$root/hack/tools" && go build -trimpath -ldflags "-s -w" -o "$cache/etcd-$ETCD_VERSION/bin/etcd" ./cmd/etcd)
}

build_kwok() {
  log "building kwok $KWOK_VERSION"
  # kwok's stages (how fake nodes and pods move) are test/cluster/kwok-stages.yaml.
  GOBIN="$cache/kwok-$KWOK_VERSION/bin" GOFLAGS=-trimpath go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
}

# build_operator DIR VERSION BINARY PACKAGE: builds PACKAGE in the tools module
# hack/tools/DIR into $cache/DIR-VERSION/bin/BINARY.
build_operator() {
  log "building $3 $2 from hack/tools/$1 (first time: a few minutes)"
  (cd "$root/hack/tools/$1" && go build -trimpath -ldflags "-s -w" -o "$cache/$1-$2/bin/$3" "$4")
}

# build_kueue builds, from the tools module hack/tools/kueue, Kueue's
# scheduler performance runner and minimalkueue as Kueue's Makefile does
# (`performance-scheduler-runner`, `minimalkueue`: go build with the version
# in -ldflags), and its checker's test binary (`kueue-perf-checker`, what
# `make test-performance-scheduler` runs with go test), for
# test/performance/cmd/perfcompare (which finds Kueue's CRDs and configs in
# the module cache, by `go list -m` in hack/tools/kueue).
build_kueue() {
  local dir=$cache/kueue-$KUEUE_VERSION
  local ldflags="-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION"
  log "building Kueue's performance runner, minimalkueue and checker $KUEUE_VERSION from hack/tools/kueue (first time: a few minutes)"
  (cd "$root/hack/tools/kueue" &&
    go build -ldflags "$ldflags" -o "$dir/bin/performance-scheduler-runner" sigs.k8s.io/kueue/test/performance/scheduler/runner &&
    go build -ldflags "$ldflags" -o "$dir/bin/minimalkueue" sigs.k8s.io/kueue/test/performance/scheduler/minimalkueue &&
    go test -c -o "$dir/bin/kueue-perf-checker" sigs.k8s.io/kueue/test/performance/scheduler/checker)
}

# build_kueue_manager builds Kueue's manager (cmd/kueue, what its release
# image runs) from the same tools module, with the version in -ldflags as
# Kueue's Makefile (`build`) does, for test/performance/cmd/perfcomparejobs. It has a
# cache directory of its own so that a cache holding only the performance
# test's binaries gains it without rebuilding them.
build_kueue_manager() {
  local dir=$cache/kueue-manager-$KUEUE_VERSION
  local ldflags="-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION"
  log "building Kueue's manager $KUEUE_VERSION from hack/tools/kueue (first time: several minutes)"
  (cd "$root/hack/tools/kueue" && go build -ldflags "$ldflags" -o "$dir/bin/kueue-manager" sigs.k8s.io/kueue/cmd/kueue)
}

build_controller_gen() {
  GOBIN="$cache/controller-gen-$CONTROLLER_GEN_VERSION/bin" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_GEN_VERSION"
}

build_staticcheck() {
  GOBIN="$cache/staticcheck-$STATICCHECK_VERSION/bin" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
}

want=${1:-all}
case $want in
  all|cluster)
    # kwok is its own module (newer Kubernetes libraries than the control
    # plane's), so it shares no compiled packages with them: built beside
    # them, it fills the cores their single-threaded links leave idle.
    build_once "$cache/kwok-$KWOK_VERSION" build_kwok &
    kwok_build=$!
    build_once "$cache/etcd-$ETCD_VERSION" build_etcd
    build_once "$cache/k8s-$K8S_VERSION" build_k8s
    wait "$kwok_build"
    ;;&
  all|operators)
    build_once "$cache/training-operator-$TRAINING_OPERATOR_VERSION" build_operator training-operator "$TRAINING_OPERATOR_VERSION" \
      training-operator github.com/kubeflow/training-operator/cmd/training-operator.v1
    # KubeRay's module root is the operator's main package.
    build_once "$cache/kuberay-$KUBERAY_VERSION" build_operator kuberay "$KUBERAY_VERSION" \
      ray-operator github.com/ray-project/kuberay/ray-operator
    build_once "$cache/argo-workflows-$ARGO_WORKFLOWS_VERSION" build_operator argo-workflows "$ARGO_WORKFLOWS_VERSION" \
      workflow-controller github.com/argoproj/argo-workflows/v3/cmd/workflow-controller
    ;;&
  all|codegen)
    build_once "$cache/controller-gen-$CONTROLLER_GEN_VERSION" build_controller_gen
    ;;&
  all|lint)
    build_once "$cache/staticcheck-$STATICCHECK_VERSION" build_staticcheck
    ;;
  cluster|operators|codegen) ;;
  kueue)
    build_once "$cache/kueue-$KUEUE_VERSION" build_kueue
    build_once "$cache/kueue-manager-$KUEUE_VERSION" build_kueue_manager
    ;;
  *) echo "usage: $0 [all|cluster|operators|codegen|lint|kueue]" >&2; exit 2 ;;
esac

# One directory on PATH holds every tool, by symlink, so callers need one path.
bin=$cache/bin
mkdir -p "$bin"
for d in "$cache/etcd-$ETCD_VERSION" "$cache/k8s-$K8S_VERSION" "$cache/kwok-$KWOK_VERSION" \
         "$cache/training-operator-$TRAINING_OPERATOR_VERSION" "$cache/kuberay-$KUBERAY_VERSION" "$cache/argo-workflows-$ARGO_WORKFLOWS_VERSION" \
         "$cache/controller-gen-$CONTROLLER_GEN_VERSION" "$cache/staticcheck-$STATICCHECK_VERSION" "$cache/kueue-$KUEUE_VERSION" "$cache/kueue-manager-$KUEUE_VERSION"; do
  [[ -f $d/.complete ]] || continue
  for f in "$d"/bin/*; do ln -sf "$f" "$bin/$(basename "$f")"; done
done
echo "$bin"
