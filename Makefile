# Every go command needs this toolchain (the Temporal server needs Go >= 1.26.10).
export GOTOOLCHAIN := go1.27.3

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
# The workflow code that workflowcheck verifies for determinism.
WORKFLOW_PKGS := ./internal/session/...
FUZZTIME ?= 8s

.PHONY: all build dev test test-unit test-peers fuzz bench soak proto lint clean

all: build

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/dex-agent-worker ./cmd/dex-agent-worker
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/dex-runner-stepwise ./plugins/stepwise/cmd/dex-runner-stepwise
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/dex-runner-orders ./examples/orders

# Runs the demo on the embedded engine: no API key, no other service.
dev: build
	./bin/dex-agent-worker dev --config configs/dev.yaml --data-dir .dex

# Tests that need an outside peer (Chromium, aimock) record it here when
# the peer is missing and CI is not set (CI=true fails them instead).
SKIPPED_PEERS := $(CURDIR)/.skipped-peers

# The whole suite: lint (gofmt, vet, workflowcheck), the unit tests with the
# race detector, the integration tests (kill tests included), replay of
# recorded histories, and a short run of every fuzz target. It ends by
# naming any test skipped for a missing peer and how to install it.
test: build lint
	@rm -f $(SKIPPED_PEERS)
	DEX_SKIPPED_PEERS_FILE=$(SKIPPED_PEERS) $(GO) test -race -short -count=1 -timeout 20m ./...
	DEX_SKIPPED_PEERS_FILE=$(SKIPPED_PEERS) $(GO) test -count=1 -timeout 40m ./...
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME)
	@if [ -s $(SKIPPED_PEERS) ]; then \
		echo; echo "These tests were SKIPPED because a test peer is missing:"; sort -u $(SKIPPED_PEERS); \
		echo "Install every peer with: make test-peers (CI=true turns a missing peer into a failure)"; fi

# The unit tests alone, with the race detector.
test-unit:
	$(GO) test -race -short -count=1 ./...

# Installs the real peers the tests run against: Debian's Chromium and
# playwright-core for the web page, aimock for the model providers,
# PostgreSQL 15 for the message store, server-everything for the MCP sources,
# redis-server 7.0 for the Redis Streams events and the cluster test, the
# AI SDK (npm package ai) for the UI message stream tests, and the built
# examples/useChat page for its browser test.
test-peers:
	bash internal/webui/browsertest/install.sh
	bash plugins/stepwise/model/testdata/aimock/install.sh
	bash internal/transcript/pgtest/install.sh
	bash internal/mcpsource/testdata/install.sh
	bash internal/events/redistest/install.sh
	bash internal/e2e/testdata/aisdk/install.sh
	bash examples/useChat/install.sh
	bash examples/runner-ts/install.sh

fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzLoadBytes$$' -fuzztime=$(FUZZTIME) ./internal/config
	$(GO) test -run='^$$' -fuzz='^FuzzParseHeaders$$' -fuzztime=$(FUZZTIME) ./internal/config
	$(GO) test -run='^$$' -fuzz='^FuzzToolArguments$$' -fuzztime=$(FUZZTIME) ./plugins/stepwise
	$(GO) test -run='^$$' -fuzz='^FuzzRunModelStepResponse$$' -fuzztime=$(FUZZTIME) ./pluginapi
	$(GO) test -run='^$$' -fuzz='^FuzzExecuteToolResponse$$' -fuzztime=$(FUZZTIME) ./pluginapi
	$(GO) test -run='^$$' -fuzz='^FuzzParseToken$$' -fuzztime=$(FUZZTIME) ./internal/events
	$(GO) test -run='^$$' -fuzz='^FuzzParseRedisToken$$' -fuzztime=$(FUZZTIME) ./internal/events
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeBodies$$' -fuzztime=$(FUZZTIME) ./internal/httpapi
	$(GO) test -run='^$$' -fuzz='^FuzzParseListQuery$$' -fuzztime=$(FUZZTIME) ./internal/httpapi
	$(GO) test -run='^$$' -fuzz='^FuzzUIChatRequest$$' -fuzztime=$(FUZZTIME) ./internal/httpapi
	$(GO) test -run='^$$' -fuzz='^FuzzTranslate$$' -fuzztime=$(FUZZTIME) ./internal/uistream
	$(GO) test -run='^$$' -fuzz='^FuzzDecide$$' -fuzztime=$(FUZZTIME) ./internal/approvalrules
	$(GO) test -run='^$$' -fuzz='^FuzzParseSessionListQuery$$' -fuzztime=$(FUZZTIME) ./internal/httpapi
	$(GO) test -run='^$$' -fuzz='^FuzzSessionScopeRules$$' -fuzztime=$(FUZZTIME) ./internal/httpapi
	$(GO) test -run='^$$' -fuzz='^FuzzSSE$$' -fuzztime=$(FUZZTIME) ./httpclient/sse
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeChunk$$' -fuzztime=$(FUZZTIME) ./internal/transcript
	$(GO) test -run='^$$' -fuzz='^FuzzToolName$$' -fuzztime=$(FUZZTIME) ./internal/mcpsource
	$(GO) test -run='^$$' -fuzz='^FuzzServerAnswers$$' -fuzztime=$(FUZZTIME) ./internal/mcpsource

# Benchmarks: a session turn (with metrics off and on) against the same
# pattern on bare Temporal (compare their ns/op), the first streamed delta, the message store, the
# transcript handed to a runner, and, once (it builds a session 2,000 turns
# deep), a turn at depth 2,000 against shallow sessions on the same worker
# (time-ratio, median-ratio, bytes-ratio); then the load test (loadtest's
# driver: 40 sessions, 20 at once, 5 turns each, with the echo agent) on the
# embedded engine with one process, and with one and two worker processes
# behind an API process on Redis and PostgreSQL (turns/s, turn and first
# text_delta p50/p99, and each process's CPU time).
bench: build
	$(GO) test -run='^$$' -bench='^Benchmark(SessionTurn|BareTemporalTurn|FirstDelta|CancelTurn)$$' -benchtime=$${BENCHTIME:-50x} -count=$${BENCHCOUNT:-3} -timeout 30m ./internal/e2e/
	$(GO) test -run='^$$' -bench=. -benchtime=$${BENCHTIME:-50x} -count=$${BENCHCOUNT:-3} -timeout 30m ./internal/transcript/ ./pluginapi/
	$(GO) test -run='^$$' -bench='^BenchmarkTurnAtDepth(Compacted)?$$' -benchtime=$${BENCHTIME:-50x} -count=1 -timeout 30m ./internal/e2e/
	$(GO) test -run='^$$' -bench='^BenchmarkLoad$$' -benchtime=1x -count=1 -timeout 30m -v ./internal/e2e/

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
	$(GO) vet ./...
	$(GO) run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 $(WORKFLOW_PKGS)

clean:
	rm -rf bin
