package simcli

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/sim"
)

// FuzzPolicies: whatever --policies says, the selection is refused in the
// flag's words or is a run of the scenario's policies whose names, joined
// by commas, are what the flag was given (pflag splits the value at
// commas, also those inside a name).
func FuzzPolicies(f *testing.F) {
	for _, s := range []string{"yaoki", "yaoki, retrying at once", "yaoki,no retries", `"yaoki, retrying at once",no retries`,
		"nobody", ",", "", `"`, "yaoki,,yaoki", " yaoki"} {
		f.Add(s)
	}
	all := sim.RateLimitPolicies()
	f.Fuzz(func(t *testing.T, value string) {
		fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
		only := fs.StringSlice("policies", nil, "")
		if err := fs.Set("policies", value); err != nil {
			return // pflag refuses it (an unbalanced quote) before us
		}
		got, err := pickNamed(*only, all, func(p sim.Policy) string { return p.Name }, "this scenario")
		if err != nil {
			var ee *cli.ExitError
			if !errors.As(err, &ee) || ee.Code != cli.ExitUsage || !strings.HasPrefix(ee.Msg, "--policies: ") {
				t.Fatalf("--policies %q: %v, want bad usage naming --policies", value, err)
			}
			return
		}
		if len(*only) == 0 {
			if len(got) != len(all) {
				t.Fatalf("--policies %q (no names): %d policies, want all %d", value, len(got), len(all))
			}
			return
		}
		names := make([]string, len(got))
		for i, p := range got {
			names[i] = p.Name
		}
		if a, b := strings.Join(names, ","), strings.Join(*only, ","); a != b {
			t.Fatalf("--policies %q: chose %q, want the names given, %q", value, a, b)
		}
	})
}

// FuzzCommandLine: the command line a report records is read back by a
// POSIX shell as the arguments given (less --workers and --progress).
func FuzzCommandLine(f *testing.F) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		f.Skip("no sh to read the command line back")
	}
	for _, a := range [][2]string{{"--out", ""}, {"--policies", "yaoki, retrying at once"}, {"--name", "it's"},
		{"--name", `a "b" $c \d`}, {"--p", "0.1,1"}, {"--workers", "3"}, {"--seed", "*"}, {"--name", "tab\there"}} {
		f.Add(a[0], a[1])
	}
	f.Fuzz(func(t *testing.T, flag, value string) {
		if strings.ContainsRune(flag+value, 0) || !utf8.ValidString(flag+value) || strings.HasPrefix(flag, "--workers") ||
			strings.HasPrefix(flag, "--progress") || strings.HasPrefix(value, "--workers") || strings.HasPrefix(value, "--progress") {
			return // arguments hold no NUL; the two dropped flags are TestCommandLine's
		}
		args := []string{"sim", flag, value}
		line := commandLine(args)
		// The shell reads line as a command: yaoki is a function that
		// prints its arguments.
		out, err := exec.Command(sh, "-c", "yaoki() { printf '%s\\000' \"$@\"; }; "+line).Output()
		if err != nil {
			t.Fatalf("sh reading %s: %v", line, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if want := append([]string{"sim"}, flag, value); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("%q recorded as %s, which sh reads as %q", want, line, got)
		}
	})
}
