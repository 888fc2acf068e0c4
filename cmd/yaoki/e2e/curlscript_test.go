package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// runIn runs the program at path in the folder dir with stdin, as
// runProgram runs it.
func runIn(t *testing.T, dir, path, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, path, args...)
	c.Dir, c.Stdin = dir, strings.NewReader(stdin)
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

// files lists the files under dir with their contents, as "name=content".
func files(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out = append(out, fmt.Sprintf("%s=%q", rel, b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// The command lines scripts run most, each through curl and yaoki http
// in a folder of its own, against one scripted loopback server: the exit
// code, stdout, stderr's presence, the files written and what the server
// received (method, target, body, the headers that carry meaning) must be
// the same. A payload file, a text file and a config file are in each
// folder. (-d @FILE of a file with a NUL is left out: curl 7.88 drops what
// follows it, docs/cli.md says.)
func TestHTTPScriptLinesLikeCurl(t *testing.T) {
	redirect := answer{status: 302, headers: map[string]string{"Location": "/next/file.tar.gz"}, body: "moved\n"}
	disp := answer{status: 200, headers: map[string]string{"Content-Disposition": `attachment; filename="report.csv"`, "Content-Type": "text/csv"}, body: "a,b\n1,2\n"}
	for _, tc := range []struct {
		name   string
		script []answer
		line   string // the arguments, split at spaces; URL is the server's URL, SP a space
		stdin  string
	}{
		{"download -fsSL -o", []answer{redirect, ok("tarball\n")}, "-fsSL URL/get -o out.tgz", ""},
		{"download -fsSLO", []answer{redirect, ok("tarball\n")}, "-fsSLO URL/dl/file.tar.gz", ""},
		{"download -sSLOJ", []answer{disp}, "-sSLOJ URL/export", ""},
		{"download into folders", []answer{ok("x\n")}, "-fsS --create-dirs -o a/b/c.txt URL/x", ""},
		{"health check", []answer{status(503, "down\n")}, "-s -o /dev/null -w %{http_code} --retry 0 URL/health", ""},
		{"health check -f", []answer{status(404, "nope\n")}, "-fsS -o /dev/null -w %{http_code}:%{exitcode} URL/health", ""},
		{"JSON POST", []answer{status(201, `{"id":1}`)}, `-fsS -X POST -H Content-Type:SPapplication/json -d {"sku":42} URL/orders`, ""},
		{"--json POST from stdin", []answer{status(201, `{"id":1}`)}, "-sS --json @- URL/orders", `{"from":"stdin"}`},
		{"form POST", []answer{ok("ok\n")}, "-sS -d user=ann -d pass=s3cret URL/login", ""},
		{"upload -T", []answer{status(201, "stored\n")}, "-fsS -T payload.bin URL/up/", ""},
		{"upload --data-binary @file", []answer{ok("ok\n")}, "-sS --data-binary @payload.bin -H Content-Type:SPapplication/octet-stream URL/up", ""},
		{"token from config", []answer{ok("me\n")}, "-sS -K auth.cfg URL/me", ""},
		{"headers to stdout", []answer{redirect, ok("body\n")}, "-sSL -D - -o /dev/null URL/h", ""},
		{"headers to a file", []answer{ok("body\n")}, "-sS -D headers.txt -o body.txt URL/h", ""},
		{"HEAD", []answer{ok("body\n")}, "-sSI URL/h", ""},
		{"range", []answer{{status: 206, headers: map[string]string{"Content-Range": "bytes 0-3/10"}, body: "0123"}}, "-sS -r 0-3 -o part URL/file", ""},
		{"basic auth", []answer{ok("in\n")}, "-sS -u ann:s3cret URL/private", ""},
		{"query with -G", []answer{ok("found\n")}, "-sS -G --data-urlencode q=a&b=c URL/search", ""},
		{"cookies kept", []answer{{status: 200, headers: map[string]string{"Set-Cookie": "sid=abc; Path=/"}, body: "in\n"}}, "-sS -c jar.txt -b jar.txt URL/login", ""},
		{"fail with body", []answer{status(422, `{"error":"bad sku"}`)}, "-sS --fail-with-body URL/orders", ""},
		{"refused", nil, "-sS --retry 0 http://127.0.0.1:1/", ""},
		{"DELETE -f", []answer{status(204, "")}, "-sSf -X DELETE URL/items/7", ""},
		{"Accept JSON", []answer{ok(`{"a":1}`)}, "-sS -H Accept:SPapplication/json URL/api", ""},
		{"-d @file strips newlines", []answer{ok("ok\n")}, "-sS -d @lines.txt URL/post", ""},
		{"config from stdin", []answer{ok("ok\n")}, "-K -", "silent\nurl = \"URL/cfg\"\n"},
		{"redirect_url", []answer{redirect}, "-s -o /dev/null -w %{redirect_url} URL/r", ""},
		{"-IL", []answer{redirect, ok("body\n")}, "-sIL URL/r", ""},
		{"--output-dir", []answer{ok("x\n")}, "-sS --create-dirs --output-dir d -o o.txt URL/x", ""},
		{"-N and -#", []answer{ok("x\n")}, "-sSN -# URL/x", ""},
		{"--data-raw --url", []answer{ok("x\n")}, "-sS --data-raw @not-a-file --url URL/x", ""},
		{"-e -A", []answer{ok("x\n")}, "-sS -e URL/from -A agent/1.0 URL/x", ""},
		{"POST -L 303", []answer{{status: 303, headers: map[string]string{"Location": "/done"}, body: ""}, ok("done\n")}, "-sSL -d a=1 URL/form", ""},
		{"PUT -L 307", []answer{{status: 307, headers: map[string]string{"Location": "/again"}, body: ""}, ok("done\n")}, "-sSL -X PUT -d a=1 URL/put", ""},
		{"-i 404", []answer{status(404, "none\n")}, "-si URL/x", ""},
		{"-w %{json} keys", []answer{ok("x\n")}, "-s -o /dev/null -w %{content_type}|%{size_download}|%{num_headers}|%{method} URL/x", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := tc.script
			if script == nil {
				script = []answer{ok("unused\n")}
			}
			s := startScripted(t, false, script...)
			var args []string
			for _, a := range strings.Fields(tc.line) {
				a = strings.ReplaceAll(a, "URL/", s.url)
				args = append(args, strings.ReplaceAll(a, "SP", " "))
			}
			dirs := [2]string{t.TempDir(), t.TempDir()}
			for _, d := range dirs {
				os.WriteFile(filepath.Join(d, "payload.bin"), []byte("bin\x00ary\r\n"), 0o600)
				os.WriteFile(filepath.Join(d, "lines.txt"), []byte("a=1\r\n&b=2\n"), 0o600)
				os.WriteFile(filepath.Join(d, "auth.cfg"), []byte("header = \"Authorization: Bearer t0k3n\"\n"), 0o600)
			}
			before := [2]string{files(t, dirs[0]), files(t, dirs[1])}
			stdin := strings.ReplaceAll(tc.stdin, "URL/", s.url)
			y := runIn(t, dirs[0], yaoki, stdin, append([]string{"http"}, args...)...)
			ys := s.requests()
			s.restart()
			c := runIn(t, dirs[1], curlPath, stdin, args...)
			cs := s.requests()
			if y.code != c.code {
				t.Errorf("exit: yaoki %d, curl %d\nyaoki: %s\ncurl: %s", y.code, c.code, y.stderr, c.stderr)
			}
			if y.stdout != c.stdout {
				t.Errorf("stdout:\nyaoki: %q\ncurl:  %q", y.stdout, c.stdout)
			}
			if (y.stderr != "") != (c.stderr != "") {
				t.Errorf("stderr: yaoki %q, curl %q", y.stderr, c.stderr)
			}
			if fy, fc := files(t, dirs[0]), files(t, dirs[1]); fy != fc && !strings.Contains(tc.name, "cookies") {
				t.Errorf("files: yaoki %s, curl %s (before: %s)", fy, fc, before[0])
			}
			if len(ys) != len(cs) {
				t.Fatalf("yaoki sent %d requests, curl %d", len(ys), len(cs))
			}
			for i := range ys {
				a, b := ys[i], cs[i]
				if a.method != b.method || a.uri != b.uri || a.body != b.body || a.host != b.host {
					t.Errorf("request %d: yaoki %s %s %q, curl %s %s %q", i+1, a.method, a.uri, a.body, b.method, b.uri, b.body)
				}
				for _, h := range []string{"Content-Type", "Authorization", "Accept", "Range", "Cookie", "Content-Length"} {
					if got, want := a.header.Values(h), b.header.Values(h); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
						t.Errorf("request %d %s: yaoki %q, curl %q", i+1, h, got, want)
					}
				}
			}
		})
	}
}
