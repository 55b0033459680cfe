#!/usr/bin/env bash
# verify.sh fails when a generated file is stale, Go code is unformatted,
# go.mod is untidy, or a doc names a flag, chart value, label, annotation
# or metric the code does not have, or links to a page or heading that
# does not exist. It regenerates in a scratch copy of the checkout, so the
# working tree is never changed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
status=0

unformatted=$(gofmt -l $(git ls-files --cached --others --exclude-standard '*.go'))
if [[ -n $unformatted ]]; then
  echo "gofmt would change:"; echo "$unformatted"; status=1
fi

# The docs name only flags, chart values, labels, annotations and metrics
# the code has (by the reference pages, whose freshness is checked below),
# their links resolve, and contributing.md's layout covers every folder of
# Go code.
if ! go run ./hack/doccheck; then status=1; fi

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

# hack/tools/kueue (Kueue's performance test, which only `make
# perf-compare` builds) is tidy. Its dependencies are downloaded only by
# that target, so where they are not in the module cache the check is
# skipped rather than downloading them for every verify.
if kueue_tidy=$(GOPROXY=off GOFLAGS=-mod=mod go -C hack/tools/kueue mod tidy -diff 2>&1); then
  :
elif grep -q 'GOPROXY=off' <<<"$kueue_tidy"; then
  echo "hack/tools/kueue not checked: its modules are not in the module cache (make perf-compare downloads them)" >&2
else
  echo "hack/tools/kueue/go.mod is untidy: run 'go mod tidy' in hack/tools/kueue, then commit:"
  echo "$kueue_tidy" | head -20
  status=1
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
git ls-files --cached --others --exclude-standard -z | xargs -0 cp --parents -t "$scratch"
# test/performance (the performance harness) is a module of its own, which
# builds koord-queue from this checkout (its replace directive): both are
# tidy.
(cd "$scratch" && make --no-print-directory generate >/dev/null && go mod tidy && go -C test/performance mod tidy)
for path in apis config charts/koord-queue/Chart.yaml charts/koord-queue/files docs/reference go.mod go.sum \
  test/performance/go.mod test/performance/go.sum; do
  if ! diff -r "$root/$path" "$scratch/$path" >/dev/null; then
    echo "$path is stale: run 'make generate' (and 'go mod tidy' in the module that holds it), then commit:"
    diff -r "$root/$path" "$scratch/$path" | head -20
    status=1
  fi
done
exit $status
