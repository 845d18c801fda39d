# Foresight — build, test and tooling. `make help` lists the targets.

SHELL := /bin/bash
GO    ?= go
TOOLS := $(CURDIR)/.tools
BUF   := $(TOOLS)/npm/node_modules/.bin/buf
TS_PROTO := $(TOOLS)/npm/node_modules/.bin/protoc-gen-ts_proto

# Pinned tool versions: protoc-gen-go matches google.golang.org/protobuf in go.mod, and
# protoc-gen-go-grpc v1.6.2 writes code that needs grpc ≥ v1.64 (go.mod pins v1.85.0). buf and ts-proto are pinned,
# with everything they pull in, by tools/package-lock.json; protoc and grpc_python_plugin are
# Debian's (protobuf-compiler, protobuf-compiler-grpc), which .ci/run installs.
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
# golang.org/x/tools for deadcode, the unreachable-code check of make lint.
X_TOOLS_VERSION            := v0.52.0

# The Go plugins are the folders plugins/<name> that hold a main.go (test/e2e finds them the same way).
GO_PLUGINS := $(patsubst plugins/%/main.go,%,$(wildcard plugins/*/main.go))
PLUGINS    := $(addprefix bin/plugins/,$(GO_PLUGINS))
# Node packages: the TypeScript plugin kit and the example TypeScript plugin, each pinned by its
# package-lock.json and installed with npm ci.
NODE_PKGS := plugins/sdk/typescript plugins/ts-filter
NODE_DEPS := $(addsuffix /node_modules/.package-lock.json,$(NODE_PKGS))
HOST_VERSION := $(shell cat VERSION)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

.PHONY: build
build: go-build bin/plugins/ts-filter ## build bin/foresight, every Go plugin into bin/plugins/<name>, and the TypeScript example plugin

# go-build needs Go and nothing else. The Go plugins build in one invocation, which compiles and
# links them in parallel; each embeds the VERSION file beside its main.go.
.PHONY: go-build
go-build: bin/foresight ## build what needs only Go: bin/foresight and the Go plugins
	$(GO) build -trimpath -o bin/plugins/ $(addprefix ./plugins/,$(GO_PLUGINS))

.PHONY: bin/foresight
bin/foresight:
	$(GO) build -trimpath -ldflags "-X main.version=$(HOST_VERSION)" -o $@ ./cmd/foresight

.PHONY: $(PLUGINS)
$(PLUGINS): bin/plugins/%:
	$(GO) build -trimpath -o $@ ./plugins/$*

.PHONY: bin/plugins/ts-filter
bin/plugins/ts-filter: system-tools $(NODE_DEPS) ## the TypeScript example filter: compiled, with its runtime node_modules
	cd plugins/ts-filter && npm run --silent build

# npm ci reinstalls a package's dependencies exactly as its lockfile pins them.
%/node_modules/.package-lock.json: %/package.json %/package-lock.json
	cd $* && npm ci --silent --no-audit --no-fund

# The public request traces the trace-replay tests of sim/workload read (Azure LLM inference 2023,
# Mooncake; not in the repository, see sim/workload/README.md): $FORESIGHT_TRACE_DIR when set, else
# the first directory named traces in the repository, beside it, or in a folder beside it.
TRACE_DIR := $(or $(FORESIGHT_TRACE_DIR),$(patsubst %/,%,$(dir $(firstword $(wildcard $(addsuffix /azure2023_conv.csv,traces ../traces ../*/traces))))))

# The Helm chart is linted, rendered and checked by the tests in deploy/, with Helm's Go packages.
.PHONY: test
test: system-tools $(NODE_DEPS) kube-apiserver ## run the whole test suite: Go (unit, shim, end-to-end with real plugin processes), the Python kit, the TypeScript kit, the Helm chart
	@if [ -n "$(TRACE_DIR)" ]; then echo "trace-replay tests: the traces in $(TRACE_DIR)"; \
	  else echo "trace-replay tests: skipped, no traces directory found (set FORESIGHT_TRACE_DIR; sim/workload/README.md says where to get them)"; fi
	FORESIGHT_TRACE_DIR=$(abspath $(TRACE_DIR)) $(GO) test -race -count=1 ./...
	/usr/bin/python3 plugins/sdk/python/tests/run.py
	cd plugins/sdk/typescript && npm test --silent
	cd plugins/ts-filter && npm test --silent

