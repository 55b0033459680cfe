# koord-queue's build. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

GO       ?= go
TOOLS_BIN = $(shell bash hack/ensure-tools.sh $(1) | tail -n 1)
# Test packages that start API servers run at most this many at once: 2 cores.
TEST_PARALLEL_PACKAGES ?= 2
GO_TEST_FLAGS ?= -count=1

UNIT_PKGS        = $$($(GO) list ./... | grep -v /test/)
# test/performance, the performance harness, is a Go module of its own (so
# that its plotting library is no dependency of koord-queue's): the targets
# run the go command in it with -C.
PERF_MODULE      = test/performance
INTEGRATION_PKGS = ./test/integration/...
E2E_PKGS         = ./test/e2e/...

# The release this tree is of: the chart's appVersion and version (make
# generate writes them), so the chart's default image tag. A release commit
# is tagged with it, so that its VERSION is the same.
export RELEASE_VERSION := v0.1.0
# What the binaries report (--version, koord_queue_build_info) and the
# images' tag: set here only, for `make build` and `make images` alike.
VERSION  ?= $(shell git describe --tags --always --dirty)
REVISION ?= $(shell git rev-parse HEAD)
VERSION_PKG      = github.com/koord-queue/koord-queue/pkg/version
VERSION_LDFLAGS  = -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Revision=$(REVISION)
# Every time inside the images is the commit's, so a commit gives one digest.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct)
IMAGES_DIR ?= _output/images

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: tools
tools: ## Build the pinned etcd, Kubernetes, kwok, the framework operators (Kubeflow training-operator, KubeRay ray-operator, Argo workflow-controller), controller-gen and staticcheck into the cache (once per version).
	@bash hack/ensure-tools.sh all >/dev/null

.PHONY: generate
generate: ## Generate deepcopy code, CRDs and the Helm chart's CRDs and RBAC from the code's markers.
	@bash hack/generate.sh

.PHONY: verify
verify: ## Fail if generated files are stale, code is unformatted, go.mod is untidy or a doc names a flag, chart value, label, annotation or metric the code does not have, or a page or heading that does not exist.
	@bash hack/verify.sh

.PHONY: lint
lint: ## go vet and staticcheck.
	$(GO) vet ./...
	$(GO) -C $(PERF_MODULE) vet ./...
	@bin=$(call TOOLS_BIN,lint); $$bin/staticcheck ./... && cd $(PERF_MODULE) && $$bin/staticcheck ./...

.PHONY: build
build: ## Build the binaries into bin/.
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o bin/ ./cmd/...

.PHONY: images
images: ## Build both images (linux/amd64, linux/arm64) from scratch, without Docker, into the OCI image layout _output/images.
	$(GO) run ./hack/images build -out $(IMAGES_DIR) -bin _output/images-bin -version "$(VERSION)" -revision "$(REVISION)" \
		-source-date-epoch "$(SOURCE_DATE_EPOCH)" -ldflags "$(VERSION_LDFLAGS)"

# Where `make push` and `make release` push: REGISTRY=host[:port]/prefix
# takes the images as REGISTRY/koord-queue and
# REGISTRY/koord-queue-controllers, tagged TAG (default: the version), and
# the chart as CHART_REGISTRY/koord-queue:<chart version>.
REGISTRY ?=
TAG ?=
CHART_REGISTRY ?= $(REGISTRY)/charts

.PHONY: push
push: ## Build the images, then push them to $(REGISTRY)/koord-queue and $(REGISTRY)/koord-queue-controllers, tagged $(TAG) or the version (REGISTRY=host/prefix).
	@if [[ -z "$(REGISTRY)" ]]; then echo "make push needs REGISTRY=host/prefix" >&2; exit 2; fi
	@if [[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$$ && "$(VERSION)" != "$(RELEASE_VERSION)" ]]; then \
		echo "make push: the tag $(VERSION) is not RELEASE_VERSION $(RELEASE_VERSION), the chart's appVersion: set RELEASE_VERSION in the Makefile, make generate, commit and tag again" >&2; exit 2; fi
	@$(MAKE) --no-print-directory images
	@$(MAKE) --no-print-directory push-images

.PHONY: push-images
push-images: ## Push the images `make images` built to $(REGISTRY), tagged $(TAG) or their version.
	@if [[ -z "$(REGISTRY)" ]]; then echo "make push-images needs REGISTRY=host/prefix" >&2; exit 2; fi
	$(GO) run ./hack/images push -layout $(IMAGES_DIR) -registry "$(REGISTRY)" -tag "$(TAG)"

