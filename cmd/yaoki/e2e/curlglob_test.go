package e2e

import (
	"strings"
	"testing"
)

// curl without -g expands a URL's globs, {a,b} and [1-3], into several
// transfers, and refuses (exit 3) a brace or bracket it cannot read;
// yaoki http, which sends one URL, refuses a glob (exit 2, naming it and
// -g) rather than sending "/{a,b}" to the server, and exits 3 where curl
// does. What curl sends as written ("[]", an IPv6 address, "\{" as "{",
// everything with -g) yaoki http sends alike. As curl, a URL it cannot
// read as a glob gets no -w.
func TestHTTPGlobLikeCurl(t *testing.T) {
	s := startScripted(t, false, ok("ok\n"))
	for _, tc := range []struct {
		path      string
		args      []string
		code      int // yaoki's exit code
		curlCode  int
		curlSends int // requests curl sends (yaoki sends 1 when code is 0, else 0)
	}{
		{path: "{a,b}", code: 2, curlSends: 2},
		{path: "f[1-3].txt", code: 2, curlSends: 3},
		{path: "[a-b]", code: 2, curlSends: 2},
		{path: "{one}", code: 2, curlSends: 1},
		{path: "x?k={a,}", code: 2, curlSends: 2},
		{path: "x{", code: 3, curlCode: 3},
		{path: "x}", code: 3, curlCode: 3},
		{path: "x]", code: 3, curlCode: 3},
		{path: "{}", code: 3, curlCode: 3},
		{path: "{a,{b}", code: 3, curlCode: 3},
		{path: "?a[0]=1", code: 3, curlCode: 3},
		{path: "[2-1]", code: 3, curlCode: 3},
		{path: "?a[]=1", curlSends: 1},
		{path: `a\{b\}\[c\]`, curlSends: 1},
		{path: "{a,b}[1-2]", args: []string{"-g"}, curlSends: 1},
		{path: `a\{b`, args: []string{"--globoff"}, curlSends: 1},
	} {
		t.Run(strings.Join(append([]string{tc.path}, tc.args...), " "), func(t *testing.T) {
			s.restart()
			args := append(append([]string{"-sS", "--retry", "0", "-w", "|%{exitcode}"}, tc.args...), s.url+tc.path)
			y := run(t, nil, append([]string{"http"}, args...)...)
			ys := s.requests()
			s.restart()
			c := runCurl(t, args...)
			cs := s.requests()
			if y.code != tc.code || c.code != tc.curlCode {
				t.Fatalf("exit: yaoki %d, curl %d; want %d and %d\nyaoki: %s\ncurl: %s", y.code, c.code, tc.code, tc.curlCode, y.stderr, c.stderr)
			}
			if len(cs) != tc.curlSends {
				t.Errorf("curl sent %d requests, want %d", len(cs), tc.curlSends)
			}
			if tc.code != 0 {
				if len(ys) != 0 {
					t.Errorf("yaoki sent %d requests, want none", len(ys))
				}
				if tc.curlCode != 0 && y.stdout != c.stdout {
					t.Errorf("stdout: yaoki %q, curl %q", y.stdout, c.stdout)
				}
				if !strings.Contains(y.stderr, "-g") {
					t.Errorf("stderr %q: want it to name -g", y.stderr)
				}
				return
			}
			if len(ys) != 1 || ys[0].uri != cs[0].uri || y.stdout != c.stdout {
				t.Errorf("yaoki sent %v, wrote %q; curl %v, %q", ys, y.stdout, cs, c.stdout)
			}
		})
	}
	// An IPv6 address in brackets is a host, not a range: both try it.
	y := run(t, nil, "http", "-sS", "--retry", "0", "http://[::1]:1/")
	c := runCurl(t, "-sS", "http://[::1]:1/")
	if y.code != c.code || y.code == 2 || y.code == 3 {
		t.Errorf("http://[::1]:1/: yaoki exit %d, curl %d; want the same connection failure\n%s", y.code, c.code, y.stderr)
	}
}
