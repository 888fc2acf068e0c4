package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// 429 with Retry-After: 1, then 200: yaoki http waits what the server
// asked (at least 1 s, as flaky's own clock shows) and says the wait came
// from the server.
func TestHTTPHonoursRetryAfter(t *testing.T) {
	s := startFlaky(t, "--script", "429:retry-after=1,200")
	r := run(t, nil, "http", "-v", "--base", "1ms", "--throttle-base", "1ms", s.url+"orders")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "flaky: 200 OK") {
		t.Fatalf("exit %d, stdout %q; want 0 and the 200's body\n%s", r.code, r.stdout, r.stderr)
	}
	r.wantStderr(t, "attempt 1: 429 Too Many Requests", "before attempt 2, from server", "attempt 2: 200 OK")
	log := s.waitRequests(t, 2)
	if len(log) != 2 {
		t.Fatalf("flaky saw %d requests, want 2:\n%s", len(log), strings.Join(log, "\n"))
	}
	t0, _ := strconv.Atoi(field(log[0], "ms"))
	t1, _ := strconv.Atoi(field(log[1], "ms"))
	// At least the 1 s asked for; at most 1.2 s of wait plus scheduling
	// slack on a loaded machine.
	if gap := t1 - t0; gap < 1000 || gap > 3000 {
		t.Errorf("second attempt %d ms after the first; want ≥ 1000 (Retry-After 1 s plus at most 20 %% jitter)", gap)
	}
	if !regexp.MustCompile(`waiting 1(\.\d+)?s before attempt 2`).MatchString(r.stderr) {
		t.Errorf("the wait is not 1 s to 1.2 s:\n%s", r.stderr)
	}
	if field(log[0], "attempt") != "1" || field(log[1], "attempt") != "2" {
		t.Errorf("attempt headers: %q, %q; want 1, 2", field(log[0], "attempt"), field(log[1], "attempt"))
	}
}

// POST with --idempotency-key auto: one key, the same on every attempt.
func TestHTTPPostAutoKey(t *testing.T) {
	s := startFlaky(t, "--script", "503,500,200")
	r := run(t, nil, "http", "-X", "POST", "-d", `{"sku":42}`, "--idempotency-key", "auto", "--base", "1ms", "--throttle-base", "1ms", s.url)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	log := s.waitRequests(t, 3)
	if len(log) != 3 {
		t.Fatalf("flaky saw %d requests, want 3", len(log))
	}
	key := field(log[0], "key")
	if len(key) != 36 {
		t.Fatalf("key %q: want a UUID", key)
	}
	for _, l := range log {
		if field(l, "key") != key || field(l, "method") != "POST" || field(l, "op") != "1" {
			t.Errorf("%q: want POST with key %s, operation 1", l, key)
		}
	}
	// Without a key a POST is sent once.
	s2 := startFlaky(t, "--script", "503,200")
	r = run(t, nil, "http", "-d", "x=1", "--base", "1ms", "--throttle-base", "1ms", s2.url)
	if r.code != 0 || len(s2.waitRequests(t, 1)) != 1 || !strings.Contains(r.stdout, "503") {
		t.Fatalf("POST without key: exit %d, stdout %q; want one attempt and the 503 (exit 0 without -f)", r.code, r.stdout)
	}
}

