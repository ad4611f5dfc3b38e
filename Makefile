# Every go command needs this toolchain (the Temporal server needs Go >= 1.26.10).
export GOTOOLCHAIN := go1.27.3

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# No -trimpath here: the binaries then share every compiled package with
# the tests' build, so a cold build cache compiles the tree once for both.
# The container image (Dockerfile) builds with -trimpath.
LDFLAGS  := -s -w -X main.version=$(VERSION)
# The workflow code that workflowcheck verifies for determinism.
WORKFLOW_PKGS := ./internal/session/... ./internal/sessionflow/...

# The packages whose tests run a Temporal server (in the test process or in
# a child). They run once, without the race detector (which would compile
# the server a second time and slow every engine it starts), their tests
# in parallel. Every other package runs with -race. lint fails when a
# package outside this list links the server.
INTEGRATION_PKGS := ./agenttest/... ./cmd/... ./examples/orders/... ./internal/chat/... ./internal/devserver/... ./internal/e2e/... ./internal/evalrun/...
# How many integration tests of one package run at once (t.Parallel).
INTEGRATION_PARALLEL ?= 4

# The short fuzz pass of make test: each target runs this long; make fuzz
# runs them longer.
FUZZTIME ?= 4s
LONG_FUZZTIME ?= 2m

# Where make test keeps each run's go test -json events for the summary.
REPORT := $(CURDIR)/.test-report
# Tests that need an outside peer (Chromium, aimock...) record it here when
# the peer is missing and CI is not set (CI=true fails them instead).
SKIPPED_PEERS := $(CURDIR)/.skipped-peers

.PHONY: all build dev dev-frameworks dev-reset mail-catcher test test-unit test-integration test-fuzz test-summary test-peers fuzz bench soak proto lint clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/dex-agent-worker ./cmd/dex-agent-worker
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/dex-runner-stepwise ./plugins/stepwise/cmd/dex-runner-stepwise
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/dex-runner-orders ./examples/orders

# Runs the demo on the embedded engine: no API key, no other service.
dev: build
	./bin/dex-agent-worker dev --config configs/dev.yaml --data-dir .dex

# The frameworks demo (configs/frameworks.yaml): the orders agent written
# with the OpenAI Agents SDK (Python and TypeScript), Pydantic AI, LangGraph
# and Google ADK, on scripted models. It makes the Python SDK's virtualenv
# and builds the TypeScript example first (both skip what is up to date).
dev-frameworks: build
	bash sdk/python/install.sh
	bash examples/orders-openai-agents-ts/install.sh
	./bin/dex-agent-worker dev --config configs/frameworks.yaml --data-dir .dex-frameworks

# A mail catcher for the demo's approvals by mail: Python's aiosmtpd (in a
# virtualenv it makes) on 127.0.0.1:1025, printing each mail it gets.
mail-catcher:
	bash internal/testpeer/smtp/install.sh
	internal/testpeer/smtp/.venv/bin/python internal/testpeer/smtp/catcher.py --port 1025 --print

# The demo from the start: deletes .dex (every session, message and demo
# order) first, then runs it as make dev does.
dev-reset: build
	./bin/dex-agent-worker dev --reset --config configs/dev.yaml --data-dir .dex

# The whole suite, each test once: lint (gofmt, vet, workflowcheck, build
# outputs in git), the unit packages with the race detector, the integration
# packages (kill tests, replay of recorded histories, the CLI, the web page
# in Chromium, the README tour, a long session) without it, and a short run
# of every fuzz target. It ends with a summary: packages, tests run, every
# skipped test with its reason, and the ten slowest tests.
test: build lint
	@rm -rf $(REPORT) $(SKIPPED_PEERS)
	@$(MAKE) --no-print-directory -k test-unit test-integration test-fuzz; status=$$?; \
		$(MAKE) --no-print-directory test-summary || status=1; exit $$status

