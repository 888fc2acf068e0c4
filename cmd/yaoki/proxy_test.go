package main

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestProxyGC(t *testing.T) {
	// Without GOGC in the environment the proxy collects at
	// proxyGCPercent; with it, the environment's setting stands.
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	setProxyGC()
	if got := debug.SetGCPercent(100); got != proxyGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, proxyGCPercent)
	}
	t.Setenv("GOGC", "100")
	setProxyGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100: GC percent %d, want 100 (the environment's)", got)
	}
}
