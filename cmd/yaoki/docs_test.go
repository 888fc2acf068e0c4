package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cliDoc returns docs/cli.md's text before the first command's section
// (what the commands share: the policy flags, the metrics flags) and the
// section "## yaoki NAME" of each command.
func cliDoc(t *testing.T) (shared string, sections map[string]string) {
	t.Helper()
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	parts := regexp.MustCompile(`(?m)^## yaoki (\w+)\n`).Split(string(b), -1)
	names := regexp.MustCompile(`(?m)^## yaoki (\w+)\n`).FindAllStringSubmatch(string(b), -1)
	sections = map[string]string{}
	for i, m := range names {
		sections[m[1]] = parts[i+1]
	}
	return parts[0], sections
}

// flagRE finds the long flags a text names: --max-attempts, --state.
var flagRE = regexp.MustCompile("(?:^|[^-\\w])--([a-z][a-z0-9-]*[a-z0-9])")

// TestDocsAgreeWithFlags: every flag of plan, exec, flaky and the
// deadletter subcommands is named in docs/cli.md (in the command's section,
// or, for the flags commands share, before the first section), and every
// flag a command's synopsis names is one of its flags.
func TestDocsAgreeWithFlags(t *testing.T) {
	shared, sections := cliDoc(t)
	root := newRoot()
	var cmds []*cobra.Command
	for _, name := range []string{"plan", "exec", "flaky", "deadletter"} {
		c, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		cmds = append(cmds, c.Commands()...)
	}
	for _, c := range cmds {
		top := strings.Fields(strings.TrimPrefix(c.CommandPath(), "yaoki "))[0]
		sec, ok := sections[top]
		if !ok {
			t.Errorf("docs/cli.md has no section ## yaoki %s", top)
			continue
		}
		c.InheritedFlags() // merges the parent's persistent flags (--postgres) into c.Flags()
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			named := "--" + f.Name
			short := regexp.MustCompile("[\\s\\[`(]-" + f.Shorthand + "[\\s\\]`),:]")
			if !strings.Contains(sec, named) && !strings.Contains(shared, named) && (f.Shorthand == "" || !short.MatchString(sec)) {
				t.Errorf("yaoki %s: flag %s is not in docs/cli.md", strings.TrimPrefix(c.CommandPath(), "yaoki "), named)
			}
		})
		if c.HasParent() && c.Parent().Name() != "yaoki" {
			continue // a subcommand: the synopsis is its parent's
		}
		syn, _, _ := strings.Cut(sec[strings.Index(sec, "**Synopsis**"):], "\n\n")
		var all []*cobra.Command
		all = append(all, c)
		all = append(all, c.Commands()...)
		for _, m := range flagRE.FindAllStringSubmatch(syn, -1) {
			if !slices.ContainsFunc(all, func(c *cobra.Command) bool {
				return c.Flags().Lookup(m[1]) != nil || c.PersistentFlags().Lookup(m[1]) != nil
			}) {
				t.Errorf("docs/cli.md's synopsis of yaoki %s names --%s, which it does not have", top, m[1])
			}
		}
	}
}
