package simcli_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/simcli"
)

// The outage scenario at failure rates 0 and 1: against a dead server,
// yaoki's default budget lets each client add two retries in all.
func ExampleNewCommand() {
	var out bytes.Buffer
	cmd := simcli.NewCommand()
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"outage", "--p", "0,1", "--runs", "1", "--policies", "no retries,yaoki", "--out", ""})
	if err := cmd.Execute(); err != nil {
		fmt.Println(err)
		return
	}
	lines := strings.Split(out.String(), "\n")
	fmt.Println(strings.Join(lines[5:9], "\n"))
	// Output:
	// outage: attempts sent per call (100 clients × 10 calls/s for 10s, mean of 1 runs)
	//   p  no retries  yaoki
	//   0       1.000  1.000
	//   1       1.000  1.020
}
