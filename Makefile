# The one test command: every module of the workspace (go.work), with the
# race detector. Tests that need a real Redis, PostgreSQL or nginx start
# their own server on a loopback port when the binaries are installed
# (.ci/run installs them) and skip with a message otherwise.
GO ?= go
MODULES := $(shell $(GO) list -m -f '{{.Dir}}')
TESTFLAGS ?= -race -count=1 -timeout 15m

# bench/peers is a module of its own (the peer libraries are its
# dependencies, not the workspace's): its smoke and behaviour checks run in
# the test target, its benchmarks with ./bench/peers/run.sh.
.PHONY: test demo vet bench peers
test:
	@set -e; for d in $(MODULES); do \
		rel=$${d#$(CURDIR)}; rel=$${rel#/}; \
		echo "== go test $(TESTFLAGS) ./... in $${rel:-.}"; \
		(cd $$d && $(GO) test $(TESTFLAGS) ./...); \
	done
	@echo "== go test $(TESTFLAGS) -run 'TestSmoke|TestBehaviour' in bench/peers (outside the workspace)"
	@cd bench/peers && GOWORK=off $(GO) test $(TESTFLAGS) -run 'TestSmoke|TestBehaviour' .

demo:
	$(GO) run ./cmd/yaoki sim

peers:
	cd bench/peers && GOWORK=off ./run.sh

vet:
	@set -e; for d in $(MODULES); do (cd $$d && $(GO) vet ./...); done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
