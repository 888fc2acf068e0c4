package simcli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// A 0 refused names the flag's real default: the one its help gives, not
// the 0 that stands for it, and a list as it is typed.
func TestZeroRefusalNamesTheDefault(t *testing.T) {
	for args, want := range map[string]string{
		"outage --base 0":   "--base 0: want > 0 (leave the flag out for its default, 50ms)",
		"outage --cap 0":    "--cap 0: want > 0 (leave the flag out for its default, 20s)",
		"collapse --peak 0": "--peak 0: want > 0 per second (leave the flag out for its default, 50,60,70,80,90,100)",
	} {
		cmd := NewCommand()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append(strings.Fields(args), "--out", ""))
		var ee *cli.ExitError
		if err := cmd.Execute(); !errors.As(err, &ee) || ee.Code != cli.ExitUsage || ee.Msg != want {
			t.Errorf("yaoki sim %s: %v, want exit %d and %q", args, err, cli.ExitUsage, want)
		}
	}
}

// The help gives a list's default as it is typed: "0,0.0001", not pflag's
// "[0.000000,0.000100]".
func TestHelpListDefaultsAsTyped(t *testing.T) {
	var out bytes.Buffer
	cmd := NewCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"outage", "--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if h := out.String(); !strings.Contains(h, "(default 0,0.0001,0.0002,0.0005,") || strings.Contains(h, "0.000000") {
		t.Errorf("--p's default is not written as typed:\n%s", h)
	}
}

// --workers below 1 and --max-attempts 0 are refused as bad usage: they
// were read as the defaults (one worker per CPU; 3 attempts) while the
// help gives those defaults as numbers a user can write.
func TestWorkersAndMaxAttemptsZeroRefused(t *testing.T) {
	for args, want := range map[string]string{
		"herd --workers 0":        "--workers 0: want ≥ 1 (leave the flag out for one per CPU,",
		"herd --workers -1":       "--workers -1: want ≥ 1",
		"outage --max-attempts 0": "--max-attempts 0: want ≥ 1, or -1 for unlimited (leave the flag out for the scenario's default)",
	} {
		cmd := NewCommand()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append(strings.Fields(args), "--out", "", "--clients", "2", "--runs", "1"))
		var ee *cli.ExitError
		if err := cmd.Execute(); !errors.As(err, &ee) || ee.Code != cli.ExitUsage || !strings.HasPrefix(ee.Msg, want) {
			t.Errorf("yaoki sim %s: %v, want exit %d and %q", args, err, cli.ExitUsage, want)
		}
	}
}

// Your policy's --base, --cap, --multiplier and --jitter are refused in
// the flag's words, as the scenario flags are, not as the Go fields
// ("your policy: Backoff.Multiplier: ... (0 means 2)") that a user never
// wrote; a negative --cap asks for what the flag accepts, > 0.
func TestYourPolicyErrorsNameTheFlag(t *testing.T) {
	for args, want := range map[string]string{
		"herd --multiplier 1": "--multiplier 1: out of range; want a finite value > 1",
		"herd --cap -1s":      "--cap -1s: out of range; want > 0",
		"herd --base -2s":     "--base -2s: out of range; want > 0",
		"herd --jitter ful":   `--jitter "ful": want full, equal, decorrelated or none`,
	} {
		cmd := NewCommand()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append(strings.Fields(args), "--out", "", "--clients", "2", "--runs", "1"))
		var ee *cli.ExitError
		if err := cmd.Execute(); !errors.As(err, &ee) || ee.Code != cli.ExitUsage || ee.Msg != want {
			t.Errorf("yaoki sim %s: %v, want exit %d and %q", args, err, cli.ExitUsage, want)
		}
	}
}

