package e2e

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// -i, -I, -D and %{size_header} give the headers of an HTTP/1.x answer
// as the server wrote them, as curl does: in its order, with its case and
// spacing, its line ends, the Transfer-Encoding net/http takes out of
// the header, and the 1xx answers before the final one.
func TestHTTPHeadersAsWrittenLikeCurl(t *testing.T) {
	const odd = "HTTP/1.1 200 OK\r\nX-RateLimit-Remaining: 9\r\nETag: \"v1\"\r\ncontent-type: text/plain\r\nWWW-Authenticate:   Basic  \r\nContent-Length: 3\r\n\r\nabc"
	redirect := answer{wire: "HTTP/1.1 302 Found\r\nlocation: /next\r\nX-Hop: 1\r\nContent-Length: 0\r\n\r\n"}
	for _, tc := range []struct {
		name   string
		script []answer
		args   []string
		tls    bool // HTTPS without HTTP/2 (-k)
	}{
		{"-i", []answer{{wire: odd}}, []string{"-i"}, false},
		{"-D -", []answer{{wire: odd}}, []string{"-D", "-", "-o", "/dev/null"}, false},
		{"-I", []answer{{wire: "HTTP/1.1 200 OK\r\nX-RateLimit-Remaining: 9\r\nETag: \"v1\"\r\nContent-Length: 3\r\n\r\n"}}, []string{"-I"}, false},
		{"%{size_header}", []answer{{wire: odd}}, []string{"-o", "/dev/null", "-w", "%{size_header} %{num_headers} %header{etag}"}, false},
		{"bare line feeds", []answer{{wire: "HTTP/1.1 200 OK\nX-Odd:   spaced  \nx-lower: 1\nContent-Length: 3\n\nabc"}}, []string{"-i", "-w", "|%{size_header}"}, false},
		{"100 Continue first", []answer{{wire: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"}}, []string{"-i", "-w", "|%{size_header}"}, false},
		{"chunked", []answer{{wire: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n3\r\nabc\r\n0\r\n\r\n"}}, []string{"-i", "-w", "|%{size_header}"}, false},
		{"HTTP/1.0", []answer{{wire: "HTTP/1.0 200 Fine\r\nserver: old\r\nContent-Length: 3\r\n\r\nabc"}}, []string{"-i"}, false},
		{"-iL", []answer{redirect, {wire: odd}}, []string{"-iL", "-w", "|%{size_header}"}, false},
		{"-L -D -", []answer{redirect, {wire: odd}}, []string{"-L", "-D", "-"}, false},
		{"chunked with a trailer -i", []answer{{wire: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 9\r\n\r\n"}}, []string{"-i"}, false},
		{"chunked with a trailer -D -", []answer{{wire: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 9\r\n\r\n"}}, []string{"-D", "-", "-o", "/dev/null"}, false},
		{"-i over TLS", []answer{{wire: odd}}, []string{"-i", "-k", "-w", "|%{size_header} %{http_version} %{scheme}"}, true},
		{"-iL over TLS", []answer{redirect, {wire: odd}}, []string{"-iL", "-k"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, tc.tls, tc.script...)
			args := append(append([]string{"-sS", "--retry", "0"}, tc.args...), s.url+"p")
			y := runAs(t, "yaoki", args...)
			s.restart()
			c := runAs(t, "curl", args...)
			if y.code != 0 || c.code != 0 {
				t.Fatalf("exit: yaoki %d, curl %d; want 0\nyaoki: %s\ncurl: %s", y.code, c.code, y.stderr, c.stderr)
			}
			if y.stdout != c.stdout {
				t.Errorf("stdout:\nyaoki: %q\ncurl:  %q", y.stdout, c.stdout)
			}
			if !strings.Contains(tc.name, "size") && !strings.Contains(y.stdout, "HTTP/1.") {
				t.Errorf("stdout %q: want the headers", y.stdout)
			}
		})
	}
}

// Over HTTP/2, -i, -D and %{size_header} write the status line as curl
// 7.88 writes it ("HTTP/2 200 ", no reason phrase) and the header names
// in lower case, as HTTP/2 sends them: a script that greps for "HTTP/2
// 200" or "^x-ratelimit-remaining:" finds them. (net/http keeps no order
// of an HTTP/2 header: the lines are compared sorted.)
func TestHTTPHeadersOverHTTP2LikeCurl(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Date"] = []string{"Wed, 02 Dec 2026 05:31:02 GMT"}
		h.Set("X-RateLimit-Remaining", "9")
		h.Set("ETag", `"v1"`)
		h.Add("Set-Cookie", "a=1")
		h.Add("Set-Cookie", "b=2")
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/p", http.StatusFound)
			return
		}
		fmt.Fprintln(w, "hello")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	// sorted sorts the lines of each header section.
	sorted := func(s string) string {
		var out []string
		for _, sec := range strings.SplitAfter(s, "\r\n\r\n") {
			status, rest, _ := strings.Cut(sec, "\r\n")
			lines := strings.Split(rest, "\r\n")
			sort.Strings(lines)
			out = append(out, status+"\r\n"+strings.Join(lines, "\r\n"))
		}
		return strings.Join(out, "|")
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"-i", []string{"-i", srv.URL + "/p"}},
		{"-I", []string{"-I", srv.URL + "/p"}},
		{"-D - and %{size_header}", []string{"-D", "-", "-o", "/dev/null", "-w", "%{size_header}", srv.URL + "/p"}},
		{"-iL", []string{"-iL", "-w", "|%{size_header}", srv.URL + "/redirect"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-sS", "--retry", "0", "--cacert", ca}, tc.args...)
			y, c := runAs(t, "yaoki", args...), runAs(t, "curl", args...)
			if y.code != 0 || c.code != 0 {
				t.Fatalf("exit: yaoki %d, curl %d; want 0\nyaoki: %s\ncurl: %s", y.code, c.code, y.stderr, c.stderr)
			}
			if !strings.HasPrefix(y.stdout, "HTTP/2 ") || sorted(y.stdout) != sorted(c.stdout) {
				t.Errorf("stdout:\nyaoki: %q\ncurl:  %q", y.stdout, c.stdout)
			}
		})
	}
}

// A server that answers HEAD with a body (a fault of the server's) gets
// from yaoki http -sI what it gets from curl: the headers, exit 0 and
// nothing on stderr (net/http's log line about the bytes that came on
// the idle connection is not written).
func TestHTTPHeadAnsweredWithBodyLikeCurl(t *testing.T) {
	s := startScripted(t, false, answer{wire: "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\n"})
	args := []string{"-sI", "--retry", "0", s.url + "p"}
	y := runAs(t, "yaoki", args...)
	s.restart()
	c := runAs(t, "curl", args...)
	if y.code != 0 || c.code != 0 || y.stdout != c.stdout {
		t.Errorf("yaoki exit %d, %q; curl exit %d, %q", y.code, y.stdout, c.code, c.stdout)
	}
	if y.stderr != "" || c.stderr != "" {
		t.Errorf("stderr: yaoki %q, curl %q; want nothing", y.stderr, c.stderr)
	}
}

// runInput runs the program at path with stdin as its standard input, as
// runProgram runs it.
func runInput(t *testing.T, path, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, path, args...)
	c.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s %v: %v", path, args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// -H @FILE sends FILE's lines as headers, each as its own -H, as curl
// 7.88 reads them: split at CR and LF, empty lines skipped; -H @- reads
// stdin. A script keeps a token out of its command line this way.
func TestHTTPHeadersFromFileLikeCurl(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "headers")
	const lines = "Authorization: Bearer s3cret\r\n\r\nX-Trace: a\nAccept: text/plain\nX-Trace: b\nUser-Agent:\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startScripted(t, false, ok("ok\n"))
	for _, args := range [][]string{
		{"-H", "@" + file},
		{"-H", "X-First: 1", "-H", "@-", "-H", "X-Last: 2"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			s.restart()
			all := append(append([]string{"-sS"}, args...), s.url)
			y := runInput(t, yaoki, lines, append([]string{"http"}, all...)...)
			ys := s.requests()
			s.restart()
			c := runInput(t, curlPath, lines, all...)
			cs := s.requests()
			if y.code != 0 || c.code != 0 || len(ys) != 1 || len(cs) != 1 {
				t.Fatalf("yaoki exit %d (%d requests), curl exit %d (%d requests)\n%s", y.code, len(ys), c.code, len(cs), y.stderr)
			}
			for _, h := range []string{"Authorization", "X-Trace", "Accept", "User-Agent", "X-First", "X-Last"} {
				if got, want := ys[0].header.Values(h), cs[0].header.Values(h); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
					t.Errorf("%s: yaoki sent %q, curl %q", h, got, want)
				}
			}
		})
	}
	// A file that cannot be read: curl warns and sends without it; yaoki
	// http refuses to send a request without the headers asked for
	// (exit 26, as for -d @FILE).
	r := run(t, nil, "http", "-sS", "-H", "@"+filepath.Join(dir, "missing"), s.url)
	if r.code != 26 || !strings.Contains(r.stderr, "-H @") {
		t.Errorf("-H @missing: exit %d, stderr %q; want 26 naming -H @", r.code, r.stderr)
	}
}
