package e2e

import (
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
