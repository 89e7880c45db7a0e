# sigops Makefile, kubebuilder style. `make run` starts the whole local stack; `make test`
# runs every test. Both install what a fresh machine lacks (see hack/install-deps.sh).

LOCALBIN ?= $(shell pwd)/bin
ENVTEST_ASSETS ?= $(LOCALBIN)/k8s
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
STATICCHECK ?= $(LOCALBIN)/staticcheck
STATICCHECK_VERSION ?= v0.8.2
CONTROLLER_TOOLS_VERSION ?= v0.23.0
GO_TEST_FLAGS ?= -count=1 -timeout 30m
# -trimpath keeps source directories out of the build cache's keys, so a fresh clone (CI)
# reuses what an earlier clone compiled instead of compiling every package and test again.
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
# CLUSTER_PACKAGES run a second time on a Redis Cluster (`make test-cluster`): the packages
# whose own code sends what behaves differently there, a script, a transaction, a pipeline
# or a multi-key command, each of which fails when its keys span slots (and the
# acknowledged writes, which go to each slot's master). Every other package reaches Redis
# only through these, so its behaviour on a Cluster is theirs. test/stack/localstack is the
# whole system end to end on the replicated Cluster `make run ARGS=-redis=cluster` starts.
# test/layering checks that every package matching that rule is listed.
CLUSTER_PACKAGES ?= ./runtime/analytics ./runtime/apppolicy ./runtime/approval ./runtime/archive \
	./runtime/audit ./runtime/auth ./runtime/bookstate ./runtime/candles ./runtime/credentials \
	./runtime/exchange/paper ./runtime/executor ./runtime/intake ./runtime/lab ./runtime/owners \
	./runtime/notify/feed ./runtime/portfolio ./runtime/position ./runtime/queue ./runtime/registry ./runtime/risk \
	./runtime/store/... ./runtime/strategyrun ./runtime/trading ./runtime/wallet ./mcpd \
	./test/stack/localstack
BINARIES := manager webhookd executor authd mcpd notifyd queuectl backtest sigops-mcp

# Bash with pipefail so that a failing step in a pipe fails the target.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs and RBAC into config/.
	$(CONTROLLER_GEN) rbac:roleName=sigops-manager crd paths="./api/..." paths="./controllers/..." output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=sigops-mcpd paths="./fleet/..." output:rbac:artifacts:config=config/rbac/mcpd

.PHONY: generate
generate: controller-gen ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: vendor-web
vendor-web: ## Vendor htmx and lightweight-charts from npm into authd/dashboard/static/vendor (pinned versions and sha512; needs npm).
	bash hack/vendor-web.sh

.PHONY: screenshots
screenshots: deps envtest ## Save PNGs of every dashboard page (desktop and phone width) into docs/dashboard by running the browser test.
	SIGOPS_SCREENSHOTS=docs/dashboard KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -count=1 -timeout 10m -run '^TestTraderSession$$' -v ./test/browser

.PHONY: docs-mcp
docs-mcp: ## Write docs/mcp-tools.md (the MCP tools, their scopes and inputs) from mcpd's registry.
	go test ./mcpd -run TestToolsDocIsCurrent -count=1 -update

.PHONY: fmt
fmt: ## gofmt the code.
	go fmt ./...

.PHONY: vet
vet: ## go vet the code.
	go vet ./...

# lint runs staticcheck (honnef.co/go/tools) over every package, tests included, as
# kubebuilder projects run a linter beside go vet. A check that does not apply is switched off
# in staticcheck.conf with the reason, or at its line with a //lint:ignore that says why.
.PHONY: lint
lint: staticcheck ## Run staticcheck over every package, tests included.
	$(STATICCHECK) -tests ./...

.PHONY: test
test: deps manifests generate fmt vet lint envtest ## Run every test (unit, envtest, real Redis, end to end), the chaos test on its own, the Redis ones on a Redis Cluster too, and the fuzzers briefly.
	@echo "[$$(date -u +%T)] make test: the main pass"
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test $(GO_TEST_FLAGS) $$(go list ./... | grep -v -x -e $(CHAOS_PACKAGE))
	@echo "[$$(date -u +%T)] make test: the chaos tests"
	$(MAKE) --no-print-directory test-chaos
	@echo "[$$(date -u +%T)] make test: the Cluster pass"
	$(MAKE) --no-print-directory test-cluster
	@echo "[$$(date -u +%T)] make test: the fuzzers"
	$(MAKE) --no-print-directory fuzz FUZZTIME=200000x
	@echo "[$$(date -u +%T)] make test: done"

# FAST_SKIPS are the packages test-fast leaves out: those that start the local control
# plane (envtest) or the whole stack. What is left runs against one local redis-server.
FAST_SKIPS := -e /test/ -e /controllers$$ -e /fleet$$ -e /mcpd$$ -e /authd/dashboard$$
.PHONY: test-fast
test-fast: deps ## The inner loop: unit and single-Redis tests, no control plane, no Redis Cluster, no chaos, no lint (a few minutes).
	go test -short -count=1 -timeout 10m $$(go list ./... | grep -v $(FAST_SKIPS))

