package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// boundaryRE matches the boundary curl and yaoki http write: 24 dashes
// and 16 hex digits.
var boundaryRE = regexp.MustCompile(`-{24}[0-9a-f]{16}`)

// withoutBoundary returns s with its boundaries replaced by BOUNDARY, and
// how many distinct boundaries it held.
func withoutBoundary(s string) (string, int) {
	seen := map[string]bool{}
	for _, b := range boundaryRE.FindAllString(s, -1) {
		seen[b] = true
	}
	return boundaryRE.ReplaceAllString(s, "BOUNDARY"), len(seen)
}

// TestHTTPFormLikeCurl compares what the server receives from yaoki http
// -F and from curl 7.88 -F, byte for byte but the boundary, and the exit
// codes of the input both refuse.
func TestHTTPFormLikeCurl(t *testing.T) {
	dir := t.TempDir()
	txt, bin, val := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.bin"), filepath.Join(dir, "v")
	os.WriteFile(txt, []byte("hello\r\nworld\n"), 0o600)
	os.WriteFile(bin, []byte("\x00\x01x"), 0o600)
	os.WriteFile(val, []byte("val\n"), 0o600)
	png := filepath.Join(dir, "pic.PNG")
	os.WriteFile(png, []byte("png"), 0o600)
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"one value", []string{"-F", "a=1"}, 0},
		{"repeated", []string{"-F", "a=1", "-F", "a=2", "-F", "b="}, 0},
		{"a file", []string{"-F", "f=@" + txt}, 0},
		{"a file of unknown type", []string{"-F", "f=@" + bin}, 0},
		{"a file typed by an upper-case extension", []string{"-F", "f=@" + png}, 0},
		{"a file with type and filename", []string{"-F", "g=@" + bin + ";type=application/x-foo;filename=z.dat"}, 0},
		{"a type with parameters", []string{"-F", "g=@" + txt + ";type=text/x;charset=utf-8;filename=n.txt"}, 0},
		{"spaces and a quoted filename", []string{"-F", `t=@` + txt + `;type=a/b ; filename="q;r.txt"`}, 0},
		{"a value from a file", []string{"-F", "h=<" + val}, 0},
		{"a value from a file ignores filename", []string{"-F", "h=<" + val + ";filename=x"}, 0},
		{"a value with type and filename", []string{"-F", "k=hi;type=a/b;foo=bar;filename=x"}, 0},
		{"a value cut at ;", []string{"-F", "p=a;b", "-F", "u=@" + txt + ";foo=1"}, 0},
		{"a quoted value", []string{"-F", `m="quoted;semi";type=a/b`}, 0},
		{"names escaped", []string{"-F", `n"x=1`, "-F", `q=@` + txt + `;filename=we"ird\x.txt`}, 0},
		{"no name", []string{"-F", "=x"}, 0},
		{"--form-string", []string{"--form-string", "s=@lit;type=x", "--form", "t=<" + val}, 0},
		{"-X PUT", []string{"-X", "PUT", "-F", "a=1"}, 0},
		{"-G keeps the form in the body", []string{"-G", "-F", "a=1"}, 0},
		{"with -H Content-Type", []string{"-H", "Content-Type: multipart/mixed", "-F", "a=1", "-F", "=b"}, 0},
		{"with -H Content-Type form-data", []string{"-H", "content-type: Multipart/Form-Data", "-F", "=b"}, 0},
		{"no =", []string{"-F", "abc"}, 2},
		{"a missing file", []string{"-F", "f=@" + filepath.Join(dir, "missing")}, 26},
		{"a value from a missing file", []string{"-F", "f=<" + filepath.Join(dir, "missing")}, 26},
		{"with -d", []string{"-F", "a=1", "-d", "b=2"}, 2},
		{"after -d", []string{"-d", "b=2", "-F", "a=1"}, 2},
		{"with --json", []string{"-F", "a=1", "--json", "{}"}, 2},
		{"with -T", []string{"-F", "a=1", "-T", txt}, 2},
		{"with -I", []string{"-F", "a=1", "-I"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, ok("ok\n"))
			var sent [2][]seen
			var got [2]result
			for i, who := range []string{"yaoki", "curl"} {
				s.restart()
				got[i] = runAs(t, who, append(append([]string{"-sS"}, tc.args...), s.url+"form?q=1")...)
				sent[i] = s.requests()
			}
			if got[0].code != tc.code || got[1].code != tc.code {
				t.Fatalf("exit: yaoki %d, curl %d; want %d\nyaoki: %s\ncurl: %s", got[0].code, got[1].code, tc.code, got[0].stderr, got[1].stderr)
			}
			if tc.code != 0 {
				if len(sent[0]) != 0 || !strings.Contains(got[0].stderr, "-F") {
					t.Errorf("yaoki sent %d requests, stderr %q: want none and a message naming -F", len(sent[0]), got[0].stderr)
				}
				return
			}
			if len(sent[0]) != 1 || len(sent[1]) != 1 {
				t.Fatalf("yaoki sent %d requests, curl %d; want 1", len(sent[0]), len(sent[1]))
			}
			a, b := sent[0][0], sent[1][0]
			ab, _ := withoutBoundary(a.body)
			bb, _ := withoutBoundary(b.body)
			at, _ := withoutBoundary(a.header.Get("Content-Type"))
			bt, _ := withoutBoundary(b.header.Get("Content-Type"))
			if a.method != b.method || a.uri != b.uri || ab != bb || at != bt || len(a.body) != len(b.body) {
				t.Errorf("yaoki sent %s %s (Content-Type %q)\n%q\ncurl %s %s (%q)\n%q", a.method, a.uri, at, ab, b.method, b.uri, bt, bb)
			}
			if _, n := withoutBoundary(a.header.Get("Content-Type") + a.body); n != 1 {
				t.Errorf("yaoki's Content-Type and body hold %d boundaries, want 1", n)
			}
		})
	}
}

// A keyed POST with -F that gets a 503 is sent again with the same bytes,
// boundary included.
func TestHTTPFormRetriedSameBytes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "up.txt")
	os.WriteFile(file, []byte("line 1\nline 2\n"), 0o600)
	s := startScripted(t, false, status(503, "busy\n"), ok("done\n"))
	r := run(t, nil, append([]string{"http", "-sS", "--retry", "1", "--idempotency-key", "auto", "-F", "a=1", "-F", "f=@" + file, s.url}, fastRetries...)...)
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("exit %d, stdout %q; want 0 and done\n%s", r.code, r.stdout, r.stderr)
	}
	got := s.requests()
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	for _, h := range []string{"Content-Type", "Idempotency-Key", "Content-Length"} {
		if a, b := got[0].header.Get(h), got[1].header.Get(h); a != b || a == "" {
			t.Errorf("%s: attempt 1 sent %q, attempt 2 %q; want the same", h, a, b)
		}
	}
	if got[0].body != got[1].body || !strings.Contains(got[1].body, "line 2\n") {
		t.Errorf("attempt 1 sent %q, attempt 2 %q; want the same form", got[0].body, got[1].body)
	}
}
