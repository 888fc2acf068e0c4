package e2e

import (
	"strings"
	"testing"
	"time"
)

// --retry-max-time as curl 7.88 has it: no retry once that many seconds
// have passed since the first attempt, nor when Retry-After would end
// past them; the attempt in flight and the wait are not cut; 0 is no
// limit. Both make the same requests and exit alike.
func TestHTTPRetryMaxTimeLikeCurl(t *testing.T) {
	retryAfter := func(s string) answer {
		return answer{status: 503, headers: map[string]string{"Retry-After": s}, body: "busy\n"}
	}
	for _, tc := range []struct {
		name     string
		script   []answer
		args     []string
		requests int
		stderr   bool // both say why they stopped
	}{
		{"the limit passes between attempts", []answer{status(503, "busy\n")}, []string{"-s", "--retry", "5", "--retry-delay", "1", "--retry-max-time", "1"}, 2, false},
		{"a slow attempt is not cut", []answer{{status: 503, body: "busy\n", delay: 1200 * time.Millisecond}}, []string{"-s", "--retry", "3", "--retry-delay", "1", "--retry-max-time", "1"}, 1, false},
		{"Retry-After past the limit", []answer{retryAfter("3")}, []string{"--no-progress-meter", "--retry", "3", "--retry-max-time", "2"}, 1, true},
		{"Retry-After within the limit", []answer{retryAfter("1"), ok("done\n")}, []string{"-s", "--retry", "3", "--retry-max-time", "2"}, 2, false},
		{"0 is no limit", []answer{status(503, "busy\n"), ok("done\n")}, []string{"-s", "--retry", "1", "--retry-delay", "1", "--retry-max-time", "0"}, 2, false},
		{"-f after the limit", []answer{status(500, "oops\n")}, []string{"-sf", "--retry", "5", "--retry-delay", "1", "--retry-max-time", "1"}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, tc.script...)
			args := append(append([]string(nil), tc.args...), "-o", t.TempDir()+"/out", "-w", `%{http_code}`, s.url)
			y := run(t, nil, append([]string{"http"}, args...)...)
			yn := len(s.requests())
			s.restart()
			c := runCurl(t, args...)
			cn := len(s.requests())
			if yn != tc.requests || cn != tc.requests {
				t.Errorf("yaoki sent %d requests, curl %d; want %d\nyaoki: %s\ncurl: %s", yn, cn, tc.requests, y.stderr, c.stderr)
			}
			if y.code != c.code || y.stdout != c.stdout {
				t.Errorf("yaoki exit %d, stdout %q; curl exit %d, stdout %q", y.code, y.stdout, c.code, c.stdout)
			}
			if (y.stderr != "") != tc.stderr || (c.stderr != "") != tc.stderr {
				t.Errorf("stderr: yaoki %q, curl %q; want both empty: %v", y.stderr, c.stderr, !tc.stderr)
			}
		})
	}
}

// --retry-all-errors as curl's: with -f or --fail-with-body every status
// from 400 is retried (without them a 404 is an answer, not an error, and
// is not); both make the same requests and exit alike.
func TestHTTPRetryAllErrorsLikeCurl(t *testing.T) {
	for _, tc := range []struct {
		name     string
		script   []answer
		args     []string
		requests int
		code     int
	}{
		{"-f 404", []answer{status(404, "no\n")}, []string{"-sSf"}, 2, 22},
		{"--fail-with-body 403 then 200", []answer{status(403, "no\n"), ok("yes\n")}, []string{"-sS", "--fail-with-body"}, 2, 0},
		{"404 without -f", []answer{status(404, "no\n")}, []string{"-sS"}, 1, 0},
		{"-f 501", []answer{status(501, "never\n")}, []string{"-sSf"}, 2, 22},
		{"-f 200", []answer{ok("yes\n")}, []string{"-sSf"}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, tc.script...)
			args := append(append([]string(nil), tc.args...), "--retry", "1", "--retry-all-errors", "-w", `|%{http_code}`, s.url)
			y := run(t, nil, append([]string{"http", "--retry-delay", "0.01"}, args...)...)
			yn := len(s.requests())
			s.restart()
			c := runCurl(t, append([]string{"--retry-delay", "1"}, args...)...)
			cn := len(s.requests())
			if yn != tc.requests || cn != tc.requests {
				t.Errorf("yaoki sent %d requests, curl %d; want %d\nyaoki: %s\ncurl: %s", yn, cn, tc.requests, y.stderr, c.stderr)
			}
			if y.code != tc.code || c.code != tc.code {
				t.Errorf("exit: yaoki %d, curl %d; want %d", y.code, c.code, tc.code)
			}
			// curl writes every attempt's body, yaoki http the last one's.
			if !strings.HasSuffix(c.stdout, y.stdout) {
				t.Errorf("stdout: yaoki %q, curl %q", y.stdout, c.stdout)
			}
		})
	}
}

