package curl

import (
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

func TestWriteOut(t *testing.T) {
	ti := &transferInfo{status: 503, took: 1234567 * time.Microsecond, retries: 2, url: "http://h/p", exitCode: 22, method: "GET"}
	for format, want := range map[string]string{
		`%{http_code}\n`:                      "503\n",
		`%{response_code}|%{exitcode}`:        "503|22",
		`%{time_total}`:                       "1.234567",
		`%{num_retries} %{url_effective}\t%%`: "2 http://h/p\t%",
		`%{nosuch}x\\y\q`:                     `x\\y\q`,
		`%{unclosed`:                          `%{unclosed`,
	} {
		if got := writeOutText(ti, format); got != want {
			t.Errorf("-w %q wrote %q, want %q", format, got, want)
		}
	}
	ti = &transferInfo{took: 2 * time.Second, size: 1001, sizeUpload: 3, sizeHeader: 38, sizeRequest: 80, connects: 1,
		phases: phases{namelookup: 40 * time.Microsecond, connect: 1500 * time.Microsecond, pretransfer: time.Second + 7, starttransfer: 1999999 * time.Microsecond, redirect: 0}}
	for format, want := range map[string]string{
		`%{time_namelookup} %{time_connect} %{time_appconnect}`:         "0.000040 0.001500 0.000000",
		`%{time_pretransfer} %{time_starttransfer} %{time_redirect}`:    "1.000000 1.999999 0.000000",
		`%{time_total} %{speed_download} %{speed_upload}`:               "2.000000 500 1",
		`%{size_header} %{size_request} %{size_upload} %{num_connects}`: "38 80 3 1",
	} {
		if got := writeOutText(ti, format); got != want {
			t.Errorf("-w %q wrote %q, want %q", format, got, want)
		}
	}
	if got := writeOutText(&transferInfo{}, `%{speed_download} %{time_total}`); got != "0 0.000000" {
		t.Errorf("no time passed: wrote %q, want 0 0.000000", got)
	}
	if got := writeOutText(&transferInfo{}, `%{http_code}`); got != "000" {
		t.Errorf("no answer: %%{http_code} is %q, want 000 as curl", got)
	}
	if u := checkWriteOut(`%{http_code} %{bogus} %{time_total} %{nope}`); len(u) != 2 || u[0] != "bogus" || u[1] != "nope" {
		t.Errorf("unknown variables: got %q, want bogus, nope", u)
	}
}

// writeOutText is what -w writes on stdout and stderr, together.
func writeOutText(ti *transferInfo, format string) string {
	var b strings.Builder
	ti.writeOut(format, &b, &b)
	return b.String()
}

func TestCheckURL(t *testing.T) {
	for raw, code := range map[string]int{
		"http://127.0.0.1:8080/x": 0,
		"127.0.0.1:8080/x":        0, // no scheme: http, as curl
		"https://h/":              0,
		"http://h:99999/":         curlBadURL,
		"http://h:0/":             curlBadURL,
		"http://h:/":              curlBadURL,
		"http://h:x/":             curlBadURL,
		"http:///path":            curlBadURL,
		"ftp://h/":                curlUnsupported,
		"http://h/a b":            curlBadURL,
		"http://h/?q=a b":         curlBadURL,
		"http://h/\x7f":           curlBadURL,
		"http://h/\ta":            curlBadURL,
		"foo://h/":                curlUnsupported,
		"http://h/a%zz":           0, // sent as written, as curl
		"http://h/%":              0,
		"http://h/?q=%":           0,
		"http://h/#%zz":           0,
		"http://u%zz:p@h/":        0,
	} {
		_, err := checkURL(raw, false)
		got := 0
		if err != nil {
			got = err.(*cli.ExitError).Code
		}
		if got != code {
			t.Errorf("checkURL(%q): exit %d, want %d (%v)", raw, got, code, err)
		}
	}
}

// A '%' that starts no escape is sent and shown as written; the URL
// holds it as "%25".
func TestTargetWritten(t *testing.T) {
	for raw, want := range map[string]struct{ path, shown, parsed string }{
		"http://h/a%zz/b%2?c=%q#f%zz": {"/a%zz/b%2", "http://h/a%zz/b%2?c=%q#f%zz", "http://h/a%25zz/b%252?c=%q#f%25zz"},
		"http://h/%":                  {"/%", "http://h/%", "http://h/%25"},
		"http://h#%zz":                {"/", "http://h/#%zz", "http://h/#%25zz"},
		"http://h/a%20%zz?":           {"/a%20%zz", "http://h/a%20%zz?", "http://h/a%20%25zz?"},
		"http://h//a%zz":              {"//a%25zz", "http://h//a%25zz", "http://h//a%25zz"},
	} {
		tg, err := checkURL(raw, false)
		if err != nil || !tg.written {
			t.Errorf("checkURL(%q): %v, written %v; want it kept as written", raw, err, tg != nil && tg.written)
			continue
		}
		if tg.path != want.path || tg.text(tg.url, false) != want.shown || tg.url.String() != want.parsed {
			t.Errorf("checkURL(%q): path %q, shown %q, parsed %q; want %q, %q, %q", raw, tg.path, tg.text(tg.url, false), tg.url.String(), want.path, want.shown, want.parsed)
		}
	}
	for _, raw := range []string{"http://h/a%41", "http://h/?q=%zz", "http://u%zz:p@h/"} {
		if tg, err := checkURL(raw, false); err != nil || tg.written {
			t.Errorf("checkURL(%q): %v, written %v; want url's own path", raw, err, tg != nil && tg.written)
		}
	}
}

func TestValidHeaderName(t *testing.T) {
	for name, want := range map[string]bool{"Content-Type": true, "X_Y.z~!": true, "": false, "Bad Name": false, "a:b": false, "é": false, "a\tb": false} {
		if validHeaderName(name) != want {
			t.Errorf("validHeaderName(%q) = %v, want %v", name, !want, want)
		}
	}
}

func FuzzWriteOut(f *testing.F) {
	for _, s := range []string{`%{http_code}\n`, `%%{`, `\`, `%{`, `%{}`, `a\nb%{time_total}`, `%{json}`} {
		f.Add(s)
	}
	ti := &transferInfo{status: 200, url: "u"}
	f.Fuzz(func(t *testing.T, format string) {
		out := writeOutText(ti, format)
		// Each variable writes 64 bytes at most here, but %{json}, which
		// writes them all.
		if len(out) > 2*len(format)+64*len(format)+2048*strings.Count(format, "%{json}") {
			t.Fatalf("-w %q wrote %d bytes", format, len(out))
		}
		_ = checkWriteOut(format)
	})
}

// The path a redirect's Location leads to, as written, as curl resolves
// it (RFC 3986 §5.2).
func TestRefPath(t *testing.T) {
	for _, tc := range []struct{ base, ref, want string }{
		{"/d/e/first", "/a%zz/b", "/a%zz/b"},
		{"/d/e/first", "x%zz", "/d/e/x%zz"},
		{"/d/e/first", "../up%zz/./c", "/d/up%zz/c"},
		{"/d/e/first", "../../../..%zz", "/..%zz"},
		{"/d/e/first", "", "/d/e/first"},
		{"/d/e/", "./", "/d/e/"},
		{"/d/e/f", "..", "/d/"},
		{"/d", "http://h:1/abs%zz/.", "/abs%zz/"},
		{"/d", "//h/n%zz", "/n%zz"},
		{"/d", "https://h", "/"},
	} {
		if got := removeDotSegments(refPath(tc.base, tc.ref)); got != tc.want {
			t.Errorf("from %q, Location %q leads to %q, want %q", tc.base, tc.ref, got, tc.want)
		}
	}
}

// --retry-max-time's decision after a failed attempt, at fixed instants.
func TestRetryWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	w := &retryWindow{max: 2 * time.Second, start: t0}
	for _, tc := range []struct {
		after, hint time.Duration // since the first attempt; -1: no hint
		stop        bool
	}{
		{0, -1, false},
		{1999 * time.Millisecond, -1, false}, // the limit not reached: retried, whatever the wait
		{2 * time.Second, -1, true},          // reached
		{3 * time.Second, -1, true},
		{0, 2 * time.Second, false},                   // 0 + 2 is not past 2
		{0, 2001 * time.Millisecond, true},            // past it
		{1900 * time.Millisecond, time.Second, false}, // curl counts whole seconds: 1 + 1
		{1, 3 * time.Second, true},
		{time.Second, 0, false},
	} {
		why := w.stopAt(t0.Add(tc.after), tc.hint)
		if (why != "") != tc.stop {
			t.Errorf("%v after the first attempt, hint %v: stop %q, want a stop: %v", tc.after, tc.hint, why, tc.stop)
		}
	}
}

// %{json} is valid JSON: codes as numbers without leading zeros, empty
// strings as null where curl writes null, control characters escaped.
func TestWriteOutJSON(t *testing.T) {
	ti := &transferInfo{errMsg: "bad \"x\"\n\x01\\", url: "http://h/é", urlGiven: "http://h/é", method: "GET", exitCode: 7}
	out := writeOutText(ti, `%{json}`)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%%{json} wrote %s: %v", out, err)
	}
	for k, want := range map[string]any{"http_code": 0.0, "exitcode": 7.0, "errormsg": "bad \"x\"\n\x01\\", "content_type": nil, "url": "http://h/é", "method": "GET", "time_total": 0.0, "local_ip": ""} {
		if got, ok := m[k]; !ok || got != want {
			t.Errorf("%s: got %#v, want %#v", k, got, want)
		}
	}
	if u := checkWriteOut(`%{json}%{url}%{urlnum}`); len(u) != 0 {
		t.Errorf("unknown: %q, want none", u)
	}
}

// The path sent and shown for a URL as curl sends and shows it: dot
// segments removed (not with --path-as-is), what net/url would escape as
// written, bytes from 0x80 escaped in lower case but shown as written.
func TestTargetAsCurl(t *testing.T) {
	for _, tc := range []struct {
		raw         string
		asIs        bool
		sent, shown string
	}{
		{"http://h/a/../b", false, "/b", "http://h/b"},
		{"http://h/a/../b", true, "/a/../b", "http://h/a/../b"},
		{"http://h/a/./c/.?q=/../", false, "/a/c/", "http://h/a/c/?q=/../"},
		{"http://h/x/..", false, "/", "http://h/"},
		{"http://h/../../y", false, "/y", "http://h/y"},
		{`http://h/a"b<c>|^` + "`", false, `/a"b<c>|^` + "`", `http://h/a"b<c>|^` + "`"},
		{"http://h/é?q=é", false, "/%c3%a9", "http://h/é?q=é"},
		{"http://h/a%2e%2e/b", false, "/a%2e%2e/b", "http://h/a%2e%2e/b"},
		{"http://h/a/b/../%zz/..", false, "/a/", "http://h/a/"},
		{"http://h/ok%41", false, "/ok%41", "http://h/ok%41"},
	} {
		tg, err := checkURL(tc.raw, tc.asIs)
		if err != nil {
			t.Errorf("checkURL(%q): %v", tc.raw, err)
			continue
		}
		sent := tg.url.EscapedPath()
		if tg.written {
			sent = tg.path
		}
		if sent != tc.sent || tg.text(tg.url, false) != tc.shown {
			t.Errorf("checkURL(%q, as is %v): sends %q, shows %q; want %q, %q", tc.raw, tc.asIs, sent, tg.text(tg.url, false), tc.sent, tc.shown)
		}
	}
}

// checkURL never panics, and a path it sends as written is a request
// target: it starts with one '/', holds no byte from 0x80, no space nor
// control character.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://h/a%zz", "http://h/a/../b", "h/é?q", "http://h//x/..", "http://u%zz@h/#%", `http://h/"<>`, "http://h/./%2e/..%"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, asIs bool) {
		tg, err := checkURL(raw, asIs)
		if err != nil || !tg.written {
			return
		}
		_ = tg.text(tg.url, true)
		p := tg.path
		if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") && tg.shown != tg.url.EscapedPath() {
			t.Fatalf("checkURL(%q) sends the path %q", raw, p)
		}
		for i := 0; i < len(p); i++ {
			if p[i] <= ' ' || p[i] >= 0x7f {
				t.Fatalf("checkURL(%q) sends the path %q, with byte %#x", raw, p, p[i])
			}
		}
	})
}

