package proxy

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestProxyGC(t *testing.T) {
	// Without GOGC in the environment the proxy collects at
	// gcPercent; with it, the environment's setting stands.
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	setGC()
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, gcPercent)
	}
	t.Setenv("GOGC", "100")
	setGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100: GC percent %d, want 100 (the environment's)", got)
	}
}