// --retry-all-errors retries errors that yaoki http otherwise takes as
// final (an untrusted certificate: exit 60 after both attempts), but not a
// POST without Idempotency-Key (where curl sends it again): that needs
// --idempotency-key, which --retry-all-errors does not replace.
func TestHTTPRetryAllErrorsYaoki(t *testing.T) {
	tlsSrv := startScripted(t, true, ok("x\n"))
	r := run(t, nil, "http", "-v", "--retry", "1", "--retry-delay", "0.01", "--retry-all-errors", tlsSrv.url)
	if r.code != 60 || !strings.Contains(r.stderr, "* attempt 2 of 2") {
		t.Errorf("untrusted certificate: exit %d; want 60 after 2 attempts:\n%s", r.code, r.stderr)
	}
	r = run(t, nil, "http", "-v", "--retry", "1", "--retry-delay", "0.01", tlsSrv.url)
	if r.code != 60 || strings.Contains(r.stderr, "* attempt 2 of 2") {
		t.Errorf("untrusted certificate without --retry-all-errors: exit %d; want 60 after 1 attempt:\n%s", r.code, r.stderr)
	}

	s := startScripted(t, false, status(404, "no\n"))
	r = run(t, nil, "http", "-sSf", "-d", "a=1", "--retry", "2", "--retry-delay", "0.01", "--retry-all-errors", s.url)
	if n := len(s.requests()); n != 1 || r.code != 22 || !strings.Contains(r.stderr, "not retried") {
		t.Errorf("POST without key: %d requests, exit %d; want 1, 22 and the notice:\n%s", n, r.code, r.stderr)
	}
	s.restart()
	r = run(t, nil, "http", "-sSf", "-d", "a=1", "--idempotency-key", "auto", "--retry", "2", "--retry-delay", "0.01", "--retry-all-errors", s.url)
	got := s.requests()
	if len(got) != 3 || r.code != 22 || got[0].header.Get("Idempotency-Key") == "" || got[0].header.Get("Idempotency-Key") != got[2].header.Get("Idempotency-Key") {
		t.Errorf("POST with --idempotency-key auto: %d requests, exit %d; want 3 with one key, 22:\n%s", len(got), r.code, r.stderr)
	}
	r = run(t, nil, "http", "--retry-all-errors", "--policy", "/dev/null", s.url)
	if r.code != 2 || !strings.Contains(r.stderr, "--retry-all-errors and --policy cannot be combined") {
		t.Errorf("--retry-all-errors --policy: exit %d, %q; want 2 and why", r.code, r.stderr)
	}
}

// A name that does not resolve is retried, as curl --retry retries it (a
// service's name may be missing until it is registered), and the run
// exits 6 as curl's does.
func TestHTTPUnresolvedRetriedLikeCurl(t *testing.T) {
	const url = "http://yaoki-e2e.invalid/" // .invalid never resolves (RFC 6761)
	c := runCurl(t, "--no-progress-meter", "--retry", "1", "--retry-delay", "1", url)
	if c.code != 6 {
		t.Skipf("curl exits %d, not 6: this resolver does not say that %s does not exist\n%s", c.code, url, c.stderr)
	}
	if !strings.Contains(c.stderr, "Will retry") {
		t.Fatalf("curl did not retry: the comparison is off:\n%s", c.stderr)
	}
	y := run(t, nil, "http", "-sS", "-v", "--retry", "1", "--retry-delay", "0.01", url)
	if y.code != 6 || !strings.Contains(y.stderr, "* attempt 2 of 2") {
		t.Errorf("exit %d; want 6 after 2 attempts:\n%s", y.code, y.stderr)
	}
}

// -v and stderr say that --retry-max-time ended the retries, and why.
func TestHTTPRetryMaxTimeSaid(t *testing.T) {
	s := startScripted(t, false, answer{status: 503, headers: map[string]string{"Retry-After": "3"}, body: "busy\n"})
	r := run(t, nil, "http", "-v", "--retry", "3", "--retry-max-time", "2", s.url)
	for _, want := range []string{
		"* stopped after 1 attempt: the server's Retry-After (3.000s) would end past --retry-max-time 2.000s",
		"yaoki http: gave up after 1 attempt in ",
	} {
		if r.code != 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d; want 0 and %q on stderr:\n%s", r.code, want, r.stderr)
		}
	}
}

// A connection closed in the middle of the answer's header (the status
// line came, the empty line that ends the header did not) is a receive
// failure, retried as any broken connection, and after the last attempt
// exits 56 saying so, not 52 ("empty reply": something came). curl
// 7.88, which does not retry it without --retry-all-errors, exits 18
// when the Content-Length came before the cut, 0 when not.
func TestHTTPHeaderCutShort(t *testing.T) {
	s := startScripted(t, false, answer{wire: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n", cut: true})
	r := run(t, nil, "http", "-sS", "--retry", "2", "--retry-delay", "0.001", "-w", "%{http_code} %{exitcode}", s.url+"p")
	if r.code != 56 || r.stdout != "000 56" || !strings.Contains(r.stderr, "(56) ") || !strings.Contains(r.stderr, "header") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 56, 000 56 and a message about the header cut short", r.code, r.stdout, r.stderr)
	}
	if n := len(s.requests()); n != 3 {
		t.Errorf("%d requests, want 3 (the cut is retried)", n)
	}
}
