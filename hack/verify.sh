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

# Each operator the end-to-end tests run is the release whose API
# koord-queue builds against.
source hack/operators.sh
for op in "${operators[@]}"; do
  read -r dir module <<<"$op"
  api=$(module_version . "$module")
  built=$(module_version "hack/tools/$dir" "$module")
  if [[ $api != "$built" ]]; then
    echo "go.mod pins $module $api but hack/tools/$dir/go.mod builds $built: make them the same"; status=1
  fi
done

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
git ls-files --cached --others --exclude-standard -z | xargs -0 cp --parents -t "$scratch"
(cd "$scratch" && make --no-print-directory generate >/dev/null && go mod tidy)
for path in apis config charts/koord-queue/Chart.yaml charts/koord-queue/crds charts/koord-queue/files go.mod go.sum; do
  if ! diff -r "$root/$path" "$scratch/$path" >/dev/null; then
    echo "$path is stale: run 'make generate' (and 'go mod tidy'), then commit:"
    diff -r "$root/$path" "$scratch/$path" | head -20
    status=1
  fi
done
exit $status
