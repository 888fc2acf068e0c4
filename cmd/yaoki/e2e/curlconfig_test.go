package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -K FILE (-K - for stdin) reads curl flags from a config file as curl
// 7.88 reads it, at its place among the flags: a flag after -K overrides
// the file's, one before is overridden by it. Scripts keep tokens there,
// out of the command line (ps shows it).
func TestHTTPConfigLikeCurl(t *testing.T) {
	s := startScripted(t, false, ok("ok\n"))
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := write("cfg", "# a comment\n  // another\nsilent\nshow-error yes\n"+
		"header = \"Authorization: Bearer a b\\\"c\\\\d\"\n-H \"Accept: text/plain\"\n"+
		"user-agent: \"from/config\"\n--data-urlencode \"q=x y\"\n"+
		"write-out = \"|%{http_code} %{url_effective}\\n\"\r\nurl = \""+s.url+"cfg?a=1\"\n")
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
	}{
		{"-K FILE", []string{"-K", cfg}, ""},
		{"flags after -K override it", []string{"-K", cfg, "-A", "after/1", "-w", "|%{http_code}\n"}, ""},
		{"flags before -K are overridden", []string{"-A", "before/1", "--config", cfg}, ""},
		{"-K -", []string{"-K", "-", "-H", "X-After: 1"}, "silent\nheader \"X-Stdin: 1\"\nurl " + s.url + "stdin\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.restart()
			y := runInput(t, yaoki, tc.stdin, append([]string{"http"}, tc.args...)...)
			ys := s.requests()
			s.restart()
			c := runInput(t, curlPath, tc.stdin, tc.args...)
			cs := s.requests()
			if y.code != 0 || c.code != 0 || len(ys) != 1 || len(cs) != 1 {
				t.Fatalf("yaoki exit %d (%d requests), curl exit %d (%d requests)\nyaoki: %s\ncurl: %s", y.code, len(ys), c.code, len(cs), y.stderr, c.stderr)
			}
			if y.stdout != c.stdout || y.stderr != "" {
				t.Errorf("stdout: yaoki %q, curl %q; stderr: yaoki %q", y.stdout, c.stdout, y.stderr)
			}
			a, b := ys[0], cs[0]
			if a.method != b.method || a.uri != b.uri || a.body != b.body {
				t.Errorf("yaoki sent %s %s %q; curl %s %s %q", a.method, a.uri, a.body, b.method, b.uri, b.body)
			}
			for _, h := range []string{"Authorization", "Accept", "User-Agent", "Content-Type", "X-After", "X-Stdin"} {
				if h == "User-Agent" && strings.HasPrefix(b.header.Get(h), "curl/") {
					continue // each its own default
				}
				if got, want := a.header.Values(h), b.header.Values(h); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
					t.Errorf("%s: yaoki sent %q, curl %q", h, got, want)
				}
			}
		})
	}

	// A file that cannot be read: exit 26, nothing sent, as curl.
	s.restart()
	y := run(t, nil, "http", "-sS", "-K", filepath.Join(dir, "missing"), s.url)
	c := runCurl(t, "-sS", "-K", filepath.Join(dir, "missing"), s.url)
	if y.code != 26 || c.code != 26 || len(s.requests()) != 0 {
		t.Errorf("-K missing: exit %d, curl %d, %d requests; want 26, 26, none\n%s", y.code, c.code, len(s.requests()), y.stderr)
	}
	// A flag yaoki http does not take, in the file: refused with the file's
	// name, the line and the flag (curl would send without digest
	// authentication; yaoki http sends nothing that the file did not ask for).
	bad := write("bad", "silent\n\ndigest\n")
	y = run(t, nil, "http", "-sS", "-K", bad, s.url)
	if y.code != 2 || len(s.requests()) != 0 || !strings.Contains(y.stderr, bad+" line 3: --digest (curl's: Use HTTP Digest Authentication)") {
		t.Errorf("-K with digest: exit %d, %d requests, stderr %q; want 2, none, naming line 3 and --digest", y.code, len(s.requests()), y.stderr)
	}
	unclosed := write("unclosed", "header = \"X-A: 1\n")
	if y = run(t, nil, "http", "-sS", "-K", unclosed, s.url); y.code != 2 || !strings.Contains(y.stderr, "no closing") {
		t.Errorf("-K with an unclosed quote: exit %d, stderr %q; want 2 and 'no closing'", y.code, y.stderr)
	}
}
