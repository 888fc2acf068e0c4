package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// versionText is what yaoki version and yaoki --version print: the module
// version, and the VCS revision, its time and whether the tree had
// uncommitted changes when the toolchain recorded them.
func versionText() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "yaoki (no build information)\n"
	}
	s := fmt.Sprintf("yaoki %s", cli.Version())
	var rev, at, modified string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.time":
			at = kv.Value
		case "vcs.modified":
			modified = kv.Value
		}
	}
	if rev != "" {
		s += " revision " + rev
		if modified == "true" {
			s += " (modified)"
		}
		if at != "" {
			s += " of " + at
		}
	}
	return s + fmt.Sprintf(" %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print yaoki's version and the revision it was built from",
		Long: `version prints the module version, the VCS revision the binary was built from
(with "(modified)" if the tree had uncommitted changes) and its commit time,
and the Go version and platform, as the Go toolchain recorded them in the
binary. yaoki --version prints the same.`,
		Example: `  yaoki version`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(cmd.OutOrStdout(), versionText())
			return nil
		},
	}
}
