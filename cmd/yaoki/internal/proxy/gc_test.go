package proxy

import (
	"os"
	"runtime"
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

func TestProxyProcs(t *testing.T) {
	// Without GOMAXPROCS in the environment the proxy runs defaultProcs
	// of the runtime's default, however often it starts in one process;
	// with it, the environment's setting stands.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS")
	runtime.SetDefaultGOMAXPROCS()
	cpus := runtime.GOMAXPROCS(0)
	for range 2 {
		setProcs()
		if got := runtime.GOMAXPROCS(0); got != defaultProcs(cpus) {
			t.Fatalf("GOMAXPROCS unset: %d, want %d (%d CPUs)", got, defaultProcs(cpus), cpus)
		}
	}
	t.Setenv("GOMAXPROCS", "1")
	runtime.GOMAXPROCS(1)
	setProcs()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS=1: %d, want 1 (the environment's)", got)
	}
}

func TestDefaultProcs(t *testing.T) {
	// Three per CPU, at most maxExtraProcs beyond the CPUs.
	for cpus, want := range map[int]int{1: 3, 2: 6, 4: 12, 8: 16, 64: 72} {
		if got := defaultProcs(cpus); got != want {
			t.Errorf("defaultProcs(%d) = %d, want %d", cpus, got, want)
		}
	}
}
