package cli_test

import (
	"errors"
	"fmt"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// A subcommand refuses a value; the root command finds the exit code in the
// error it returns, wrapped or not.
func ExampleUsagef() {
	err := fmt.Errorf("http: %w", cli.Usagef("--retry %q: want a number of retries", "many"))
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		fmt.Println(ec.ExitCode(), err)
	}
	// Output: 2 http: --retry "many": want a number of retries
}
