package execcli_test

import (
	"errors"
	"fmt"
	"io"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/execcli"
)

// A command that always exits 75 (temporary failure) is run twice, and
// yaoki exec exits with its code.
func ExampleNewCommand() {
	cmd := execcli.NewCommand()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"--max-attempts", "2", "--base", "1ms", "--", "sh", "-c", "exit 75"})
	err := cmd.Execute()
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		fmt.Println("exit code", ec.ExitCode())
	}
	// Output: exit code 75
}
