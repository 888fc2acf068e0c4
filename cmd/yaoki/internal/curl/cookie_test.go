package curl

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseCookieLine(t *testing.T) {
	for line, want := range map[string]cookie{
		"a.example.com\tFALSE\t/\tFALSE\t0\tn\tv":              {domain: "a.example.com", path: "/", name: "n", value: "v"},
		".example.com\tTRUE\t/p/\tTRUE\t42\tn\tv w":            {domain: "example.com", tailmatch: true, path: "/p/", secure: true, expires: 42, name: "n", value: "v w"},
		"#HttpOnly_h\tfalse\t/\ttrue\t+7x\tn\tv":               {domain: "h", path: "/", secure: true, httpOnly: true, expires: 7, name: "n", value: "v"},
		"  h\t\tFALSE\t/\tFALSE\t0\tn\tv\r\n":                  {domain: "h", path: "/", name: "n", value: "v"},
		"h\tFALSE\tFALSE\t0\tn\tv":                             {domain: "h", path: "/", name: "n", value: "v"},
		"h\tFALSE\t/\tFALSE\t0\tn":                             {domain: "h", path: "/", name: "n"},
		"h\tFALSE\t/\tFALSE\t0\t__Host-n\tv":                   {domain: "h", path: "/", name: "__Host-n", value: "v", prefix: "__Host-"},
		"h\tFALSE\t/\tFALSE\t99999999999999999999\tn\tv":       {},
		"h\tFALSE\t/\tFALSE\t-1\tn\tv":                         {},
		"h\tFALSE\t/\tFALSE\tsoon\tn\tv":                       {},
		"h\tFALSE\t/\tFALSE\t0\tn\tv\textra":                   {},
		"h\tFALSE\t/\tFALSE\t0":                                {},
		"# a comment\tFALSE\t/\tFALSE\t0\tn\tv":                {},
		"":                                                     {},
		"Set-Cookie: n=v":                                      {},
		"#HttpOnly_#h\tFALSE\t/\tFALSE\t0\tn\tv":               {},
		"h FALSE / FALSE 0 n v":                                {},
		"h\tFALSE\t/\tFALSE\t0\tn\tv\tTRUE":                    {},
		".\tTRUE\t/\tFALSE\t0\tn\tv":                           {tailmatch: true, path: "/", name: "n", value: "v"},
		"h\tTRUE\tTRUE\tFALSE\t0\tn":                           {},
		"h\tFALSE\t/a\tFALSE\t1\tn\tv":                         {domain: "h", path: "/a", expires: 1, name: "n", value: "v"},
		"h\tyes\t/a\tno\t1\tn\tv":                              {domain: "h", path: "/a", expires: 1, name: "n", value: "v"},
		"h\tFALSE\t/\tFALSE\t0\tname with space\tvalue; more ": {domain: "h", path: "/", name: "name with space", value: "value; more "},
	} {
		got, ok := parseCookieLine(line)
		if ok != (want.name != "") || got != want {
			t.Errorf("parseCookieLine(%q) = %+v, %v; want %+v, %v", line, got, ok, want, want.name != "")
		}
	}
}

