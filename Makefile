# MCP-Flow. `make test` is the whole test suite and does its own set-up;
# `make run` starts mcp-flow-server with a generated development certificate.
GO      ?= go
PKGS    := ./...
CORE    := ./wire/... ./jsonrpc/... ./codec/... ./certs/... ./flow/...
FUZZTIME ?= 60s

.PHONY: all build test vet race fuzz bench-codec generate run clean

all: build

build:
	$(GO) build -o bin/ ./cmd/...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet $(PKGS)

race:
	$(GO) test -race -count=1 $(CORE)

# test: everything CI runs. The race detector covers the core packages; the
# rest run once without it to keep the suite well inside its time budget.
test: vet race
	$(GO) test -count=1 $(PKGS)

# fuzz: every fuzz target for FUZZTIME each.
fuzz:
	@set -e; for pkg in ./wire ./codec; do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; $(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

bench-codec:
	$(GO) test -run='^$$' -bench=. -benchmem ./codec/...

# generate: the protobuf code (needs protoc: Debian's protobuf-compiler).
generate:
	@command -v protoc >/dev/null || { echo "installing protoc (Debian protobuf-compiler)"; apt-get install -y protobuf-compiler; }
	$(GO) generate ./...

run:
	$(GO) run ./cmd/mcp-flow-server

clean:
	rm -rf bin