.PHONY: push-chart
push-chart: ## Package the chart and push it as an OCI artifact to $(CHART_REGISTRY)/koord-queue:<chart version> (default CHART_REGISTRY: $(REGISTRY)/charts).
	@if [[ -z "$(REGISTRY)$(filter-out /charts,$(CHART_REGISTRY))" ]]; then echo "make push-chart needs REGISTRY=host/prefix (or CHART_REGISTRY)" >&2; exit 2; fi
	$(GO) run ./hack/images chart -chart charts/koord-queue -registry "$(CHART_REGISTRY)"

.PHONY: release
release: ## What the release workflow runs on a tag RELEASE_VERSION: build and push the images, then push the chart, to $(REGISTRY).
	@if [[ "$(VERSION)" != "$(RELEASE_VERSION)" ]]; then \
		echo "make release: the version $(VERSION) is not RELEASE_VERSION $(RELEASE_VERSION): release the commit tagged $(RELEASE_VERSION)" >&2; exit 2; fi
	@$(MAKE) --no-print-directory push TAG=
	@$(MAKE) --no-print-directory push-chart

.PHONY: test
test: tools verify lint test-unit test-integration test-e2e ## Checks, then unit, integration and end-to-end tests, all with -race.

.PHONY: test-unit
test-unit: ## Unit tests (no API server).
	$(GO) test -race $(GO_TEST_FLAGS) $(UNIT_PKGS)
	$(GO) -C $(PERF_MODULE) test -race $(GO_TEST_FLAGS) ./...

.PHONY: test-integration
test-integration: tools images ## Integration tests against a real kube-apiserver and etcd (the chart's test pushes the images to an in-process registry).
	$(GO) test -race -p $(TEST_PARALLEL_PACKAGES) $(GO_TEST_FLAGS) $(INTEGRATION_PKGS)

.PHONY: test-e2e
test-e2e: tools ## End-to-end tests on a local cluster with kwok nodes.
	$(GO) test -race -p 1 -timeout 30m $(GO_TEST_FLAGS) $(E2E_PKGS)

.PHONY: bench
bench: ## Benchmarks of the decision core.
	$(GO) test -run '^$$' -bench . -benchmem $$($(GO) list ./pkg/...)

.PHONY: perf
perf: tools ## Short performance scenarios (about 2.5 minutes, and a minute each for churn and large-scale; loose bounds); results in _output/perf/short.
	$(GO) -C $(PERF_MODULE) run ./cmd/perf -short -out $(CURDIR)/_output/perf/short

.PHONY: perf-full
perf-full: tools ## Full performance scenarios, Jobs and topology on kwok included (about 23 minutes on two cores, churn about as long as baseline, large-scale about 21 minutes, declared about 2.5); results in _output/perf/full.
	$(GO) -C $(PERF_MODULE) run ./cmd/perf -scenarios all -out $(CURDIR)/_output/perf/full

.PHONY: perf-compare
perf-compare: ## Kueue's own scheduler performance test (its runner and minimalkueue, built from the pinned release) and koord-queue's mirror of it, 3 pairs in alternating order (40 minutes on two cores); one table in _output/perf/compare/summary.md. PERF_COMPARE_FLAGS="-pairs 1", "-config large-scale", ... (-h lists them)
	@bash hack/ensure-tools.sh cluster >/dev/null
	@bash hack/ensure-tools.sh kueue >/dev/null
	$(GO) -C $(PERF_MODULE) run ./cmd/perfcompare $(PERF_COMPARE_FLAGS)

.PHONY: perf-compare-jobs
perf-compare-jobs: ## Kueue's real manager (cmd/kueue of the pinned release) and koord-queue + koord-queue-controllers on the same batch Jobs (Kueue's baseline shape translated), each on a fresh local kwok cluster, 3 pairs in alternating order; one table in _output/perf/compare-jobs/summary.md. PERF_COMPARE_JOBS_FLAGS="-config smoke -pairs 1" (a few minutes), ... (-h lists them)
	@bash hack/ensure-tools.sh cluster >/dev/null
	@bash hack/ensure-tools.sh kueue >/dev/null
	$(GO) -C $(PERF_MODULE) run ./cmd/perfcomparejobs $(PERF_COMPARE_JOBS_FLAGS)

.PHONY: run-local
run-local: ## Start a local cluster, run koord-queue on it with the documentation's example, then the framework operators; stay up until Ctrl-C.
	@bash hack/ensure-tools.sh cluster >/dev/null
	@# Built, then run in make's place: `go run` exits 1 when interrupted,
	@# even when the program it runs stops cleanly and exits 0.
	@$(GO) build -o bin/run-local ./hack/run-local
	@exec bin/run-local