func TestParseSetCookie(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		v, host, path string
		secure        bool
		want          cookie // name "" when dropped
	}{
		{"n=v", "h.example.com", "/a/b?q=/x", false, cookie{name: "n", value: "v", domain: "h.example.com", path: "/a/"}},
		{" n = v w ; Path = /p ", "h", "/", false, cookie{name: "n", value: "v w", domain: "h", path: "/p"}},
		{"n=v; Domain=.Example.COM", "h.example.com", "/", false, cookie{name: "n", value: "v", domain: "Example.COM", tailmatch: true, path: "/"}},
		{"n=v; Domain=example.com", "hexample.com", "/", false, cookie{}},
		{"n=v; Domain=com", "h.com", "/", false, cookie{}},
		{"n=v; Domain=localhost", "localhost", "/", false, cookie{name: "n", value: "v", domain: "localhost", tailmatch: true, path: "/"}},
		{"n=v; Domain=127.0.0.1", "127.0.0.1", "/", false, cookie{name: "n", value: "v", domain: "127.0.0.1", path: "/"}},
		{"n=v; Domain=0.0.1", "127.0.0.1", "/", false, cookie{}},
		{"n=v; Domain=", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/"}},
		{"n=v; Secure", "h", "/", false, cookie{}},
		{"n=v; secure; HTTPONLY", "h", "/", true, cookie{name: "n", value: "v", domain: "h", path: "/", secure: true, httpOnly: true}},
		{"n=v; Secure=yes", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/"}},
		{"n=v; Max-Age=60", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/", expires: 1_800_000_060}},
		{"n=v; Max-Age=0", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/", expires: 1}},
		{"n=v; Max-Age=-1", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/", expires: 1}},
		{"n=v; Max-Age=soon", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/", expires: 1}},
		{"n=v; Max-Age=\"5\"", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/", expires: 1_800_000_005}},
		{"n=v; Max-Age=99999999999999999999", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/", expires: math.MaxInt64}},
		{"n=v; Expires=Wed, 01 Jan 2031 00:00:00 GMT; Max-Age=5", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/", expires: 1_800_000_005}},
		{"n=v; Max-Age=5; Expires=Wed, 01 Jan 2031 00:00:00 GMT", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/", expires: 1_800_000_005}},
		{"n=v; expires=Wed, 01-Jan-2031 00:00:00 GMT", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/", expires: 1924992000}},
		{"n=v; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/", expires: 1}},
		{"n=v; Expires=Wed, 31 Dec 1969 00:00:00 GMT", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/"}},
		{"n=v; Expires=someday", "h", "/", false, cookie{name: "n", value: "v", domain: "h", path: "/"}},
		{"n=v; Path=", "h", "/a/b", false, cookie{name: "n", value: "v", domain: "h"}},
		{"n=v; Path", "h", "/a/b", false, cookie{name: "n", value: "v", domain: "h", path: "/a/"}}, // no '=': no Path
		{"n=\"q; r\"", "h", "/", false, cookie{name: "n", value: "\"q", domain: "h", path: "/"}},
		{"n=a\tb", "h", "/", false, cookie{}},
		{"n=a\x01b", "h", "/", false, cookie{}},
		{"noequals", "h", "/", false, cookie{}},
		{"=v", "h", "/", false, cookie{}},
		{"n=", "h", "/", false, cookie{name: "n", domain: "h", path: "/"}},
		{"__Secure-n=v", "h", "/", false, cookie{}},
		{"__secure-n=v; Secure", "h", "/", true, cookie{name: "__secure-n", value: "v", domain: "h", path: "/", secure: true, prefix: "__Secure-"}},
		{"__Host-n=v; Secure; Path=/", "h", "/", true, cookie{name: "__Host-n", value: "v", domain: "h", path: "/", secure: true, prefix: "__Host-"}},
		{"__Host-n=v; Secure; Path=/; Domain=h", "h", "/", true, cookie{}},
		{"n=" + strings.Repeat("x", 4095), "h", "/", false, cookie{}},
		{"n=" + strings.Repeat("x", 4094), "h", "/", false, cookie{name: "n", value: strings.Repeat("x", 4094), domain: "h", path: "/"}},
		{"nnn=" + strings.Repeat("x", 4094), "h", "/", false, cookie{}},
	} {
		got, ok := parseSetCookie(tc.v, tc.host, tc.path, tc.secure, now)
		tc.want.live = tc.want.name != ""
		if ok != (tc.want.name != "") || got != tc.want {
			t.Errorf("Set-Cookie %q from %s%s: %+v, %v; want %+v", trunc(tc.v), tc.host, tc.path, got, ok, tc.want)
		}
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// The cookies sent for a request, at fixed instants: by domain, path,
// secure context and expiry, in curl's order.
func TestCookieJarMatching(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	j := &cookieJar{}
	for _, line := range []string{
		"a.example.com\tFALSE\t/\tFALSE\t0\thost\t1",
		".example.com\tTRUE\t/\tFALSE\t0\tdom\t2",
		"a.example.com\tFALSE\t/set/\tFALSE\t0\tp\t3",
		"a.example.com\tFALSE\t/\tTRUE\t0\tsec\t4",
		"a.example.com\tFALSE\t/\tFALSE\t1800000010\tsoon\t5",
		"a.example.com\tFALSE\t/\tFALSE\t0\tab\t6",
		"127.0.0.1\tTRUE\t/\tFALSE\t0\tip\t7",
	} {
		c, ok := parseCookieLine(line)
		if !ok {
			t.Fatalf("%q not read", line)
		}
		j.add(c, false, t0)
	}
	names := func(host, path string, secure bool, now time.Time) string {
		var out []string
		for _, c := range j.matching(host, path, secure, now) {
			out = append(out, c.name)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		host, path string
		secure     bool
		after      time.Duration
		want       string
	}{
		{"a.example.com", "/set/x", false, 0, "p soon host ab dom"},
		{"a.example.com", "/set", false, 0, "p soon host ab dom"},
		{"a.example.com", "/setx", false, 0, "soon host ab dom"},
		{"A.EXAMPLE.COM", "/", true, 0, "soon host sec ab dom"},
		{"a.example.com", "/", false, 10 * time.Second, "soon host ab dom"},
		{"a.example.com", "/", false, 11 * time.Second, "host ab dom"}, // soon expired
		{"b.example.com", "/set/", false, 0, "dom"},
		{"example.com", "/", false, 0, "dom"},
		{"xexample.com", "/", false, 0, ""},
		{"127.0.0.1", "/", false, 0, "ip"},
	} {
		if got := names(tc.host, tc.path, tc.secure, t0.Add(tc.after)); got != tc.want {
			t.Errorf("%s%s (secure %v) %v after: sends %q, want %q", tc.host, tc.path, tc.secure, tc.after, got, tc.want)
		}
	}
	// An answer replaces a cookie in its place, and deletes one with
	// Max-Age=0; a file's cookie does not replace an answer's.
	now := t0.Add(time.Minute)
	for _, h := range []string{"host=new; Path=/", "ab=; Max-Age=0; Path=/"} {
		c, ok := parseSetCookie(h, "a.example.com", "/", false, now)
		if !ok {
			t.Fatalf("%q not read", h)
		}
		j.add(c, false, now)
	}
	again, _ := parseCookieLine("a.example.com\tFALSE\t/\tFALSE\t0\thost\tfile")
	j.add(again, false, now)
	var b strings.Builder
	if err := j.write(&b, now); err != nil {
		t.Fatal(err)
	}
	want := "# Netscape HTTP Cookie File\n# https://curl.se/docs/http-cookies.html\n# This file was generated by libcurl! Edit at your own risk.\n\n" +
		".127.0.0.1\tTRUE\t/\tFALSE\t0\tip\t7\n" +
		"a.example.com\tFALSE\t/\tTRUE\t0\tsec\t4\n" +
		"a.example.com\tFALSE\t/set/\tFALSE\t0\tp\t3\n" +
		".example.com\tTRUE\t/\tFALSE\t0\tdom\t2\n" +
		"a.example.com\tFALSE\t/\tFALSE\t0\thost\tnew\n"
	if b.String() != want {
		t.Errorf("-c file:\n%s\nwant:\n%s", b.String(), want)
	}
}

// FuzzParseCookieLine: no line panics; a cookie read is written as a line
// that reads back as the same cookie (unless its domain is empty or
// starts with '.', which curl's format cannot keep), and holds no tab nor
// line break in its fields.
func FuzzParseCookieLine(f *testing.F) {
	for _, s := range []string{cookieTestLines, "#HttpOnly_.h\tTRUE\t/\tTRUE\t5\tn\tv", "h\tFALSE\tFALSE\t0\tn", "  h\t\t\tx\ty\t+1z\tn\tv\r", "\t\t"} {
		for _, l := range strings.Split(s, "\n") {
			f.Add(l)
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, ok := parseCookieLine(line)
		if !ok {
			return
		}
		for _, field := range []string{c.domain, c.path, c.name, c.value} {
			if strings.ContainsAny(field, "\t\r\n") {
				t.Fatalf("parseCookieLine(%q) = %+v: a field holds a tab or line break", line, c)
			}
		}
		if c.name == "" || c.path == "" || c.expires < 0 {
			t.Fatalf("parseCookieLine(%q) = %+v: no name, no path or a negative expiry", line, c)
		}
		if c.domain == "" || strings.IndexAny(c.domain[:1], ". ") == 0 {
			return
		}
		back, ok := parseCookieLine(c.netscapeLine())
		if !ok || back != c {
			t.Fatalf("parseCookieLine(%q) = %+v, written %q, read back %+v, %v", line, c, c.netscapeLine(), back, ok)
		}
	})
}

const cookieTestLines = "a.example.com\tFALSE\t/\tFALSE\t0\tn\tv\n.example.com\tTRUE\t/p/\tTRUE\t42\tn\tv w\nh\tFALSE\t/\tFALSE\t0\tn"

// FuzzParseSetCookie: no header panics; a cookie read has a name without
// control characters, and a domain the host belongs to.
func FuzzParseSetCookie(f *testing.F) {
	for _, s := range []string{"n=v; Path=/p; Domain=example.com; Max-Age=5; Secure; HttpOnly", " = ;;", "__Host-x=1; Secure; Path=/", "n=v; Expires=Wed, 01 Jan 2031 00:00:00 GMT"} {
		f.Add(s, "a.example.com", "/a/b", true)
	}
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, v, host, path string, secure bool) {
		c, ok := parseSetCookie(v, host, path, secure, now)
		if !ok {
			return
		}
		if c.name == "" || badCookieOctet(c.name) || badCookieOctet(c.value) || strings.Contains(c.value, "\t") {
			t.Fatalf("Set-Cookie %q: name %q, value %q", v, c.name, c.value)
		}
		if !strings.EqualFold(c.domain, host) && !(c.tailmatch && tailMatch(c.domain, host)) {
			t.Fatalf("Set-Cookie %q from %q: domain %q", v, host, c.domain)
		}
		if c.secure && !secure {
			t.Fatalf("Set-Cookie %q: a Secure cookie outside a secure context", v)
		}
	})
}

func TestCurlDate(t *testing.T) {
	for s, want := range map[string]int64{
		"Wed, 01 Jan 2031 00:00:00 GMT":     1924992000,
		"Wednesday, 01-Jan-31 00:00:00 GMT": 1924992000,
		"Wed Jan  1 00:00:00 2031":          1924992000,
		"Wed, 01 Jan 2031 00:00:00 +0100":   1924988400,
		"Wed, 01 Jan 2031 00:00:00 PST":     1925020800,
		"20310101":                          1924992000,
		"Jan 1 2031 10:20":                  1925029200,
		"Wed, 30 Feb 2031 23:59:60 GMT":     1930262400,
		"Wed, 01 Jan 69 00:00:00 GMT":       3124224000,
		"2031-01-01 00:00:00":               -1, // not read
		"Wed, 31 Feb 2031 25:00:00 GMT":     -1,
		"Fri, 01 Jan 1582 00:00:00 GMT":     -1,
		"Wed, 01 Jan 2031 00:00:00 XYZ":     -1,
		"":                                  -1,
	} {
		got, ok := curlDate(s)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("curlDate(%q) = %d, want %d", s, got, want)
		}
	}
}

// FuzzCurlDate: no date panics, and a date read is read again the same
// when written in HTTP's form.
func FuzzCurlDate(f *testing.F) {
	for _, s := range []string{"Wed, 01 Jan 2031 00:00:00 GMT", "Jan 1 2031 10:20 +0130", "20310101", "1:2:3 4 Feb 99 Z", "Wed,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := curlDate(s)
		if !ok || got == math.MaxInt64 {
			return
		}
		tm := time.Unix(got, 0).UTC()
		if tm.Year() < 1600 || tm.Year() > 9000 {
			return
		}
		back, ok := curlDate(tm.Format(http.TimeFormat))
		if !ok || back != got {
			t.Fatalf("curlDate(%q) = %d (%s), which reads back as %d, %v", s, got, tm, back, ok)
		}
	})
}
