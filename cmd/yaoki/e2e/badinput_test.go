package e2e

import (
	"strings"
	"testing"
	"time"
)

// Bad input to exec and flaky is a usage error (exit 2) that names the
// flag and says what is accepted.
func TestBadInputIsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--", ""}, "the command name is empty"},
		{[]string{"exec", "--", "  "}, "the command name is empty"},
		{[]string{"flaky", "--script", "100"}, "100 is informational (1xx) and cannot be a final answer"},
		{[]string{"flaky", "--script", "503,101"}, "101 is informational"},
		{[]string{"flaky", "--script", "199"}, "199 is informational"},
		{[]string{"flaky", "--rate-429", "-0.1"}, "--rate-429 -0.1: want a share from 0 to 1"},
		{[]string{"flaky", "--script", "200", "--rate-reset", "-1"}, "--rate-reset -1"},
		{[]string{"flaky", "--rate-slow", "0.5", "--slow", "0"}, "--slow 0"},
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