# kube-apiserver and etcd for the tests against a real API server (internal/kubeapi, which runs
# this same build when a test starts one), from the module tools/kubeapi: k8s.io/kubernetes and
# etcd at the versions its go.mod pins. A first build compiles Kubernetes (minutes); after that go
# build finds them up to date in under a second.
.PHONY: kube-apiserver
kube-apiserver: ## build .tools/bin/kube-apiserver and .tools/bin/etcd (tools/kubeapi) for the tests against a real API server
	cd tools/kubeapi && CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOWORK=off $(GO) build -trimpath -o $(TOOLS)/bin/ k8s.io/kubernetes/cmd/kube-apiserver ./etcd

.PHONY: helm-check
helm-check: ## lint the chart as helm lint --strict does, with its defaults and each value set of deploy/helm/foresight/ci; render and check it; fail when deploy/manifests is stale (make test runs it too)
	$(GO) test -race -count=1 ./deploy/

.PHONY: manifests
manifests: ## regenerate deploy/manifests/foresight.yaml: helm template of the chart's defaults
	$(GO) test -count=1 -run TestManifestsUpToDate ./deploy/ -args -update

.PHONY: profiles
profiles: build ## regenerate examples/llumnix-profiles: Llumnix profiles of both engine families' default presets (reproducible byte for byte)
	for p in llama-3.1-8b-h100-tp2 sim-8b-h100-32slots; do \
	  bin/foresight profile --preset $$p --out examples/llumnix-profiles/$$p --timestamp 2026-11-25T00:00:00Z || exit 1; done

.PHONY: lint
lint: $(TOOLS)/bin/deadcode $(BUF) ## go vet, gofmt check, unreachable code, buf lint and buf breaking against main
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	tools/deadcode.sh $(TOOLS)/bin/deadcode
	$(BUF) lint
	$(MAKE) --no-print-directory breaking

.PHONY: generate
generate: $(TOOLS)/bin/protoc-gen-go $(TOOLS)/bin/protoc-gen-go-grpc $(BUF) system-tools ## regenerate the Go code beside proto/ and the Python and TypeScript code in proto/gen (committed; reproducible byte for byte)
	$(BUF) generate

.PHONY: generate-check
generate-check: generate ## fail when the committed generated code differs from what `make generate` writes
	@if [ -n "$$(git status --porcelain -- proto)" ]; then git status --short -- proto; \
	  echo "generated code is stale: run make generate and commit"; exit 1; fi

.PHONY: breaking
breaking: $(BUF) ## check the contracts for breaking changes against main (a protocol-2 change must not land on protocol 1)
	@if git rev-parse --verify -q main >/dev/null; then $(BUF) breaking --against '.git#branch=main'; \
	  else echo "buf breaking: no local main branch to compare with; skipped"; fi

.PHONY: bench
bench: build ## benchmark the pipeline over real plugin processes (JSON on stdout)
	bin/foresight bench pipeline --config examples/pipeline.yaml --endpoints 100 --cycles 20000 --concurrency 8 --json

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each (default 10m), one after the other; a failing input lands in testdata/fuzz
	tools/fuzz.sh $(or $(FUZZTIME),10m)

# DEMO_FLAGS are flags for the demo (docs/cli.md, foresight demo), e.g. DEMO_FLAGS="--duration 20s".
.PHONY: run
run: go-build ## build the router and the Go plugins (Go is all it needs) and run the demo
	bin/foresight demo $(DEMO_FLAGS)

.PHONY: tools
tools: $(TOOLS)/bin/protoc-gen-go $(TOOLS)/bin/protoc-gen-go-grpc $(TOOLS)/bin/deadcode $(BUF) system-tools ## install the pinned code generators into .tools

.PHONY: system-tools
system-tools: ## install what Debian provides and the build needs, when missing (npm, gcc, protoc, Python gRPC, chromium)
	@tools/system-deps.sh

$(TOOLS)/bin/protoc-gen-go:
	GOBIN=$(TOOLS)/bin $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)

$(TOOLS)/bin/protoc-gen-go-grpc:
	GOBIN=$(TOOLS)/bin $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

$(TOOLS)/bin/deadcode:
	GOBIN=$(TOOLS)/bin $(GO) install golang.org/x/tools/cmd/deadcode@$(X_TOOLS_VERSION)

$(BUF) $(TS_PROTO) &: tools/package.json tools/package-lock.json | system-tools
	mkdir -p $(TOOLS)/npm && cp tools/package.json tools/package-lock.json $(TOOLS)/npm/
	cd $(TOOLS)/npm && npm install --silent --no-audit --no-fund
	touch $(BUF) $(TS_PROTO)

.PHONY: clean
clean: ## remove build outputs (keeps .tools)
	rm -rf bin
