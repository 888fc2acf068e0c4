package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// Every subcommand's --help ends with examples that start with "yaoki
// NAME", so that a user can copy one and run it.
func TestHelpHasExamples(t *testing.T) {
	root := newRoot()
	for _, c := range root.Commands() {
		name := c.Name()
		if name == "help" || name == "completion" {
			continue
		}
		var out bytes.Buffer
		r := newRoot()
		r.SetOut(&out)
		r.SetErr(&out)
		r.SetArgs([]string{name, "--help"})
		if err := r.Execute(); err != nil {
			t.Fatalf("yaoki %s --help: %v", name, err)
		}
		help := out.String()
		_, examples, ok := strings.Cut(help, "Examples:\n")
		if !ok {
			t.Errorf("yaoki %s --help has no Examples section:\n%s", name, help)
			continue
		}
		if !strings.Contains(examples, "yaoki "+name) {
			t.Errorf("yaoki %s --help: no example runs yaoki %s:\n%s", name, name, examples)
		}
	}
	if len(root.Commands()) < 5 {
		t.Errorf("got %d subcommands, want at least sim, plan, exec, flaky, http", len(root.Commands()))
	}
}

// Help lists only the flags that apply: exec has no throttling answers
// and no server hints, so no --throttle-base nor --max-retry-after, and
// giving them is bad usage that says why.
func TestHelpListsApplicableFlags(t *testing.T) {
	var out bytes.Buffer
	r := newRoot()
	r.SetOut(&out)
	r.SetErr(&out)
	r.SetArgs([]string{"exec", "--help"})
	if err := r.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"--throttle-base", "--max-retry-after"} {
		if strings.Contains(out.String(), name) {
			t.Errorf("yaoki exec --help mentions %s, which does not apply to exec", name)
		}
		if code := run([]string{"exec", name, "1s", "--", "true"}); code != cli.ExitUsage {
			t.Errorf("yaoki exec %s 1s exited %d, want %d", name, code, cli.ExitUsage)
		}
	}
}
