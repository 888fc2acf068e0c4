// Package leakcheck fails a test binary that leaves goroutines behind: a
// server not closed, a response body not closed (its connection's reader
// and writer goroutines stay), a timer goroutine, a retry loop still
// waiting. Use it from TestMain:
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
//
// After the tests pass it compares the goroutines running with those that
// ran before them. Goroutines that are still finishing (a connection
// closing, a server shutting down) are given up to Settle to end; only
// those still there after it count as leaks. It is a test helper: it has
// no state of its own and reads nothing but the runtime's stacks.
package leakcheck

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// Settle is how long goroutines that are ending are given before they
// count as leaked. It bounds the wait; a clean run waits not at all.
const Settle = 5 * time.Second

// Main runs the tests and, if they passed, fails the binary when goroutines
// are left that were not there before. It does not return.
func Main(m *testing.M) {
	before := Snapshot()
	code := m.Run()
	if code == 0 {
		if leaked := Leaked(before, Settle); len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "leakcheck: %d goroutine(s) left running after the tests:\n\n%s\n",
				len(leaked), strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// Leaked returns the stacks of goroutines running now, and still after up
// to settle, that are not in before (a Snapshot taken earlier). Idle
// keep-alive connections of http.DefaultTransport are closed first: they
// belong to the process, not to a test.
func Leaked(before map[string]bool, settle time.Duration) []string {
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	deadline := time.Now().Add(settle)
	for wait := time.Millisecond; ; wait *= 2 {
		var extra []string
		for id, s := range current() {
			if !before[id] && !ignored(s) {
				extra = append(extra, s)
			}
		}
		if len(extra) == 0 || time.Now().After(deadline) {
			sort.Strings(extra)
			return extra
		}
		time.Sleep(min(wait, 100*time.Millisecond)) // goroutines that are ending need real time to end
	}
}

// Snapshot returns the ids of the goroutines running now.
func Snapshot() map[string]bool {
	ids := map[string]bool{}
	for id := range current() {
		ids[id] = true
	}
	return ids
}

// current returns every goroutine's stack but the caller's, by goroutine id.
func current() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 { // the first stack is the calling goroutine's
			continue
		}
		head, _, _ := strings.Cut(g, "\n")
		id := strings.Fields(head)
		if len(id) < 2 {
			continue
		}
		out[id[1]] = g
	}
	return out
}

// ignored reports goroutines that the runtime and the testing package run
// whatever the tests do.
func ignored(stack string) bool {
	for _, s := range []string{
		"testing.(*M).", "testing.tRunner", "testing.runTests", "runtime.goexit0",
		"os/signal.signal_recv", "runtime.ensureSigM", "created by runtime.gc",
		"runtime/trace.",
	} {
		if strings.Contains(stack, s) && !strings.Contains(stack, "yaoki-go/yaoki") {
			return true
		}
	}
	return false
}
