package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// NoArgs is cobra.NoArgs in words a user can act on, for a command whose
// input is all flags. An argument given to a command with subcommands is
// said to be no subcommand of it, with the list and the nearest name; to a
// command with a --policy flag, an argument that looks like a file name
// ("retry.json") is pointed at --policy (and --config, where the command
// has one); otherwise the command says it
// takes no arguments. It exits with ExitUsage.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	a := args[0]
	// "sim herd", not "yaoki sim herd": the message follows "yaoki: ".
	path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	if cmd.HasAvailableSubCommands() {
		var names []string
		best, bestDist := "", 3
		for _, c := range cmd.Commands() {
			if !c.IsAvailableCommand() || c.Name() == "help" {
				continue
			}
			names = append(names, c.Name())
			if d := editDistance(a, c.Name()); d < bestDist {
				best, bestDist = c.Name(), d
			}
		}
		msg := fmt.Sprintf("%s has no subcommand %q: want one of %s", path, a, strings.Join(names, ", "))
		if best != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", best)
		}
		return Usagef("%s", msg)
	}
	if cmd.Flags().Lookup("policy") != nil && (filepath.Ext(a) != "" || strings.Contains(a, "/")) {
		if cmd.Flags().Lookup("config") != nil {
			return Usagef("%s takes no arguments, got %q: to load a file, write --config %s (the routes) or --policy %s (one policy)", path, a, a, a)
		}
		return Usagef("%s takes no arguments, got %q: to load a policy file, write --policy %s", path, a, a)
	}
	return Usagef("%s takes no arguments, got %q: its input is given by flags (see --help)", path, a)
}