// Scenario flags out of range are refused in the flag's words, saying what
// is accepted, not in the Go fields' ("Tail.Warmup", "NoSlow (-1)").
func TestScenarioFlagsRefusedInTheirWords(t *testing.T) {
	for args, want := range map[string]string{
		"herd --hop-sd -1ms":                       "--hop-sd -1ms: out of range; want ≥ 0",
		"collapse --at -1s":                        "--at -1s: out of range; want ≥ 0",
		"collapse --service-per-request -1ms":      "--service-per-request -1ms: out of range; want ≥ 0",
		"tail --slow-share 2":                      "--slow-share 2: out of range; want a probability in [0, 1]",
		"tail --slow-share -1":                     "--slow-share -1: out of range; want a probability in [0, 1]",
		"tail --slow-share NaN":                    "--slow-share NaN: out of range; want a probability in [0, 1]",
		"tail --duration 1s":                       "--duration 1s: want longer than 1s: the requests of the first 1s are not measured (the warm-up)",
		"tail --brownout-latency 0":                "--brownout-latency 0: want > 0 (leave the flag out for its default, 100ms)",
		"herd --post-cap 0":                        "--post-cap 0: want > 0 (leave the flag out for its default, 2s)",
		"collapse --trigger slowdown --factor 0.5": "--factor 0.5: want > 1 (the slowdown multiplies the service time by it)",
		"collapse --factor 2,1":                    "--factor 1: want > 1 (the slowdown multiplies the service time by it)",
	} {
		cmd := NewCommand()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append(strings.Fields(args), "--out", "", "--runs", "1"))
		var ee *cli.ExitError
		if err := cmd.Execute(); !errors.As(err, &ee) || ee.Code != cli.ExitUsage || ee.Msg != want {
			t.Errorf("yaoki sim %s: %v, want exit %d and %q", args, err, cli.ExitUsage, want)
		}
	}
}

// A --policy file whose retrier matches none of the simulated errors is
// warned of: it would simulate no retries without a word.
func TestPolicyRetrierThatCannotMatchWarned(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.json")
	doc := `{"Retry": [{"ErrorEquals": ["HTTP.418"]}, {"ErrorEquals": ["HTTP.5XX"]}]}`
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := NewCommand()
	cmd.SetOut(io.Discard)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"outage", "--policy", file, "--p", "1", "--runs", "1", "--clients", "2", "--duration", "1s", "--out", ""})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if s := stderr.String(); !strings.Contains(s, "warning: "+file+": Retry[0] (HTTP.418) can never match: the simulated errors are HTTP.500,") ||
		strings.Contains(s, "Retry[1]") {
		t.Errorf("stderr %q: want a warning for Retry[0] only", s)
	}
}

// --runs is refused below 0 and above a million, which would run for days
// holding every run's result: it ran until killed or out of memory.
func TestRunsOutOfRangeRefused(t *testing.T) {
	for _, runs := range []string{"-2", "1000001", "100000000000"} {
		cmd := NewCommand()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs([]string{"herd", "--clients", "2", "--runs", runs, "--out", ""})
		want := "--runs " + runs + ": want 1 to 1000000 (0 for each scenario's default)"
		var ee *cli.ExitError
		if err := cmd.Execute(); !errors.As(err, &ee) || ee.Code != cli.ExitUsage || ee.Msg != want {
			t.Errorf("yaoki sim herd --runs %s: %v, want exit %d and %q", runs, err, cli.ExitUsage, want)
		}
	}
}

// A policy named twice in --policies is refused: it made two columns, two
// lines and two JSON entries of the same name.
func TestPoliciesNamedTwiceRefused(t *testing.T) {
	cmd := NewCommand()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"ratelimit", "--policies", "yaoki,no retries,yaoki", "--runs", "1", "--out", ""})
	want := `--policies: "yaoki" is named twice: name each policy once`
	var ee *cli.ExitError
	if err := cmd.Execute(); !errors.As(err, &ee) || ee.Code != cli.ExitUsage || ee.Msg != want {
		t.Errorf("yaoki sim ratelimit --policies yaoki,no retries,yaoki: %v, want exit %d and %q", err, cli.ExitUsage, want)
	}
}

// Your policy may not take the name of one of the scenario's: the table
// had two columns "yaoki" that no reader could tell apart.
func TestYourNameTakenRefused(t *testing.T) {
	cmd := NewCommand()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"outage", "--name", "yaoki", "--base", "10ms", "--p", "1", "--runs", "1", "--out", ""})
	want := `--name "yaoki": this scenario has a policy of that name already; give yours another (--name)`
	var ee *cli.ExitError
	if err := cmd.Execute(); !errors.As(err, &ee) || ee.Code != cli.ExitUsage || ee.Msg != want {
		t.Errorf("yaoki sim outage --name yaoki: %v, want exit %d and %q", err, cli.ExitUsage, want)
	}
}
