package proxy

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// errNames fails t unless err's message quotes the input and says what is
// accepted.
func errNames(t *testing.T, err error, quoted string) {
	t.Helper()
	if msg := err.Error(); !strings.Contains(msg, strconv.Quote(quoted)) || !strings.Contains(msg, "want ") {
		t.Fatalf("error %q: want the input %q quoted and what is accepted", msg, quoted)
	}
}

func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"65536", "64KiB", "1MiB", " 2 MiB ", "+1", "-1", "-1KiB", "0", "2147483647", "2147483648",
		"2097151KiB", "2097152KiB", "2047MiB", "2048MiB", "1GB", "KiB", "1KiBKiB", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseByteSize(s)
		if err != nil {
			errNames(t, err, s)
			return
		}
		if n != -1 && (n < 1 || n > math.MaxInt32) {
			t.Fatalf("%q gave %d, want -1 or 1 to %d", s, n, math.MaxInt32)
		}
		if back, err := ParseByteSize(strconv.FormatInt(n, 10)); err != nil || back != n {
			t.Fatalf("%q gave %d, which parses back to %d, %v", s, n, back, err)
		}
	})
}

func FuzzParseUpstream(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:9000", "https://api.partner.example/v1", "HTTPS://h/a%2Fb/", "http://[::1]:8080/",
		"http://h?", "ftp://h", "http://", "http:///p", "http:h", "http://:80", "http://h?x=1", "http://h#f", "http://u:p@h", "/v1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUpstream(s)
		if err != nil {
			errNames(t, err, s)
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			t.Fatalf("%q gave %#v, want http or https, a host, no query, fragment or user info", s, u)
		}
		if back, err := ParseUpstream(u.String()); err != nil || back.String() != u.String() {
			t.Fatalf("%q gave %q, which parses back to %v, %v", s, u, back, err)
		}
	})
}

// FuzzHasDotDotSegment checks hasDotDotSegment against the segments of
// the path split at both separators.
func FuzzHasDotDotSegment(f *testing.F) {
	for _, p := range []string{"/a/../b", "/a..b", "..", "/a\\..\\b", "", "/"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		want := false
		for _, seg := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '\\' }) {
			want = want || seg == ".."
		}
		if got := hasDotDotSegment(path); got != want {
			t.Fatalf("hasDotDotSegment(%q) = %v, want %v", path, got, want)
		}
	})
}
