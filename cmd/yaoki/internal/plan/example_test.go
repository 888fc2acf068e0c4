package plan_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/plan"
)

// Three attempts of exponential backoff from 100 ms without jitter: the
// waits, and the worst case.
func ExampleNewCommand() {
	var out bytes.Buffer
	cmd := plan.NewCommand()
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"--max-attempts", "3", "--base", "100ms", "--jitter", "none"})
	if err := cmd.Execute(); err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "every retried error") || strings.HasPrefix(l, "worst case:") {
			fmt.Println(l)
		}
	}
	// Output:
	// every retried error: 2 retries, exponential ×2 from 100ms, cap 20s, no jitter
	// worst case: 300ms (every wait at its longest, plus the attempts' own time: no per-attempt timeout)
}