// yaoki http --hedge-after: the first answer is slow (3 s), so a copy goes
// out after 100 ms and its answer is the one written; stderr says so, and
// the server saw the two attempts, numbered 1 and 2.
func TestHTTPHedge(t *testing.T) {
	s := startFlaky(t, "--script", "200:slow=3s,200")
	r := run(t, nil, "http", "-v", "--hedge-after", "100ms", s.url+"items")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "flaky: 200 OK") {
		t.Fatalf("exit %d, stdout %q; want 0 and the 200's body\n%s", r.code, r.stdout, r.stderr)
	}
	r.wantStderr(t, "hedging: no answer after", "attempt 2 sent beside the others", "hedge won: attempt 2 answered first")
	log := s.waitRequests(t, 2)
	if len(log) != 2 || field(log[0], "attempt") != "1" || field(log[1], "attempt") != "2" {
		t.Fatalf("flaky saw %q; want attempts 1 and 2", log)
	}
	// The flags are checked.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-hedges", "2"}, "needs --hedge-after"},
		{[]string{"--hedge-after", "0s"}, "want a duration > 0"},
		{[]string{"--hedge-after", "10ms", "--max-hedges", "11"}, "want 1 to 10"},
	} {
		r := run(t, nil, append(append([]string{"http"}, tc.args...), s.url)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("yaoki http %v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

func TestHTTPExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		args   []string
		code   int
		stderr string
	}{
		{"success", "200", nil, 0, ""},
		{"404 without -f", "404", nil, 0, ""},
		{"404 with -f", "404", []string{"-f"}, 22, "(22) the requested URL returned error: 404"},
		{"retries used up: the last answer, exit 0 as curl", "503", []string{"--max-attempts", "2"}, 0, "gave up after 2 attempts"},
		{"retries used up with -f", "503", []string{"--max-attempts", "2", "-f"}, 22, "gave up after 2 attempts"},
		{"Retry-After too long", "429:retry-after=120", nil, 0, "hint too long"},
		{"deadline", "503:retry-after=1", []string{"--max-time", "500ms"}, 28, "(28) no time for the next attempt within --max-time 0.500s: the server's wait (Retry-After) 1."},
		{"slow answer past the deadline", "200:slow=2s", []string{"--max-time", "300ms"}, 28, "(28) operation timed out: --max-time 0.300s passed"},
		{"a POST reset, sent once", "reset", []string{"-X", "POST"}, 56, "(56) recv failure: connection reset by peer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startFlaky(t, "--script", tc.script)
			r := run(t, nil, append(append(append([]string{"http"}, fastRetries...), tc.args...), s.url)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tc.code, tc.stderr)
			}
		})
	}
	r := run(t, nil, "http", "ftp://127.0.0.1/")
	if r.code != 1 || !strings.Contains(r.stderr, `protocol "ftp" is not supported`) {
		t.Fatalf("ftp URL: exit %d, %q; want 1 (curl's unsupported protocol)", r.code, r.stderr)
	}
	r = run(t, nil, "http", "-H", "NoColon", "http://127.0.0.1:1/")
	if r.code != 2 || !strings.Contains(r.stderr, "want 'Name: value'") {
		t.Fatalf("bad header: exit %d, %q; want 2", r.code, r.stderr)
	}
}

func TestHTTPIncludeOutputAndDataBinary(t *testing.T) {
	s := startFlaky(t, "--script", "201")
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.bin"), filepath.Join(dir, "out.txt")
	os.WriteFile(in, []byte("line1\nline2\n"), 0o600)
	r := run(t, nil, "http", "-i", "--data-binary", "@"+in, "-o", out, s.url)
	got, _ := os.ReadFile(out)
	if r.code != 0 || !strings.HasPrefix(string(got), "HTTP/1.1 201 Created\r\n") || !strings.Contains(string(got), "flaky: 201 Created") {
		t.Fatalf("exit %d, file %q: want the status line, headers and body", r.code, got)
	}
	if log := s.waitRequests(t, 1); field(log[0], "method") != "POST" {
		t.Errorf("--data-binary without -X: %q, want POST", log[0])
	}
}

// A policy file drives yaoki http: only the statuses its retriers name are
// retried, each retrier with its own count.
func TestHTTPPolicyFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "retry.yaml")
	os.WriteFile(file, []byte(`Retry:
  - ErrorEquals: [HTTP.503]
    IntervalSeconds: 0.001
    MaxAttempts: 2
  - ErrorEquals: [HTTP.404]
    IntervalSeconds: 0.001
    MaxAttempts: 1
`), 0o600)
	s := startFlaky(t, "--script", "503,404,503,200")
	r := run(t, nil, "http", "-v", "--policy", file, s.url)
	if r.code != 0 || len(s.waitRequests(t, 4)) != 4 {
		t.Fatalf("exit %d after %d requests; want 0 after 4:\n%s", r.code, len(s.requests()), r.stderr)
	}
	s = startFlaky(t, "--script", "500,200")
	r = run(t, nil, "http", "-f", "--policy", file, s.url)
	if r.code != 22 || len(s.waitRequests(t, 1)) != 1 {
		t.Fatalf("500 (no retrier): exit %d after %d requests; want 22 after 1", r.code, len(s.requests()))
	}
}
