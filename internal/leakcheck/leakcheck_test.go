package leakcheck

import (
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestLeakedFindsABlockedGoroutine(t *testing.T) {
	before := Snapshot()
	stop := make(chan struct{})
	started := make(chan struct{})
	go func() {
		close(started)
		<-stop
	}()
	<-started
	leaked := Leaked(before, 0)
	if len(leaked) != 1 || !strings.Contains(leaked[0], "TestLeakedFindsABlockedGoroutine") {
		t.Fatalf("Leaked found %d goroutines, want the one this test started:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
	close(stop)
	if leaked := Leaked(before, Settle); len(leaked) != 0 {
		t.Fatalf("after it ended, Leaked still found:\n%s", strings.Join(leaked, "\n\n"))
	}
}

func Example() {
	// In a package's main_test.go:
	//
	//	func TestMain(m *testing.M) { leakcheck.Main(m) }
	before := Snapshot()
	// ... a test that starts and stops servers ...
	_ = Leaked(before, Settle) // nil: nothing was left running
}
