package e2e

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A reader that stops reading stdout early (`yaoki http URL | head -c
// 10`) makes the write fail as curl's does: exit 23, with the cookie jar
// of -c still written at the end of the run, where a Go program is killed
// by SIGPIPE (exit 141 in a shell) and writes nothing more.
func TestHTTPStdoutClosedLikeCurl(t *testing.T) {
	big := answer{status: 200, headers: map[string]string{"Content-Type": "text/plain", "Set-Cookie": "sid=abc; Path=/"}, body: strings.Repeat("0123456789abcdef", 1<<16)}
	s := startScripted(t, false, big)
	for _, who := range []string{"yaoki", "curl"} {
		path, args := yaoki, []string{"http"}
		if who == "curl" {
			if _, err := os.Stat(curlPath); err != nil {
				t.Skipf("no curl at %s to compare with", curlPath)
			}
			path, args = curlPath, nil
		}
		jar := filepath.Join(t.TempDir(), "jar")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, path, append(args, "-sS", "--retry", "0", "-c", jar, s.url+"p")...)
		var errb strings.Builder
		c.Stderr = &errb
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(out, make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		out.Close() // the reader goes away: the next writes to the pipe fail
		err = c.Wait()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode() // -1 when a signal ended it
		}
		if code != 23 {
			t.Errorf("%s: exit %d (%v), stderr %q; want 23, a write error", who, code, err, errb.String())
		}
		if b, err := os.ReadFile(jar); err != nil || !strings.Contains(string(b), "sid\tabc") {
			t.Errorf("%s: -c's jar: %q, %v; want the cookie sid written", who, b, err)
		}
		s.restart()
	}
}

// With one URL and two -o, the body goes to the first file, as curl
// writes it (the -o's after the first would be for the next URLs).
func TestHTTPTwoOutputsLikeCurl(t *testing.T) {
	s := startScripted(t, false, ok("hello\n"))
	for _, who := range []string{"yaoki", "curl"} {
		dir := t.TempDir()
		first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
		r := runAs(t, who, "-s", "-o", first, "-o", second, s.url+"p")
		b, err := os.ReadFile(first)
		_, err2 := os.Stat(second)
		if r.code != 0 || err != nil || string(b) != "hello\n" || err2 == nil {
			t.Errorf("%s: exit %d, first %q (%v), second made: %v; want the body in the first file only", who, r.code, b, err, err2 == nil)
		}
	}
}

// yaoki http sends one URL: several (as arguments, or --url more than
// once), which curl would fetch one after the other, are refused as bad
// usage before anything is sent, rather than all but the last dropped.
func TestHTTPSeveralURLsRefused(t *testing.T) {
	s := startScripted(t, false, ok("hello\n"))
	for _, args := range [][]string{
		{s.url + "a", s.url + "b"},
		{"--url", s.url + "a", "--url", s.url + "b"},
		{"--url", s.url + "a", s.url + "b"},
	} {
		r := run(t, nil, append([]string{"http", "-s"}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "exactly one URL") {
			t.Errorf("yaoki http %q: exit %d, stderr %q; want 2 and 'exactly one URL'", args, r.code, r.stderr)
		}
	}
	if n := len(s.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

// -H 'Transfer-Encoding: chunked' with a body sends the body chunked, as
// curl does: the server gets Transfer-Encoding: chunked and no
// Content-Length, where Go's client would send Content-Length.
func TestHTTPChunkedBodyLikeCurl(t *testing.T) {
	s := startScripted(t, false, ok("hello\n"))
	var got [2]seen
	for i, who := range []string{"yaoki", "curl"} {
		r := runAs(t, who, "-sS", "--retry", "0", "-H", "Transfer-Encoding: chunked", "--data-binary", "a=1&b=2", s.url+"p")
		reqs := s.requests()
		if r.code != 0 || len(reqs) != 1 {
			t.Fatalf("%s: exit %d, %d requests; want 0 and 1\n%s", who, r.code, len(reqs), r.stderr)
		}
		got[i] = reqs[0]
		s.restart()
	}
	for i, who := range []string{"yaoki", "curl"} {
		g := got[i]
		if g.method != "POST" || g.body != "a=1&b=2" || g.header.Get("Transfer-Encoding") != "chunked" || g.header.Get("Content-Length") != "" {
			t.Errorf("%s sent %s %q, Transfer-Encoding %q, Content-Length %q; want POST chunked, no Content-Length", who, g.method, g.body, g.header.Get("Transfer-Encoding"), g.header.Get("Content-Length"))
		}
	}
}

// --stderr FILE writes the messages, the run's error line too, to FILE
// (--stderr - to stdout), as curl 7.88; -w's %{stderr} still goes to the
// process's stderr, as curl's does.
func TestHTTPStderrFileLikeCurl(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--stderr", "-"},
		{"--stderr", "FILE", "-w", "w%{stderr}e"},
	} {
		var files [2]string
		var got [2]result
		for i, who := range []string{"yaoki", "curl"} {
			files[i] = filepath.Join(dir, who+".err")
			a := append([]string{"-sS", "--retry", "0"}, args...)
			for j := range a {
				if a[j] == "FILE" {
					a[j] = files[i]
				}
			}
			got[i] = runAs(t, who, append(a, "http://127.0.0.1:1/")...)
		}
		y, c := got[0], got[1]
		yf, _ := os.ReadFile(files[0])
		cf, _ := os.ReadFile(files[1])
		shape := func(s, prog string) string {
			return strings.Replace(strings.SplitN(s, ") ", 2)[0], prog+": (", "PROG: (", 1)
		}
		if y.code != 7 || c.code != 7 || shape(y.stdout, "yaoki") != shape(c.stdout, "curl") || y.stderr != c.stderr || shape(string(yf), "yaoki") != shape(string(cf), "curl") {
			t.Errorf("%q: yaoki exit %d, stdout %q, stderr %q, file %q; curl %d, %q, %q, %q", args, y.code, y.stdout, y.stderr, yf, c.code, c.stdout, c.stderr, cf)
		}
	}
}
