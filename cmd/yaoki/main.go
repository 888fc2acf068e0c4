// Command yaoki runs retry policies where Go code cannot: it simulates them
// on virtual time (sim), prints their schedules (plan), sends HTTP requests
// through them (http), re-runs commands (exec), serves faults to test
// other clients against (flaky), shows and redrives the dead letters kept
// in PostgreSQL (deadletter), and applies them to every call through a
// reverse proxy, for services in any language (proxy).
//
// Each subcommand is a package under internal/ (curl, proxy, simcli,
// plan, execcli, flaky, deadlettercli), with the flags and telemetry they
// share; main wires them together.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/curl"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/deadlettercli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/execcli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flaky"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/plan"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/proxy"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/simcli"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the command line args and returns the process exit code.
func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			if msg := err.Error(); msg != "" {
				fmt.Fprintln(os.Stderr, "yaoki:", msg)
			}
			return ec.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "yaoki:", err)
		return cli.ExitUsage
	}
	return 0
}

// newRoot builds the yaoki command and its subcommands, anew at each call
// (the tests build one per case).
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "yaoki",
		Short:         "Retry policies you can see, simulate and use from the command line",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       cli.Version(),
	}
	root.SetVersionTemplate(versionText())
	// A flag value that does not parse (--max-attempts x) is bad usage:
	// say which flag, what was given, and where the accepted values are.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cli.Exit(cli.ExitUsage, fmt.Sprintf("%v\nsee '%s --help' for the flags and the values they accept", cli.SuggestFlag(cli.FlagValueError(err), c.Flags()), c.CommandPath()))
	})
	root.AddCommand(simcli.NewCommand(), plan.NewCommand(), execcli.NewCommand(), flaky.NewCommand(), curl.NewCommand(),
		proxy.NewCommand(), deadlettercli.NewCommand(), newVersionCmd())
	return root
}