# The test runner that prints go test's results and keeps its events.
TESTREPORT := bin/testreport
$(TESTREPORT): $(wildcard internal/testreport/*.go)
	$(GO) build -o $@ ./internal/testreport

# The unit packages, with the race detector: the root module's, then the
# runner SDK's own module (pluginapi).
test-unit: $(TESTREPORT)
	DEX_SKIPPED_PEERS_FILE=$(SKIPPED_PEERS) $(TESTREPORT) run -o $(REPORT)/unit.json -- \
		$(GO) test -json -race -count=1 -timeout 15m $$(bash scripts/unit-pkgs.sh $(INTEGRATION_PKGS))
	cd pluginapi && DEX_SKIPPED_PEERS_FILE=$(abspath $(SKIPPED_PEERS)) $(abspath $(TESTREPORT)) run -o $(abspath $(REPORT))/unit-pluginapi.json -- \
		$(GO) test -json -race -count=1 -timeout 15m ./...

# The integration packages, once each, with the binaries make build made
# (agenttest.BuildBinary takes them from DEX_TEST_BIN_DIR).
test-integration: $(TESTREPORT) build
	DEX_SKIPPED_PEERS_FILE=$(SKIPPED_PEERS) DEX_TEST_BIN_DIR=$(CURDIR)/bin $(TESTREPORT) run -o $(REPORT)/integration.json -- \
		$(GO) test -json -count=1 -timeout 25m -parallel $(INTEGRATION_PARALLEL) $(INTEGRATION_PKGS)

# Every fuzz target for FUZZTIME, two at a time with one fuzzing process each.
test-fuzz: $(TESTREPORT)
	@mkdir -p $(REPORT)
	@bash scripts/fuzz.sh $(FUZZTIME) $(REPORT) $(TESTREPORT)

test-summary: $(TESTREPORT)
	@$(TESTREPORT) summary $(REPORT)/*.json
	@if [ -s $(SKIPPED_PEERS) ]; then \
		echo; echo "These tests were SKIPPED because a test peer is missing:"; sort -u $(SKIPPED_PEERS); \
		echo "Install every peer with: make test-peers (CI=true turns a missing peer into a failure)"; fi

# Installs the real peers the tests run against: Debian's Chromium and
# playwright-core for the web page, aimock for the model providers,
# PostgreSQL 15 for the message store, server-everything for the MCP sources,
# redis-server 7.0 for the Redis Streams events and the cluster test, the
# AI SDK (npm package ai) for the UI message stream tests, and the built
# examples/useChat page for its browser test.
test-peers:
	bash scripts/install-peers.sh

# Every fuzz target for LONG_FUZZTIME (make test runs each for FUZZTIME).
fuzz: $(TESTREPORT)
	@mkdir -p $(REPORT)
	@bash scripts/fuzz.sh $(LONG_FUZZTIME) $(REPORT) $(TESTREPORT)

# Benchmarks: a session turn (with metrics off and on) against the same
# pattern on bare Temporal (compare their ns/op), the first streamed delta, the message store, the
# transcript handed to a runner, and, once (it builds a session 2,000 turns
# deep), a turn at depth 2,000 against shallow sessions on the same worker
# (time-ratio, median-ratio, bytes-ratio); then the load test (loadtest's
# driver: 40 sessions, 20 at once, 5 turns each, with the echo agent) on the
# embedded engine with one process, and with one and two worker processes
# behind an API process on Redis and PostgreSQL (turns/s, turn and first
# text_delta p50/p99, and each process's CPU time).
# The summary reads what each benchmark printed (tee), so a failing one must
# still fail the recipe: pipefail.
bench: SHELL := /bin/bash
bench: .SHELLFLAGS := -o pipefail -c
bench: build
	@mkdir -p .bench && : > .bench/bench.txt
	$(GO) test -run='^$$' -bench='^Benchmark(SessionTurn|BareTemporalTurn|FirstDelta|CancelTurn|CancelProviderStream|AdapterTurn)$$' -benchtime=$${BENCHTIME:-50x} -count=$${BENCHCOUNT:-3} -timeout 30m ./internal/e2e/ | tee -a .bench/bench.txt
	$(GO) test -run='^$$' -bench=. -benchtime=$${BENCHTIME:-50x} -count=$${BENCHCOUNT:-3} -timeout 30m ./internal/transcript/ | tee -a .bench/bench.txt
	cd pluginapi && $(GO) test -run='^$$' -bench=. -benchtime=$${BENCHTIME:-50x} -count=$${BENCHCOUNT:-3} -timeout 30m . | tee -a ../.bench/bench.txt
	$(GO) test -run='^$$' -bench='^BenchmarkColdStart$$' -benchtime=$${BENCHTIME:-50x} -count=$${BENCHCOUNT:-3} -timeout 30m ./internal/runnerhost/ | tee -a .bench/bench.txt
	$(GO) test -run='^$$' -bench='^BenchmarkTurnAtDepth(Compacted|Postgres)?$$' -benchtime=$${BENCHTIME:-50x} -count=1 -timeout 30m ./internal/e2e/ | tee -a .bench/bench.txt
	$(GO) test -run='^$$' -bench='^Benchmark(Load|CachedSessionMemory|TurnAtDepthHTTP)$$' -benchtime=1x -count=1 -timeout 30m -v ./internal/e2e/ | tee -a .bench/bench.txt
	@echo; echo "Summary (.bench/bench.txt):"; $(GO) run ./internal/benchreport .bench/bench.txt

# The long sessions at full length: 2,000 turns of 2 KiB messages (make test
# runs 800), and 2,000 turns past a 20,000-token context window with
# compaction (make test runs 200). They fail when the session stops running,
# a late turn adds more than 1.1x the history of turn 10, or a model call's
# input passes the window.
soak: build
	DEX_LONG_SESSION_TURNS=$${SOAK_TURNS:-2000} DEX_COMPACTION_TURNS=$${SOAK_TURNS:-2000} $(GO) test -run='^(TestLongSession|TestCompactionKeepsTheInputUnderTheWindow)$$' -count=1 -v -timeout 40m ./internal/e2e/

proto:
	bash proto/generate.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@bash scripts/check-tracked-files.sh
	@bash scripts/check-integration-pkgs.sh "$(INTEGRATION_PKGS)"
	$(GO) vet ./...
	cd pluginapi && $(GO) vet ./...
	$(GO) run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 $(WORKFLOW_PKGS)

clean:
	rm -rf bin $(REPORT) $(SKIPPED_PEERS)