// --resolve entries: those read give addresses to dial (an IP and the
// port), the others exit 49; no entry panics.
func FuzzParseResolve(f *testing.F) {
	for _, s := range []string{"example.com:443:127.0.0.1", "h:80:[::1],10.0.0.1", "bogus", "h:0:1.2.3.4", "h:1:", ":1:1.1.1.1", "h:65535:[::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		o := &httpOptions{resolve: []string{entry}, silent: true}
		m, err := o.parseResolve()
		if err != nil {
			if ee := (*cli.ExitError)(nil); !errors.As(err, &ee) || ee.Code != curlBadResolve {
				t.Fatalf("--resolve %q: %v, want exit 49", entry, err)
			}
			return
		}
		for key, addrs := range m {
			if _, _, err := net.SplitHostPort(key); err != nil || len(addrs) == 0 {
				t.Fatalf("--resolve %q: key %q, addresses %q", entry, key, addrs)
			}
			for _, a := range addrs {
				host, _, err := net.SplitHostPort(a)
				if err != nil || net.ParseIP(host) == nil {
					t.Fatalf("--resolve %q: address %q", entry, a)
				}
			}
		}
	})
}

// -T's URL: the file's name added to a path that is empty or ends with
// '/', before the query, as curl adds it.
func TestUploadURL(t *testing.T) {
	for _, tc := range []struct{ url, file, want string }{
		{"http://h/dir/", "/tmp/up.txt", "http://h/dir/up.txt"},
		{"http://h", "up.txt", "http://h/up.txt"},
		{"http://h/d/?q=1#f", "a/up.txt", "http://h/d/up.txt?q=1#f"},
		{"http://h/named", "up.txt", "http://h/named"},
		{"h:8080", "up.txt", "h:8080/up.txt"},
		{"http://h/dir/", "-", "http://h/dir/"},
	} {
		if got := uploadURL(tc.url, tc.file); got != tc.want {
			t.Errorf("uploadURL(%q, %q) = %q, want %q", tc.url, tc.file, got, tc.want)
		}
	}
}
