package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// curlPath is the curl the outputs are compared with.
const curlPath = "/usr/bin/curl"

// runCurl runs curl with args, as run runs yaoki.
func runCurl(t *testing.T, args ...string) result {
	t.Helper()
	if _, err := os.Stat(curlPath); err != nil {
		t.Skipf("no curl at %s to compare with", curlPath)
	}
	return runProgram(t, curlPath, nil, args...)
}

func ok(body string) answer {
	return answer{status: 200, headers: map[string]string{"Content-Type": "text/plain"}, body: body}
}

func status(code int, body string) answer {
	return answer{status: code, headers: map[string]string{"Content-Type": "text/plain"}, body: body}
}

// TestHTTPLikeCurl runs yaoki http and curl with the same flags against
// the same scripted server (restarted between the two) and compares their
// stdout, exit code and whether they wrote anything on stderr.
func TestHTTPLikeCurl(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		script []answer
		tls    bool
		args   []string // both
		yaoki  []string // yaoki only (before args)
		curl   []string // curl only (before args)
		path   string
		stderr bool // whether both write messages on stderr
		code   int
		// lastOnly is yaoki's stdout where curl writes the body of every
		// attempt and yaoki only the last answer's.
		lastOnly string
	}{
		{name: "GET", script: []answer{ok("hello\n")}, code: 0},
		{name: "-i", script: []answer{ok("hello\n")}, args: []string{"-i"}},
		{name: "-I", script: []answer{ok("hello\n")}, args: []string{"-I"}},
		{name: "-I -f 404", script: []answer{status(404, "no\n")}, args: []string{"-I", "-f"}, stderr: true, code: 22},
		{name: "-i -f 404", script: []answer{status(404, "no\n")}, args: []string{"-i", "-f"}, stderr: true, code: 22},
		{name: "404 without -f", script: []answer{status(404, "no\n")}},
		{name: "-f 404", script: []answer{status(404, "no\n")}, args: []string{"-f"}, stderr: true, code: 22},
		{name: "-fs 404", script: []answer{status(404, "no\n")}, args: []string{"-fs"}, code: 22},
		{name: "-fsS 404", script: []answer{status(404, "no\n")}, args: []string{"-fsS"}, stderr: true, code: 22},
		{name: "-f --fail-with-body", script: []answer{status(404, "no\n")}, args: []string{"-s", "-f", "--fail-with-body"}, stderr: true, code: 2},
		{name: "--fail-with-body -f", script: []answer{status(404, "no\n")}, args: []string{"-s", "--fail-with-body", "-f"}, stderr: true, code: 2},
		{name: "--fail-with-body 404", script: []answer{status(404, "no\n")}, args: []string{"--fail-with-body"}, stderr: true, code: 22},
		{name: "final 503 without -f exits 0", script: []answer{status(503, "busy\n")}, args: []string{"-s", "--retry", "1"}, yaoki: fastRetries, curl: []string{"--retry-delay", "1"}, lastOnly: "busy\n"},
		{name: "final 503 -fsS", script: []answer{status(503, "busy\n")}, args: []string{"-fsS", "--retry", "1"}, yaoki: fastRetries, curl: []string{"--retry-delay", "1"}, stderr: true, code: 22},
		{name: "503 then 200", script: []answer{status(503, "busy\n"), ok("done\n")}, args: []string{"-sS", "--retry", "2"}, yaoki: fastRetries, curl: []string{"--retry-delay", "1"}, lastOnly: "done\n"},
		{name: "-w", script: []answer{status(201, "made\n")}, args: []string{"-s", "-o", "/dev/null", "-w", `%{http_code} %{exitcode} %{url_effective}\n`}},
		{name: "-w with -f", script: []answer{status(500, "x")}, args: []string{"-s", "-f", "-w", `[%{http_code}:%{exitcode}]\n`, "--retry", "0"}, code: 22},
		{name: "-w without answer", script: nil, args: []string{"-s", "-w", `%{http_code} %{exitcode}\n`, "--retry", "0"}, code: 7, path: "refused"},
		{name: "302 without -L", script: []answer{{status: 302, headers: map[string]string{"Location": "/next"}, body: "moved\n"}, ok("there\n")}},
		{name: "-sSL", script: []answer{{status: 302, headers: map[string]string{"Location": "/next"}, body: "moved\n"}, ok("there\n")},
			args: []string{"-sSL", "-w", `%{url_effective} %{num_redirects}\n`}},
		{name: "-L --max-redirs", script: []answer{{status: 302, headers: map[string]string{"Location": "/again"}, body: "moved\n"}},
			args: []string{"-sSL", "--max-redirs", "2"}, stderr: true, code: 47},
		{name: "-L --max-redirs -w", script: []answer{{status: 302, headers: map[string]string{"Location": "/again"}, body: "moved\n"}},
			args: []string{"-sSL", "--max-redirs", "1", "-w", `%{http_code} %{num_redirects} %{url_effective}\n`}, stderr: true, code: 47},
		{name: "-iL --max-redirs", script: []answer{{status: 302, headers: map[string]string{"Location": "/again"}, body: "moved\n"}},
			args: []string{"-sSiL", "--max-redirs", "1"}, stderr: true, code: 47},
		{name: "-iL", script: []answer{{status: 302, headers: map[string]string{"Location": "/next"}, body: "moved\n"}, {status: 301, headers: map[string]string{"Location": "/last"}, body: "moved\n"}, ok("there\n")},
			args: []string{"-sSiL"}},
		{name: "-IL", script: []answer{{status: 302, headers: map[string]string{"Location": "/next"}, body: "moved\n"}, ok("there\n")},
			args: []string{"-sIL"}},
		{name: "TLS untrusted", script: []answer{ok("secret\n")}, tls: true, args: []string{"-sS", "--retry", "0"}, stderr: true, code: 60},
		{name: "-k", script: []answer{ok("secret\n")}, tls: true, args: []string{"-k"}},
		{name: "--http2 over TLS", script: []answer{ok("secret\n")}, tls: true, args: []string{"-sk", "--http2", "-w", "|%{http_version}"}},
		{name: "refused", args: []string{"-sS", "--retry", "0"}, path: "refused", stderr: true, code: 7},
		{name: "bad port", args: []string{"-sS"}, path: "http://127.0.0.1:99999/", stderr: true, code: 3},
		{name: "space in the URL", args: []string{"-sS"}, path: "http://127.0.0.1:1/a b", stderr: true, code: 3},
		{name: "-w url_effective without a path", script: []answer{ok("x")}, args: []string{"-s", "-w", `|%{url_effective}`}, path: "ROOT"},
		{name: "-w of the answer and connection", script: []answer{ok("x")}, args: []string{"-s", "-o", "/dev/null", "-w", wAll}},
		{name: "-w of a redirect not followed", script: []answer{{status: 302, headers: map[string]string{"Location": "/next?a=1"}, body: "moved\n"}}, args: []string{"-s", "-w", wAll}},
		{name: "-w of a redirect past --max-redirs", script: []answer{{status: 302, headers: map[string]string{"Location": "/again"}, body: "moved\n"}}, args: []string{"-sL", "--max-redirs", "0", "-w", wNoHeaders}, code: 47},
		{name: "-w after -L -e", script: []answer{{status: 302, headers: map[string]string{"Location": "/next"}, body: "moved\n"}, ok("there\n")}, args: []string{"-sL", "-e", "http://from.example/", "-w", wAll}},
		{name: "-w without an answer", args: []string{"-s", "--retry", "0", "-w", wAll}, path: "refused", code: 7},
		{name: "-w %{onerror} after an error", args: []string{"-s", "--retry", "0", "-w", `%{exitcode}%{onerror}!%{exitcode}`}, path: "refused", code: 7},
		{name: "-w %{onerror} after success", script: []answer{ok("x")}, args: []string{"-s", "-w", `%{exitcode}%{onerror}!%{exitcode}`}},
		{name: "-w %{stderr} %{stdout}", script: []answer{ok("x")}, args: []string{"-s", "-w", `a%{stderr}b%{stdout}c`}},
		{name: "-w unclosed", script: []answer{ok("x")}, args: []string{"-s", "-w", `|%header{date\n|%{unclosed\n|`}},
		{name: "-w a variable up to the next }", script: []answer{ok("x")}, args: []string{"-s", "-w", `%{unclosed\n|%header{date\n|%header{}|`}, stderr: true},
		{name: "-w backslashes", script: []answer{ok("x")}, args: []string{"-s", "-o", "/dev/null", "-w", `a\\b\q\%{http_code}\n`}},
		{name: "-g", script: []answer{ok("x\n")}, args: []string{"-sg"}},
		{name: "--no-progress-meter", script: []answer{ok("x\n")}, args: []string{"--no-progress-meter"}},
		{name: "--retry-connrefused", script: []answer{ok("x\n")}, args: []string{"-sS", "--retry", "1", "--retry-connrefused"}},
		{name: "-G with a space", script: []answer{ok("x\n")}, args: []string{"-sS", "-G", "-d", "y=a b"}, stderr: true, code: 3},
		{name: "unsupported protocol", args: []string{"-sS"}, path: "foo://127.0.0.1/", stderr: true, code: 1},
		{name: "empty reply", script: []answer{{close: true}}, args: []string{"-sS", "--retry", "0"}, stderr: true, code: 52},
		{name: "reset", script: []answer{{reset: true}}, args: []string{"-sS", "--retry", "0"}, stderr: true, code: 56},
		{name: "-m", script: []answer{{status: 200, body: "late\n", delay: 3 * time.Second}}, args: []string{"-sS", "-m", "0.5", "--retry", "0"}, stderr: true, code: 28},
		{name: "--connect-timeout on a TLS handshake", script: []answer{ok("x")}, args: []string{"-sS", "--connect-timeout", "0.3", "--retry", "0"}, path: "tls-on-plain", stderr: true, code: 28},
		{name: "-o", script: []answer{ok("to a file\n")}, args: []string{"-s", "-o", "OUT"}},
		{name: "429 with Retry-After then 200", script: []answer{{status: 429, headers: map[string]string{"Retry-After": "1"}, body: "slow down\n"}, ok("done\n")}, args: []string{"-sS", "--retry", "1"}, lastOnly: "done\n"},
		{name: "body cut short", script: []answer{{status: 200, headers: map[string]string{"Content-Length": "100"}, body: "partial", cut: true}}, args: []string{"-sS", "--retry", "1"}, stderr: true, code: 18},
		{name: "body cut short -o", script: []answer{{status: 200, headers: map[string]string{"Content-Length": "100"}, body: "partial", cut: true}}, args: []string{"-sS", "--retry", "1", "-o", "OUT"}, stderr: true, code: 18},
		{name: "body cut short then whole, --retry-all-errors -o", script: []answer{{status: 200, headers: map[string]string{"Content-Length": "100"}, body: "partial", cut: true}, ok("full\n")}, args: []string{"-s", "--retry", "1", "--retry-all-errors", "-o", "OUT"}, yaoki: []string{"--retry-delay", "0.01"}, curl: []string{"--retry-delay", "1"}},
		{name: "body cut short then whole, --retry-all-errors", script: []answer{{status: 200, headers: map[string]string{"Content-Length": "100"}, body: "partial", cut: true}, ok("full\n")}, args: []string{"-s", "--retry", "1", "--retry-all-errors"}, yaoki: []string{"--retry-delay", "0.01"}, curl: []string{"--retry-delay", "1"}, lastOnly: "full\n"},
		{name: "body cut short twice, --retry-all-errors", script: []answer{{status: 200, headers: map[string]string{"Content-Length": "100"}, body: "partial", cut: true}}, args: []string{"-sS", "--retry", "1", "--retry-all-errors", "-w", "|%{exitcode} %{http_code} %{size_download}"}, yaoki: []string{"--retry-delay", "0.01"}, curl: []string{"--retry-delay", "1"}, stderr: true, code: 18, lastOnly: "partial|18 200 7"},
		{name: "-o after a retry", script: []answer{status(503, "busy\n"), ok("done\n")}, args: []string{"-sS", "--retry", "1", "-o", "OUT"}, yaoki: fastRetries, curl: []string{"--retry-delay", "1"}},
		{name: "--max-filesize over", script: []answer{ok("hello\n")}, args: []string{"-sS", "--max-filesize", "5", "-w", "|%{http_code}|%{size_download}|%{exitcode}"}, stderr: true, code: 63},
		{name: "--max-filesize under", script: []answer{ok("hello\n")}, args: []string{"-sS", "--max-filesize", "1k"}},
		{name: "--max-filesize 0", script: []answer{ok("hello\n")}, args: []string{"-sS", "--max-filesize", "0"}},
		{name: "--max-filesize -i", script: []answer{ok("hello\n")}, args: []string{"-sSi", "--max-filesize", "5"}, stderr: true, code: 63},
		{name: "--max-filesize -f 404", script: []answer{status(404, "no such thing\n")}, args: []string{"-sSf", "--max-filesize", "5"}, stderr: true, code: 63},
		{name: "--max-filesize bad", script: []answer{ok("hello\n")}, args: []string{"-sS", "--max-filesize", "x"}, stderr: true, code: 2},
		{name: "-o in a missing folder", script: []answer{ok("x\n")}, args: []string{"-sS", "-o", filepath.Join(dir, "missing", "out")}, stderr: true, code: 23},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, tc.tls, append(tc.script, ok("unused"))[:max(1, len(tc.script))]...)
			url := s.url + "path?q=1"
			switch tc.path {
			case "":
			case "refused":
				url = "http://127.0.0.1:1/"
			case "ROOT":
				url = strings.TrimSuffix(s.url, "/")
			case "tls-on-plain":
				url = "https://" + silentListener(t) + "/"
			default:
				url = tc.path
			}
			outY, outC := filepath.Join(dir, tc.name+".yaoki"), filepath.Join(dir, tc.name+".curl")
			args := func(out string) []string {
				a := append([]string(nil), tc.args...)
				for i := range a {
					if a[i] == "OUT" {
						a[i] = out
					}
				}
				return append(a, url)
			}
			y := run(t, nil, append(append([]string{"http"}, tc.yaoki...), args(outY)...)...)
			s.restart()
			c := runCurl(t, append(append([]string(nil), tc.curl...), args(outC)...)...)
			if y.code != c.code || y.code != tc.code {
				t.Errorf("exit %d; curl %d; want %d\nyaoki stderr: %s\ncurl stderr: %s", y.code, c.code, tc.code, y.stderr, c.stderr)
			}
			if tc.lastOnly != "" {
				if y.stdout != tc.lastOnly || !strings.HasSuffix(c.stdout, tc.lastOnly) {
					t.Errorf("stdout: yaoki %q, curl %q; want yaoki to write the last answer only, %q", y.stdout, c.stdout, tc.lastOnly)
				}
			} else if y.stdout != c.stdout {
				t.Errorf("stdout differs:\nyaoki: %q\ncurl:  %q", y.stdout, c.stdout)
			}
			if ym, cm := messages(y.stderr, "yaoki"), messages(c.stderr, "curl"); (ym != "") != tc.stderr || (cm != "") != tc.stderr {
				t.Errorf("stderr messages: yaoki %q, curl %q; want them empty: %v", ym, cm, !tc.stderr)
			}
			if slicesContain(tc.args, "OUT") {
				a, _ := os.ReadFile(outY)
				b, _ := os.ReadFile(outC)
				if !bytes.Equal(a, b) || len(a) == 0 {
					t.Errorf("-o: yaoki wrote %q, curl %q", a, b)
				}
			}
		})
	}
}

