package e2e

import (
	"fmt"
	"os"
	"runtime"
	"testing"
)

// TestProxyGOMAXPROCS checks the Go threads yaoki proxy says it runs
// with: three per CPU that Go finds, at most 8 beyond them, unless the
// environment sets GOMAXPROCS.
func TestProxyGOMAXPROCS(t *testing.T) {
	const up = "http://127.0.0.1:9" // not called: the line is printed at start
	want := 0
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		// The proxy inherits the environment's setting.
		if _, err := fmt.Sscan(v, &want); err != nil {
			t.Skipf("GOMAXPROCS=%q in the environment", v)
		}
	} else {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
		runtime.SetDefaultGOMAXPROCS()
		cpus := runtime.GOMAXPROCS(0)
		want = cpus + min(2*cpus, 8)
	}
	p := startProxy(t, "--upstream", up)
	p.waitLine(t, fmt.Sprintf(", GOMAXPROCS %d", want))

	p1 := startProxyEnv(t, []string{"GOMAXPROCS=1"}, "--upstream", up)
	p1.waitLine(t, ", GOMAXPROCS 1")
}
