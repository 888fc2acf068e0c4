package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// TestBadFlagValueIsUsageError: a flag value that does not parse exits with
// the bad-usage code (and points at --help), for every subcommand.
func TestBadFlagValueIsUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"plan", "--max-attempts", "x"},
		{"exec", "--max-attempts", "x", "--", "true"},
		{"http", "--max-attempts", "x", "http://127.0.0.1:1/"},
		{"deadletter", "list", "--limit", "x", "--postgres", "postgres://127.0.0.1:1/x"},
		{"deadletter", "redrive", "--queue", "q", "--lease", "soon", "--postgres", "postgres://127.0.0.1:1/x"},
	} {
		if code := run(args); code != cli.ExitUsage {
			t.Errorf("yaoki %v exited %d, want %d (bad usage)", args, code, cli.ExitUsage)
		}
	}
}

// TestSimZeroIsRefused: a sim flag for which 0 means nothing (no clients, no
// time) is refused as bad usage instead of being read as the default; one
// for which 0 is meaningful (--p 0, --hop-sd 0) is accepted.
func TestSimZeroIsRefused(t *testing.T) {
	out := t.TempDir()
	for _, args := range [][]string{
		{"sim", "outage", "--clients", "0"},
		{"sim", "outage", "--clients", "10,0", "--p", "1"},
		{"sim", "outage", "--total-rate", "0"},
		{"sim", "herd", "--hop-mean", "0s"},
		{"sim", "collapse", "--width", "0s,5s"},
		{"sim", "collapse", "--peak", "0"},
		{"sim", "tail", "--fanout", "0"},
		{"sim", "herd", "--base", "0"},
	} {
		if code := run(append(args, "--out", out)); code != cli.ExitUsage {
			t.Errorf("yaoki %v exited %d, want %d (bad usage)", args, code, cli.ExitUsage)
		}
	}
	if code := run([]string{"sim", "herd", "--clients", "3", "--hop-sd", "0", "--runs", "1", "--out", out, "--format", "csv"}); code != 0 {
		t.Errorf("yaoki sim herd --hop-sd 0 exited %d, want 0 (a spread of 0 is meaningful)", code)
	}
}

// A flag value of a plain pflag type that does not parse says what the
// flag accepts, not the Go parser's words ("strconv.Atoi: parsing",
// "time: missing unit"); yaoki's own flag types keep their messages.
func TestBadFlagValueSaysWhatIsAccepted(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "herd", "--clients", "abc"}, `invalid argument "abc" for "--clients" flag: want whole numbers separated by commas, such as 10,100`},
		{[]string{"sim", "outage", "--p", "0.1,x"}, `invalid argument "0.1,x" for "--p" flag: want numbers separated by commas, such as 0.01,0.1,0.5`},
		{[]string{"sim", "outage", "--seed", "-1"}, `invalid argument "-1" for "--seed" flag: want a whole number ≥ 0 such as 7`},
		{[]string{"sim", "collapse", "--width", "5"}, `invalid argument "5" for "--width" flag: want durations with their units separated by commas, such as 5s,10s`},
		{[]string{"sim", "herd", "--base", "1"}, `invalid argument "1" for "--base" flag: want a duration with its unit, such as 250ms, 1.5s or 2m`},
		{[]string{"plan", "--max-attempts", "x"}, `invalid argument "x" for "--max-attempts" flag: want a whole number such as 3`},
		{[]string{"plan", "--max-attempts", "99999999999999999999"}, `invalid argument "99999999999999999999" for "--max-attempts" flag: "99999999999999999999" is out of range: want a whole number such as 3`},
		{[]string{"plan", "--multiplier", "two"}, `invalid argument "two" for "--multiplier" flag: want a number such as 0.5`},
		{[]string{"plan", "--json=maybe"}, `invalid argument "maybe" for "--json" flag: want true or false (the flag alone is true)`},
		{[]string{"plan", "--base", "5x"}, `invalid argument "5x" for "--base" flag: "5x" is not a duration: want e.g. 250ms, 1.5s, 2m or plain seconds`},
		{[]string{"http", "--retry", "3.5", "http://127.0.0.1:1/"}, `invalid argument "3.5" for "--retry" flag: want a whole number such as 3`},
		{[]string{"http", "--max-redirs", "x", "http://127.0.0.1:1/"}, `invalid argument "x" for "--max-redirs" flag: want a whole number such as 3`},
	} {
		root := newRoot()
		root.SetArgs(tc.args)
		var ee *cli.ExitError
		err := root.Execute()
		if !errors.As(err, &ee) || ee.Code != cli.ExitUsage || !strings.HasPrefix(ee.Msg, tc.want+"\n") {
			t.Errorf("yaoki %q: %v; want exit %d and %q", tc.args, err, cli.ExitUsage, tc.want)
		}
	}
}

