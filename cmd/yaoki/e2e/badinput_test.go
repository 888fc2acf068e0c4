package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Bad input to exec, flaky and proxy is a usage error (exit 2) that names the
// flag and says what is accepted.
func TestBadInputIsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--", ""}, "the command name is empty"},
		{[]string{"exec", "--", "  "}, "the command name is empty"},
		// --retry-on "$CODES" with CODES unset: refused, not the default set.
		{[]string{"exec", "--retry-on", "", "--", "false"}, `--retry-on "": "" is not an exit code or range`},
		{[]string{"exec", "--no-retry-on=", "--", "false"}, `--no-retry-on "": "" is not an exit code or range`},
		{[]string{"flaky", "--script", "100"}, "100 is informational (1xx) and cannot be a final answer"},
		{[]string{"flaky", "--script", "503,101"}, "101 is informational"},
		{[]string{"flaky", "--script", "199"}, "199 is informational"},
		{[]string{"flaky", "--rate-429", "-0.1"}, "--rate-429 -0.1: want a share from 0 to 1"},
		{[]string{"flaky", "--script", "200", "--rate-reset", "-1"}, "--rate-reset -1"},
		{[]string{"flaky", "--rate-slow", "0.5", "--slow", "0"}, "--slow 0"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:9", "--listen", ":99999"}, `--listen ":99999": port "99999": want a port from 0 to 65535`},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:9", "--listen", "8080"}, `--listen "8080": want HOST:PORT`},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:9", "--upstream-read-timeout", "-1s"}, `--upstream-read-timeout "-1s" is negative: want a duration ≥ 0 (0: no bound)`},
		{[]string{"proxy", "--config", "proxy.yaml", "--upstream-read-timeout", "5m"}, `--upstream-read-timeout cannot be combined with --config: set it per route in the file`},
	} {
		r := run(t, nil, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("yaoki %q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// exec --max-time that ends a running attempt says so, not "the next
// wait would end after --max-time".
func TestExecMaxTimeStopsAttempt(t *testing.T) {
	start := time.Now()
	r := run(t, nil, "exec", "--max-time", "0.3", "--grace", "0", "--", "sleep", "30")
	if r.code != 124 || !strings.Contains(r.stderr, "--max-time 0.300s passed during attempt 1, which was stopped") {
		t.Fatalf("exit %d; want 124 and the attempt stopped by --max-time:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "next wait") {
		t.Errorf("stderr speaks of a next wait:\n%s", r.stderr)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v: --grace 0 should kill at once", took)
	}
}

// --max-retry-after 0 honours no hint: a Retry-After of 1 s ends the run
// at once instead of the default 60 s limit letting it wait.
func TestMaxRetryAfterZero(t *testing.T) {
	s := startScripted(t, false, answer{status: 429, headers: map[string]string{"Retry-After": "1"}, body: "later\n"}, ok("done\n"))
	r := run(t, nil, "http", "--max-retry-after", "0", s.url)
	if r.code != 0 || r.stdout != "later\n" || len(s.requests()) != 1 || !strings.Contains(r.stderr, "hint too long") {
		t.Fatalf("exit %d, stdout %q after %d requests; want the 429 at once (hint too long)\n%s", r.code, r.stdout, len(s.requests()), r.stderr)
	}
}

// A retrier that can never match an error of the command is warned of.
func TestRetrierThatCannotMatch(t *testing.T) {
	dir := t.TempDir()
	httpOnly := filepath.Join(dir, "http.json")
	os.WriteFile(httpOnly, []byte(`{"Retry": [{"ErrorEquals": ["HTTP.503", "Net.Timeout"]}, {"ErrorEquals": ["Exit.75"]}]}`), 0o600)
	r := run(t, nil, "exec", "--policy", httpOnly, "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "warning: Retry[0] (HTTP.503, Net.Timeout) can never match: exec's errors are Exit.<code>") || strings.Contains(r.stderr, "Retry[1]") {
		t.Errorf("exec: exit %d, stderr %q; want a warning for Retry[0] only", r.code, r.stderr)
	}
	s := startScripted(t, false, ok("x"))
	r = run(t, nil, "http", "--policy", httpOnly, s.url)
	if r.code != 0 || !strings.Contains(r.stderr, "warning: Retry[1] (Exit.75) can never match: http's errors are") || strings.Contains(r.stderr, "Retry[0]") {
		t.Errorf("http: exit %d, stderr %q; want a warning for Retry[1] only", r.code, r.stderr)
	}
}

// YAOKI_RETRY_MODE=standard brings the AWS retry quota, and -v says which
// mode applies and where it came from.
func TestHTTPRetryModeShown(t *testing.T) {
	s := startScripted(t, false, status(503, "busy\n"), ok("done\n"))
	r := run(t, []string{"YAOKI_RETRY_MODE=standard"}, append([]string{"http", "-v"}, append(fastRetries, s.url)...)...)
	if r.code != 0 || r.stdout != "done\n" || !strings.Contains(r.stderr, "retry mode: standard, from $YAOKI_RETRY_MODE") {
		t.Fatalf("exit %d, stdout %q; want 0, done and the mode on stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	s.restart()
	r = run(t, []string{"YAOKI_RETRY_MODE=off"}, "http", "-v", "--retry-mode", "adaptive", "--base", "1ms", "--throttle-base", "1ms", s.url)
	if r.code != 0 || !strings.Contains(r.stderr, "retry mode: adaptive, from --retry-mode") || len(s.requests()) != 2 {
		t.Fatalf("--retry-mode beats YAOKI_RETRY_MODE: exit %d after %d requests:\n%s", r.code, len(s.requests()), r.stderr)
	}
	// Without a mode, -v claims no guards: yaoki http keeps none of its own.
	s.restart()
	r = run(t, []string{"YAOKI_RETRY_MODE="}, append([]string{"http", "-v"}, append(fastRetries, s.url)...)...)
	if r.code != 0 || !strings.Contains(r.stderr, "retry mode: default (no AWS retry mode asked for)") {
		t.Fatalf("no mode: exit %d; want the default mode said, without guards:\n%s", r.code, r.stderr)
	}
}

// yaoki sim's errors name the flag the user wrote, not package sim's
// field; a report folder that cannot be written is refused before the
// simulations start.
func TestSimErrorsNameFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "herd", "--clients", "-5", "--out", ""}, "--clients -5: out of range; want 1 to 1e6"},
		{[]string{"sim", "outage", "--p", "1.5", "--out", ""}, "--p 1.5: out of range; want a probability in [0, 1]"},
		{[]string{"sim", "herd", "--runs", "1", "--out", filepath.Join(file, "report")}, "--out " + filepath.Join(file, "report") + ": cannot make the report folder"},
	} {
		start := time.Now()
		r := run(t, nil, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "Herd.") || strings.Contains(r.stderr, "Outage.") {
			t.Errorf("yaoki %q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
		if r.stdout != "" {
			t.Errorf("yaoki %q ran simulations (%q, %v) before refusing", tc.args, r.stdout, time.Since(start))
		}
	}
}
