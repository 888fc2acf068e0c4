# The one test command: every module of the workspace (go.work), with the
# race detector. Tests that need a real Redis, PostgreSQL or nginx start
# their own server on a loopback port when the binaries are installed
# (.ci/run installs them) and skip with a message otherwise.
GO ?= go
MODULES := $(shell $(GO) list -m -f '{{.Dir}}')
TESTFLAGS ?= -race -count=1 -timeout 15m

.PHONY: test demo vet bench
test:
	@set -e; for d in $(MODULES); do \
		echo "== go test $(TESTFLAGS) ./... in $${d#$(CURDIR)/}"; \
		(cd $$d && $(GO) test $(TESTFLAGS) ./...); \
	done

demo:
	$(GO) run ./examples/quickstart

vet:
	@set -e; for d in $(MODULES); do (cd $$d && $(GO) vet ./...); done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