// wAll is a -w format with the variables of the final answer and of its
// connection (%{local_port} differs from run to run).
const wAll = `[%{scheme}|%{http_version}|%{redirect_url}|%{num_headers}|%header{content-type}|%header{X-None}|%{filename_effective}|%{referer}|%{remote_ip}|%{remote_port}|%{local_ip}|%header{content-length}|%{http_code}|%{num_redirects}]\n`

// wNoHeaders is wAll without %header{}: past --max-redirs, curl writes the
// redirect's %{num_headers} but none of its headers.
var wNoHeaders = regexp.MustCompile(`%header\{[^}]*\}`).ReplaceAllString(wAll, "")

// silentListener accepts connections on a loopback port and never says a
// word on them (a TLS handshake that never ends), until the test ends.
func silentListener(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// messages returns the lines of stderr that start with "NAME" (curl's
// progress meter, which yaoki http does not draw, is left out).
func messages(stderr, name string) string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, name) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestHTTPSendsLikeCurl compares what the server receives from yaoki http
// and from curl for the flags that shape the request.
func TestHTTPSendsLikeCurl(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "payload")
	os.WriteFile(file, []byte("line1\r\nline2\n"), 0o600)
	for _, tc := range []struct {
		name    string
		args    []string
		headers []string // headers both must send alike
	}{
		{"-d", []string{"-d", "a=1", "-d", "b=2"}, []string{"Content-Type"}},
		{"-d @file", []string{"-d", "@" + file}, []string{"Content-Type"}},
		{"--data-binary @file", []string{"--data-binary", "@" + file}, []string{"Content-Type"}},
		{"--data-raw", []string{"--data-raw", "@literal"}, []string{"Content-Type"}},
		{"mixed data in order", []string{"--data-raw", "x=1", "-d", "y=2", "--data-binary", "@" + file}, nil},
		{"--data-urlencode", []string{"--data-urlencode", "a b&c=d é~._-*+", "--data-urlencode", "=x y", "--data-urlencode", "n=v w=z", "--data-urlencode", "@" + file, "--data-urlencode", "m@" + file, "-d", "raw=1 2", "--data-urlencode", "plain/?#"}, []string{"Content-Type"}},
		// curl writes the hex digits of the escapes -G appends in lower
		// case (%3d), those of the URL as written.
		{"-G --data-urlencode", []string{"-G", "--data-urlencode", "q=a b", "--data-urlencode", "r=(a)!$'@", "--data-urlencode", "s=/=&", "-d", "t=%3D%ZZ%4"}, nil},
		{"--json", []string{"--json", `{"sku":42}`}, []string{"Content-Type", "Accept"}},
		{"--json @file", []string{"--json", "@" + file}, []string{"Content-Type", "Accept"}},
		{"-G", []string{"-G", "-d", "a=1", "-d", "b=2"}, nil},
		{"-X PUT", []string{"-X", "PUT", "-d", "v"}, nil},
		{"-X get", []string{"-X", "get"}, nil},
		{"-X Patch -d", []string{"-X", "Patch", "-d", "v"}, nil},
		{"-u", []string{"-u", "ann:s3cret"}, []string{"Authorization"}},
		{"-A -e", []string{"-A", "agent/1", "-e", "http://from.example/"}, []string{"User-Agent", "Referer"}},
		{"-H", []string{"-H", "X-Trace: abc", "-H", "Accept: text/plain"}, []string{"X-Trace", "Accept"}},
		{"-H removes", []string{"-H", "User-Agent:", "-H", "Accept:"}, []string{"User-Agent", "Accept"}},
		{"-I", []string{"-I"}, nil},
		{"-H Host", []string{"-H", "Host: example.test"}, nil},
		{"-H twice", []string{"-H", "X-Tag: a", "-H", "X-Tag: b", "-H", "Accept: text/a", "-H", "Accept: text/b"}, []string{"X-Tag", "Accept"}},
		{"-H empty value", []string{"-H", "X-Empty;"}, []string{"X-Empty"}},
		{"-H removes a default only", []string{"-H", "X-Tag: a", "-H", "X-Tag:"}, []string{"X-Tag"}},
		{"-A empty", []string{"-A", ""}, []string{"User-Agent"}},
		// yaoki's own header, which 'Name:' removes as it removes curl's.
		{"-H removes Attempt-Count", []string{"-H", "Attempt-Count:"}, []string{"Attempt-Count"}},
		{"--oauth2-bearer", []string{"--oauth2-bearer", "tok1"}, []string{"Authorization"}},
		{"--oauth2-bearer over -u", []string{"--oauth2-bearer", "tok1", "-u", "a:b"}, []string{"Authorization"}},
		{"-H Authorization over --oauth2-bearer", []string{"--oauth2-bearer", "tok1", "-H", "Authorization: X"}, []string{"Authorization"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, ok("ok\n"))
			url := s.url + "p?z=0"
			y := run(t, nil, append(append([]string{"http", "-s"}, tc.args...), url)...)
			ys := s.requests()
			s.restart()
			c := runCurl(t, append(append([]string{"-s"}, tc.args...), url)...)
			cs := s.requests()
			if y.code != 0 || c.code != 0 || len(ys) != 1 || len(cs) != 1 {
				t.Fatalf("yaoki exit %d (%d requests), curl exit %d (%d requests)\n%s", y.code, len(ys), c.code, len(cs), y.stderr)
			}
			a, b := ys[0], cs[0]
			if a.method != b.method || a.uri != b.uri || a.body != b.body || a.host != b.host {
				t.Errorf("yaoki sent %s %s (Host %s) %q; curl %s %s (Host %s) %q", a.method, a.uri, a.host, a.body, b.method, b.uri, b.host, b.body)
			}
			for _, h := range tc.headers {
				if got, want := a.header.Values(h), b.header.Values(h); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
					t.Errorf("%s: yaoki sent %q, curl %q", h, got, want)
				}
			}
		})
	}
}

