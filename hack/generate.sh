#!/usr/bin/env bash
# generate.sh regenerates everything derived from the code's markers:
# deepcopy functions, CRDs (config/crd/bases, copied into the Helm chart),
# the chart's RBAC rules, one file per binary and per extension, and the
# chart's version and appVersion from the Makefile's RELEASE_VERSION.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bin=$(bash hack/ensure-tools.sh codegen | tail -n 1)
cg=$bin/controller-gen

$cg object paths=./apis/...
# The part of the spark-operator's API that the Spark extension declares itself.
$cg object paths=./pkg/extensions/spark/v1beta2/...
# generateEmbeddedObjectMeta keeps pod templates' labels and annotations in QueueUnits.
$cg crd:maxDescLen=0,generateEmbeddedObjectMeta=true paths=./apis/... output:crd:dir=config/crd/bases
# A QueueUnit's amounts, its pod templates' requests, limits and overhead
# included, refuse negative values (a CEL rule over the templates would
# exceed the API server's cost budget; see the command's doc).
go run ./hack/nonnegative config/crd/bases/scheduling.x-k8s.io_queueunits.yaml

chart=charts/koord-queue
mkdir -p "$chart/files/crds" "$chart/files/rbac"
# The CRDs are templates (templates/crds.yaml) marked helm.sh/resource-policy:
# keep, not crds/: so that `helm upgrade` from Koord-Queue v1.8's chart, whose
# CRDs are templates, takes them over instead of deleting them, and no
# uninstall ever deletes them with every Queue and QueueUnit.
cp config/crd/bases/scheduling.x-k8s.io_queues.yaml config/crd/bases/scheduling.x-k8s.io_queueunits.yaml \
  config/crd/bases/scheduling.x-k8s.io_topologies.yaml "$chart/files/crds/"
# ElasticQuota is Koordinator's: installed only when asked (installElasticQuotaCRD).
cp config/crd/bases/scheduling.sigs.k8s.io_elasticquotas.yaml "$chart/files/crds/elasticquota.yaml"
# So is ElasticQuotaProfile, for computeTreeCapacity (installElasticQuotaProfileCRD).
cp config/crd/bases/quota.koordinator.sh_elasticquotaprofiles.yaml "$chart/files/crds/elasticquotaprofile.yaml"

# rbac FILE PACKAGE...: the rules of the markers in PACKAGE, as files/rbac/FILE.yaml.
rbac() {
  local name=$1; shift
  local tmp paths=""
  tmp=$(mktemp -d)
  for p in "$@"; do paths+="${paths:+;}$p"; done
  $cg rbac:roleName="$name" paths="$paths" output:rbac:dir="$tmp"
  mkdir -p "$(dirname "$chart/files/rbac/$name.yaml")"
  mv "$tmp/role.yaml" "$chart/files/rbac/$name.yaml"
  rm -rf "$tmp"
}
rbac koord-queue ./cmd/queue/app/...
# koord-queue's aggregated visibility API, granted only when it is enabled.
for dir in pkg/visibility/rbac/*/; do
  [[ -d $dir ]] || continue
  rbac "visibility-api/$(basename "$dir")" "./$dir"
done
# koord-queue-controllers: the rules all extensions share (common), each
# extension's own (named as --enabled-extensions names it), and the webhook's,
# so the chart grants only what is enabled.
for dir in pkg/extensions/rbac/*/; do
  [[ -d $dir ]] || continue
  rbac "extensions/$(basename "$dir")" "./$dir"
done

# The reference pages (docs/reference): flags, chart values, labels and
# annotations, metrics and the API's fields, from the code.
go run ./hack/docgen -out docs/reference

# The chart is of the release: appVersion is RELEASE_VERSION (the images' tag
# by default), version the same without its "v".
release=${RELEASE_VERSION:?generate.sh needs RELEASE_VERSION: run it through make generate}
sed -i -E "s/^version: .*/version: ${release#v}/; s/^appVersion: .*/appVersion: \"$release\"/" "$chart/Chart.yaml"
