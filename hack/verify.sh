#!/usr/bin/env bash
# verify.sh fails when a generated file is stale, Go code is unformatted, or
# go.mod is untidy. It regenerates in a scratch copy of the checkout, so the
# working tree is never changed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
status=0

unformatted=$(gofmt -l $(git ls-files --cached --others --exclude-standard '*.go'))
if [[ -n $unformatted ]]; then
  echo "gofmt would change:"; echo "$unformatted"; status=1
fi

# The framework operators the end-to-end tests run are the releases whose API
# koord-queue builds against.
# check_operator DIR MODULE: hack/tools/DIR builds the MODULE that go.mod pins.
check_operator() {
  local api operator
  api=$(go list -m -f '{{.Version}}' "$2")
  operator=$(go -C "hack/tools/$1" list -m -f '{{.Version}}' "$2")
  if [[ $api != "$operator" ]]; then
    echo "go.mod pins $2 $api but hack/tools/$1/go.mod builds $operator: make them the same"; status=1
  fi
}
check_operator training-operator github.com/kubeflow/training-operator
check_operator argo-workflows github.com/argoproj/argo-workflows/v3

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
git ls-files --cached --others --exclude-standard -z | xargs -0 cp --parents -t "$scratch"
(cd "$scratch" && make --no-print-directory generate >/dev/null && go mod tidy)
for path in apis config charts/koord-queue/crds charts/koord-queue/files go.mod go.sum; do
  if ! diff -r "$root/$path" "$scratch/$path" >/dev/null; then
    echo "$path is stale: run 'make generate' (and 'go mod tidy'), then commit:"
    diff -r "$root/$path" "$scratch/$path" | head -20
    status=1
  fi
done
exit $status