// An unknown flag within two edits of a real one names it; one far from
// every flag, a hidden flag and an unknown shorthand are said as they are.
func TestUnknownFlagSuggestsNearest(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--max-atempts", "3"}, "unknown flag: --max-atempts (did you mean --max-attempts?)\n"},
		{[]string{"plan", "--jiter=full"}, "unknown flag: --jiter (did you mean --jitter?)\n"},
		{[]string{"sim", "herd", "--clinets", "5"}, "unknown flag: --clinets (did you mean --clients?)\n"},
		{[]string{"flaky", "--rate429", "0.5"}, "unknown flag: --rate429 (did you mean --rate-429?)\n"},
		{[]string{"plan", "--colour"}, "unknown flag: --colour\n"},
		{[]string{"exec", "--throtle-base", "1s", "--", "true"}, "unknown flag: --throtle-base\n"},
		{[]string{"plan", "-Q"}, "unknown shorthand flag: 'Q' in -Q\n"},
	} {
		root := newRoot()
		root.SetArgs(tc.args)
		var ee *cli.ExitError
		err := root.Execute()
		if !errors.As(err, &ee) || ee.Code != cli.ExitUsage || !strings.HasPrefix(ee.Msg, tc.want) {
			t.Errorf("yaoki %q: %v; want exit %d and %q", tc.args, err, cli.ExitUsage, tc.want)
		}
	}
}

// An argument to a command that takes none says what to write instead: a
// file name goes with --policy, a scenario name near a real one is named,
// anything else is said to be no argument of the command.
func TestStrayArgumentSaysWhatToWrite(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "retry.json"}, `plan takes no arguments, got "retry.json": to load a policy file, write --policy retry.json`},
		{[]string{"sim", "outage", "policies/retry.yaml"}, `sim outage takes no arguments, got "policies/retry.yaml": to load a policy file, write --policy policies/retry.yaml`},
		{[]string{"sim", "hrd"}, `sim has no subcommand "hrd": want one of all, collapse, herd, outage, ratelimit, tail (did you mean herd?)`},
		{[]string{"sim", "storm"}, `sim has no subcommand "storm": want one of all, collapse, herd, outage, ratelimit, tail`},
		{[]string{"flaky", "503,200"}, `flaky takes no arguments, got "503,200": its input is given by flags (see --help)`},
	} {
		root := newRoot()
		root.SetArgs(tc.args)
		var ee *cli.ExitError
		err := root.Execute()
		if !errors.As(err, &ee) || ee.Code != cli.ExitUsage || ee.Msg != tc.want {
			t.Errorf("yaoki %q: %v; want exit %d and %q", tc.args, err, cli.ExitUsage, tc.want)
		}
	}
}

// A bad metrics address is told under the flag the user wrote: proxy's
// --admin-addr, which said "--metrics-addr", a flag proxy does not have.
func TestMetricsAddressNamesItsFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--admin-addr", "nope"}, `--admin-addr "nope": want HOST:PORT such as 127.0.0.1:9464`},
		{[]string{"flaky", "--metrics-addr", "nope"}, `--metrics-addr "nope": want HOST:PORT such as 127.0.0.1:9464`},
	} {
		root := newRoot()
		root.SetArgs(tc.args)
		var ee *cli.ExitError
		err := root.Execute()
		if !errors.As(err, &ee) || ee.Code != cli.ExitUsage || !strings.HasPrefix(ee.Msg, tc.want) {
			t.Errorf("yaoki %q: %v; want exit %d and %q", tc.args, err, cli.ExitUsage, tc.want)
		}
	}
}

// yaoki proxy given a file as an argument points at --config and --policy.
func TestProxyStrayFileArgument(t *testing.T) {
	root := newRoot()
	root.SetArgs([]string{"proxy", "proxy.yaml"})
	var ee *cli.ExitError
	want := `proxy takes no arguments, got "proxy.yaml": to load a file, write --config proxy.yaml (the routes) or --policy proxy.yaml (one policy)`
	if err := root.Execute(); !errors.As(err, &ee) || ee.Code != cli.ExitUsage || ee.Msg != want {
		t.Errorf("yaoki proxy proxy.yaml: %v; want exit %d and %q", err, cli.ExitUsage, want)
	}
}