# CHAOS_PACKAGE runs on its own, after the other packages: it loads both cores with the
# whole replicated system for about two minutes, and its figures (p99 per fault, in
# docs/benchmarks.md) would otherwise measure whichever other package ran beside it.
CHAOS_PACKAGE := github.com/sigops/sigops/test/chaos
.PHONY: test-chaos
test-chaos: ## Run the chaos tests alone (make test runs them too): kill -9 of an executor, a webhookd and the Redis primary (Sentinels) or a master (Cluster) at 300 signals/s (SIGOPS_CHAOS_SEED replays a run).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test $(GO_TEST_FLAGS) -v -run '^TestSignalsSurvive(CrashesAndFailover|AClusterMasterFailover)$$' ./test/chaos

.PHONY: test-cluster
test-cluster: ## Run the packages whose Redis use differs on a Cluster (CLUSTER_PACKAGES) on a local Redis Cluster.
	SIGOPS_TEST_REDIS=cluster KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test $(GO_TEST_FLAGS) $(CLUSTER_PACKAGES)

# FUZZTIME is a number of executions (Nx), not a duration: Go 1.26's fuzz coordinator can
# report a bare "context deadline exceeded" failure when a duration runs out while a worker
# is mid-call (fixed in Go 1.27), which would fail `make test` with nothing found. A count
# has no deadline to race; 200,000 executions take about 10 s here.
FUZZTIME ?= 2000000x
.PHONY: fuzz
fuzz: ## Fuzz the signal parser and symbol resolver (FUZZTIME each).
	go test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./runtime/signal
	go test -run '^$$' -fuzz '^FuzzResolve$$' -fuzztime $(FUZZTIME) ./runtime/signal

.PHONY: bench
bench: deps envtest ## Run the benchmarks (figures go in docs/benchmarks.md).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -run '^$$' -bench . -benchtime 1x -timeout 30m ./test/scale/...
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -run '^$$' -bench . -benchtime 1x -timeout 20m ./test/load/...
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -run '^$$' -bench . -benchtime 1x -timeout 20m ./test/e2e/...
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -run '^$$' -bench . -benchmem $$(go list ./... | grep -v -e /test/scale -e /test/load -e /test/e2e)

##@ Build

.PHONY: build
build: generate fmt vet ## Build the binaries into bin/.
	@for b in $(BINARIES); do go build -o $(LOCALBIN)/$$b ./cmd/$$b; done

# The images' tag and labels: the commit, and its time as every file's mtime, so the same
# commit gives the same image digests on any machine.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGES ?=
IMAGE_REPOSITORY ?= ghcr.io/sigops

.PHONY: images
images: ## Build the container images as tarballs in bin/images/ without a Docker engine (IMAGES=executor for one).
	go run ./hack/images -out $(LOCALBIN)/images -repository $(IMAGE_REPOSITORY) -version $(VERSION) -revision $(REVISION) -source-date-epoch $(SOURCE_DATE_EPOCH) $(IMAGES)

# The release's manifests: config/ copied with every sigops image as
# $(IMAGE_REPOSITORY)/<name>:$(VERSION)@sha256:<digest of bin/images/<name>.tar>. It builds
# the images of VERSION first, so the digests are those of the tarballs you push.
RELEASE_DIR ?= $(LOCALBIN)/release/config
.PHONY: release-manifests
release-manifests: images ## Write config/ for a release into bin/release/config, every image pinned by tag and digest (VERSION=v1.4.0).
	go run ./hack/release -version $(VERSION) -repository $(IMAGE_REPOSITORY) -images $(LOCALBIN)/images -config config -out $(RELEASE_DIR)

.PHONY: run
run: ## Start the whole local stack (control plane, Redis, manager, daemons, samples). Ctrl-C stops it. ARGS: -fresh starts empty, -redis=cluster|sentinel, -executors=N -webhookd=N -mcpd=N, -history-retention=10m.
	hack/local-stack.sh $(ARGS)

.PHONY: status
status: ## List the running local stack's programs: PID, restarts, health.
	@go run ./hack/localstack -status

##@ Dependencies

.PHONY: deps
deps: ## Install the system packages the tests and the local stack need (redis-server, nginx, chromium).
	hack/install-deps.sh

.PHONY: envtest
envtest: ## Build etcd, kube-apiserver, kube-controller-manager and kubectl from source into bin/k8s (cached).
	hack/setup-envtest.sh $(ENVTEST_ASSETS)

.PHONY: staticcheck
staticcheck: $(STATICCHECK) ## Install staticcheck into bin/.
$(STATICCHECK):
	GOBIN=$(LOCALBIN) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into bin/.
$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