// -v writes each attempt's request and answer headers as curl does, with
// the retry decisions between them ("Retry-After: 0" is no hint: the wait
// comes from the backoff, as curl's does).
func TestHTTPVerboseEveryAttempt(t *testing.T) {
	s := startScripted(t, false, answer{status: 503, headers: map[string]string{"Retry-After": "0"}, body: "busy\n"}, ok("done\n"))
	y := run(t, nil, append(append([]string{"http", "-v", "--retry", "2"}, fastRetries...), s.url)...)
	s.restart()
	c := runCurl(t, "-v", s.url)
	if y.code != 0 || y.stdout != "busy\ndone\n"[5:] {
		t.Fatalf("exit %d, stdout %q: want 0 and the 200's body\n%s", y.code, y.stdout, y.stderr)
	}
	for line, want := range map[string]int{"> GET / HTTP/1.1": 2, "< HTTP/1.1 503 Service Unavailable": 1, "< Retry-After: 0": 1, "< HTTP/1.1 200 OK": 1} {
		if n := strings.Count(y.stderr, line+"\n"); n != want {
			t.Errorf("yaoki -v writes %q %d times, want %d:\n%s", line, n, want, y.stderr)
		}
	}
	for _, line := range []string{"> GET / HTTP/1.1", "> Host: " + strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/"), "> Accept: */*", "< HTTP/1.1 503 Service Unavailable", "< Content-Length: 5"} {
		if !strings.Contains(c.stderr, line) {
			t.Errorf("curl -v lacks %q: the comparison is off:\n%s", line, c.stderr)
		}
		if !strings.Contains(y.stderr, line) {
			t.Errorf("yaoki -v lacks %q, which curl -v writes:\n%s", line, y.stderr)
		}
	}
	for _, want := range []string{"> Attempt-Count: 1", "> Attempt-Count: 2", "< HTTP/1.1 200 OK", "* attempt 1: 503 Service Unavailable", "* retrying: waiting", "from backoff", "mode: "} {
		if !strings.Contains(y.stderr, want) {
			t.Errorf("yaoki -v lacks %q:\n%s", want, y.stderr)
		}
	}
}

// --retry-delay D makes every wait D, as curl's: after throttling answers
// too, without jitter, without growth.
func TestHTTPRetryDelay(t *testing.T) {
	s := startScripted(t, false, status(503, "busy\n"), status(500, "oops\n"), ok("done\n"))
	y := run(t, nil, "http", "-v", "--retry", "2", "--retry-delay", "0.01", s.url)
	if y.code != 0 || y.stdout != "done\n" || len(s.requests()) != 3 {
		t.Fatalf("exit %d, stdout %q after %d requests; want 0 and done after 3\n%s", y.code, y.stdout, len(s.requests()), y.stderr)
	}
	for _, want := range []string{"waiting 0.010s before attempt 2, from backoff", "waiting 0.010s before attempt 3, from backoff"} {
		if !strings.Contains(y.stderr, want) {
			t.Errorf("-v lacks %q:\n%s", want, y.stderr)
		}
	}
}

// %{num_retries} (newer curls have it; 7.88 does not) and %{time_total}.
func TestHTTPWriteOutRetries(t *testing.T) {
	s := startScripted(t, false, status(500, "x"), status(502, "y"), ok("z"))
	y := run(t, nil, append(append([]string{"http", "-s", "-o", "/dev/null", "-w", `%{num_retries} %{http_code} %{time_total}\n`}, fastRetries...), s.url)...)
	if y.code != 0 || !regexp.MustCompile(`^2 200 \d+\.\d{6}\n$`).MatchString(y.stdout) {
		t.Fatalf("exit %d, -w wrote %q; want 0 and \"2 200 SECONDS.MICROS\\n\"", y.code, y.stdout)
	}
	y = run(t, nil, "http", "-s", "-w", `%{nosuch}|\n`, s.url)
	if !strings.Contains(y.stderr, "unknown --write-out variable: 'nosuch'") || !strings.HasSuffix(y.stdout, "|\n") {
		t.Fatalf("unknown variable: stdout %q, stderr %q", y.stdout, y.stderr)
	}
}

// A POST without Idempotency-Key that gets a retryable answer is sent
// once; stderr says why, once; the exit code is the one a GET that gave up
// on the same answer gets.
func TestHTTPPostWithoutKeyNotice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script answer
		args   []string
		code   int
	}{
		{"503", status(503, "busy\n"), nil, 0},
		{"503 -f", status(503, "busy\n"), []string{"-f"}, 22},
		{"reset", answer{reset: true}, nil, 56},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, tc.script)
			get := run(t, nil, append(append(append([]string{"http", "--retry", "1"}, fastRetries...), tc.args...), s.url)...)
			s.restart()
			post := run(t, nil, append(append(append([]string{"http", "-d", "x=1", "--retry", "1"}, fastRetries...), tc.args...), s.url)...)
			if n := len(s.requests()); n != 1 {
				t.Fatalf("the POST was sent %d times, want once", n)
			}
			if post.code != tc.code || get.code != tc.code {
				t.Errorf("POST exit %d, GET exit %d; want both %d", post.code, get.code, tc.code)
			}
			if n := strings.Count(post.stderr, "not retried"); n != 1 || !strings.Contains(post.stderr, "--idempotency-key auto") {
				t.Errorf("stderr says \"not retried\" %d times, want once with the way out (--idempotency-key auto):\n%s", n, post.stderr)
			}
		})
	}
}

// Bad input is refused before anything is sent, with exit 2 and a message
// naming the flag.
func TestHTTPBadInput(t *testing.T) {
	s := startScripted(t, false, ok("x"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-X", ""}, `-X ""`},
		{[]string{"-X", "GE T"}, "-X"},
		{[]string{"--idempotency-key", ""}, "--idempotency-key"},
		{[]string{"-H", "Bad Name: v"}, "is not a header name"},
		{[]string{"-H", "NoColon"}, "want 'Name: value'"},
		{[]string{"-H", "X-Half; v"}, "want 'Name: value'"},
		{[]string{"-H", "X-Half; "}, "want 'Name: value'"},
		{[]string{"-H", "Host:"}, "always sends Host"},
		{[]string{"--retry", "-1"}, "--retry -1"},
		{[]string{"--retry", "2", "--max-attempts", "3"}, "say the same thing"},
		{[]string{"--max-redirs", "-2"}, "--max-redirs"},
		{[]string{"--connect-timeout", "0"}, "--connect-timeout"},
		{[]string{"--connect-timeout", "soon"}, "connect-timeout"},
		{[]string{"-m", "-1"}, "max-time"},
		{[]string{"-u", "nopassword"}, "USER:PASSWORD"},
		{[]string{"--json", "{}", "-d", "x"}, "--json cannot be combined"},
		{[]string{"--bogus"}, "unknown flag"},
		{[]string{"--retry-max-time", "-1"}, `invalid argument "-1" for "--retry-max-time" flag`},
		{[]string{"--retry-delay", "1", "--base", "2s"}, "--retry-delay 1.000s and --base cannot be combined"},
		{[]string{"--retry-delay", "1", "--jitter", "full"}, "--retry-delay 1.000s and --jitter cannot be combined"},
		{[]string{"--retry-delay", "soon"}, `"soon" is not a duration`},
		{[]string{"-o", "x", "-O"}, "-o x and -O both name the file"},
		{[]string{"-sF", "a"}, `-F "a": want NAME=VALUE`},
		{[]string{"-e", "http://from.example/\r\nX-Injected: 1"}, "a Referer cannot hold control characters"},
	} {
		r := run(t, nil, append(append([]string{"http"}, tc.args...), s.url)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("yaoki http %q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if n := len(s.requests()); n != 0 {
		t.Errorf("bad input sent %d requests, want none", n)
	}
	r := run(t, nil, "http", "-d", "@/nonexistent/file", s.url)
	if r.code != 26 || !strings.Contains(r.stderr, "/nonexistent/file") {
		t.Errorf("-d @missing: exit %d, %q; want 26 (curl's read error)", r.code, r.stderr)
	}
}

// TestHTTPRedirectsLikeCurl compares, for -L, what the redirect's target
// receives from yaoki http and from curl: the method (kept by -X, as curl
// keeps it), the body, no Referer of yaoki's own, and no credentials for
// another origin (another port is another origin, as in curl).
func TestHTTPRedirectsLikeCurl(t *testing.T) {
	redirect := func(code int, to string) answer {
		return answer{status: code, headers: map[string]string{"Location": to}, body: "moved\n"}
	}
	for _, tc := range []struct {
		name  string
		code  int
		other bool // redirect to another port
		args  []string
	}{
		{"-d 302", 302, false, []string{"-d", "a=1"}},
		{"-d 303", 303, false, []string{"-d", "a=1"}},
		{"-d 307", 307, false, []string{"-d", "a=1"}},
		{"-d 308", 308, false, []string{"-d", "a=1"}},
		{"-X DELETE 301", 301, false, []string{"-X", "DELETE"}},
		{"-X PUT -d 302", 302, false, []string{"-X", "PUT", "-d", "a=1"}},
		{"-X PUT -d 307", 307, false, []string{"-X", "PUT", "-d", "a=1"}},
		{"-X delete 302", 302, false, []string{"-X", "delete"}},
		{"-e", 302, false, []string{"-e", "http://from.example/"}},
		{"-u same origin", 302, false, []string{"-u", "ann:s3cret", "-H", "Cookie: c=1"}},
		{"-u another port", 302, true, []string{"-u", "ann:s3cret", "-H", "Cookie: c=1"}},
		{"-H Authorization another port", 307, true, []string{"-H", "Authorization: Bearer t", "-d", "a=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := startScripted(t, false, ok("there\n"))
			to := "/next"
			if tc.other {
				to = target.url + "next"
			}
			s := startScripted(t, false, redirect(tc.code, to), ok("there\n"))
			if !tc.other {
				target = s
			}
			landed := func() []seen {
				if tc.other {
					return target.requests()
				}
				if r := s.requests(); len(r) > 1 {
					return r[1:]
				}
				return nil
			}
			y := run(t, nil, append(append([]string{"http", "-sSL"}, tc.args...), s.url+"first")...)
			ys := landed()
			s.restart()
			target.restart()
			c := runCurl(t, append(append([]string{"-sSL"}, tc.args...), s.url+"first")...)
			cs := landed()
			if y.code != 0 || c.code != 0 || len(ys) != 1 || len(cs) != 1 {
				t.Fatalf("yaoki exit %d (%d requests at the target), curl exit %d (%d requests)\n%s", y.code, len(ys), c.code, len(cs), y.stderr)
			}
			a, b := ys[0], cs[0]
			if a.method != b.method || a.uri != b.uri || a.body != b.body {
				t.Errorf("yaoki sent %s %s %q; curl %s %s %q", a.method, a.uri, a.body, b.method, b.uri, b.body)
			}
			for _, h := range []string{"Authorization", "Cookie", "Referer", "Content-Type"} {
				if got, want := a.header.Values(h), b.header.Values(h); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
					t.Errorf("%s: yaoki sent %q, curl %q", h, got, want)
				}
			}
		})
	}
}

// Past --max-redirs, the message counts no attempts: each redirect was
// one answer, not a failed attempt.
func TestHTTPMaxRedirsMessage(t *testing.T) {
	s := startScripted(t, false, answer{status: 302, headers: map[string]string{"Location": "/again"}, body: "moved\n"})
	r := run(t, nil, "http", "-sSL", "--max-redirs", "1", s.url)
	if r.code != 47 || r.stderr != "yaoki: (47) maximum (1) redirects followed\n" {
		t.Errorf("exit %d, stderr %q; want 47 and \"yaoki: (47) maximum (1) redirects followed\"", r.code, r.stderr)
	}
}

// A '%' that starts no escape is sent as written, as curl sends it, in
// the path, the query and the fragment (which is not sent, but is part
// of %{url_effective}); so are the characters net/url would escape; the
// "." and ".." segments are removed, unless --path-as-is.
func TestHTTPURLAsWrittenLikeCurl(t *testing.T) {
	s := startScripted(t, false, ok("ok\n"))
	for _, tc := range []struct {
		path string
		args []string
	}{
		{"a%zz/b%2?c=%q#f%zz", nil}, {"%", nil}, {"a%20b%zz", nil}, {"x%zz/y?q=%e9%zz", nil}, {"ok%41?%", nil},
		// What net/url escapes (or writes in upper case) and curl sends
		// as written; dot segments, which curl removes.
		{`a"b<c>d\e^f|g` + "`h", nil}, {"é/ü?q=é", nil},
		{"a/../b", nil}, {"a/./c/.?q=/../", nil}, {"x/..", nil}, {"./x/../../y", nil}, {"a/b/../%zz/..", nil},
		{"a/../b/./c", []string{"--path-as-is"}}, {"a/%2e%2e/b", nil},
	} {
		path := tc.path
		t.Run(strings.Join(append([]string{path}, tc.args...), " "), func(t *testing.T) {
			s.restart()
			args := append(append([]string{"-sS", "-w", `|%{url_effective} %{exitcode}`}, tc.args...), s.url+path)
			y := run(t, nil, append([]string{"http"}, args...)...)
			ys := s.requests()
			s.restart()
			c := runCurl(t, args...)
			cs := s.requests()
			if y.code != 0 || c.code != 0 || len(ys) != 1 || len(cs) != 1 {
				t.Fatalf("yaoki exit %d (%d requests), curl exit %d (%d requests)\n%s", y.code, len(ys), c.code, len(cs), y.stderr)
			}
			if ys[0].uri != cs[0].uri {
				t.Errorf("yaoki sent %q, curl %q", ys[0].uri, cs[0].uri)
			}
			if y.stdout != c.stdout {
				t.Errorf("stdout: yaoki %q, curl %q", y.stdout, c.stdout)
			}
		})
	}
}

// -e 'URL;auto' sends URL on the first request and, with -L, the URL
// left (without credentials and fragment) on each redirect followed, as
// curl does; -e ';auto' sends no Referer on the first.
func TestHTTPRefererAutoLikeCurl(t *testing.T) {
	redirect := func(code int, to string) answer {
		return answer{status: code, headers: map[string]string{"Location": to}, body: "moved\n"}
	}
	for _, tc := range []struct {
		name string
		args []string
		path string // after the first server's URL
	}{
		{"-e ;auto", []string{"-L", "-e", ";auto"}, "first?q=1#frag"},
		{"-e URL;auto", []string{"-L", "-e", "http://from.example/;auto"}, "first"},
		{"-e URL;autoXYZ", []string{"-L", "-e", "http://from.example/p;autoXYZ"}, "first"},
		{"-e URL;auto without -L", []string{"-e", "http://from.example/;auto"}, "first"},
		{"-e ;auto without -L", []string{"-e", ";auto"}, "first"},
		{"-e ;auto with credentials", []string{"-L", "-e", ";auto"}, "CREDS"},
		{"-e ;auto then -e URL", []string{"-L", "-e", ";auto", "-e", "http://from.example/"}, "first"},
		{"-e ;auto on a written path", []string{"-L", "-e", ";auto"}, "a%zz/b?x=%q"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := startScripted(t, false, ok("there\n"))
			s := startScripted(t, false, redirect(302, "/two"), redirect(307, target.url+"three#f"), ok("unused\n"))
			url := s.url + tc.path
			if tc.path == "CREDS" {
				url = strings.Replace(s.url, "http://", "http://ann:pw@", 1) + "first#frag"
			}
			all := func() []seen { return append(s.requests(), target.requests()...) }
			y := run(t, nil, append(append([]string{"http", "-sS"}, tc.args...), url)...)
			ys := all()
			s.restart()
			target.restart()
			c := runCurl(t, append(append([]string{"-sS"}, tc.args...), url)...)
			cs := all()
			if y.code != c.code || len(ys) != len(cs) || len(ys) == 0 {
				t.Fatalf("yaoki exit %d (%d requests), curl exit %d (%d requests)\n%s", y.code, len(ys), c.code, len(cs), y.stderr)
			}
			for i := range ys {
				if got, want := ys[i].header.Values("Referer"), cs[i].header.Values("Referer"); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
					t.Errorf("request %d (%s): yaoki sent Referer %q, curl %q", i+1, cs[i].uri, got, want)
				}
			}
		})
	}
}

// -O names the file from the URL (in --output-dir), -D writes the headers
// to a file or stdout, as curl does: the same files, stdout and exit code.
func TestHTTPOutputFilesLikeCurl(t *testing.T) {
	redirect := answer{status: 302, headers: map[string]string{"Location": "/next/there.txt"}, body: "moved\n"}
	for _, tc := range []struct {
		name   string
		script []answer
		args   []string // DIR: a folder of each run's own
		path   string
		code   int
	}{
		{"-O", []answer{ok("file\n")}, []string{"-s", "-O", "--output-dir", "DIR", "-w", `%{filename_effective}`}, "dir/f%20x.txt?q=1", 0},
		{"-O with -L names the file from the first URL", []answer{redirect, ok("file\n")}, []string{"-sL", "-O", "--output-dir", "DIR"}, "first.txt", 0},
		{"-O without a file name", []answer{ok("file\n")}, []string{"-s", "-O", "--output-dir", "DIR"}, "dir/", 23},
		{"-O with -f 404", []answer{status(404, "no\n")}, []string{"-sf", "-O", "--output-dir", "DIR"}, "gone.txt", 22},
		{"-D", []answer{ok("file\n")}, []string{"-s", "-D", "DIR/headers"}, "x", 0},
		{"-D with -L", []answer{redirect, ok("file\n")}, []string{"-sL", "-D", "DIR/headers", "-o", "DIR/body"}, "x", 0},
		{"-D with -f 404", []answer{status(404, "no\n")}, []string{"-sf", "-D", "DIR/headers"}, "x", 22},
		{"-D -", []answer{ok("file\n")}, []string{"-s", "-D", "-"}, "x", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, tc.script...)
			runIn := func(program string) (result, map[string]string) {
				dir := t.TempDir()
				args := make([]string, len(tc.args))
				for i, a := range tc.args {
					args[i] = strings.Replace(a, "DIR", dir, 1)
				}
				args = append(args, s.url+tc.path)
				var r result
				if program == "curl" {
					r = runCurl(t, args...)
				} else {
					r = run(t, nil, append([]string{"http"}, args...)...)
				}
				r.stdout = strings.ReplaceAll(r.stdout, dir, "DIR")
				files := map[string]string{}
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
					files[e.Name()] = string(b)
				}
				return r, files
			}
			y, yf := runIn("yaoki")
			s.restart()
			c, cf := runIn("curl")
			if y.code != c.code || y.code != tc.code {
				t.Errorf("exit %d; curl %d; want %d\nyaoki stderr: %s\ncurl stderr: %s", y.code, c.code, tc.code, y.stderr, c.stderr)
			}
			if y.stdout != c.stdout {
				t.Errorf("stdout differs:\nyaoki: %q\ncurl:  %q", y.stdout, c.stdout)
			}
			if fmt.Sprintf("%q", yf) != fmt.Sprintf("%q", cf) {
				t.Errorf("files differ:\nyaoki: %q\ncurl:  %q", yf, cf)
			}
		})
	}
}
