package e2e

import (
	"strings"
	"testing"
)

// A redirect whose Location holds a '%' that starts no escape is followed
// as curl follows it: the next request's target is the path as written
// (resolved against the request's, dot segments removed), and
// %{url_effective}, %{redirect_url}, -i and -v show it as written.
func TestHTTPRedirectAsWrittenLikeCurl(t *testing.T) {
	for _, tc := range []struct {
		name, location string
		args           []string
	}{
		{"absolute path -L", "/a%zz/b", []string{"-sSL", "-w", `|%{url_effective}|%{num_redirects}`}},
		{"absolute path -iL", "/a%zz/b", []string{"-sSiL"}},
		{"absolute path, not followed", "/a%zz/b", []string{"-sS", "-w", `|%{redirect_url}|%{url_effective}`}},
		{"relative with a query", "x%zz?q=%zz", []string{"-sSL", "-w", `|%{url_effective}`}},
		{"relative, not followed", "x%zz?q=%zz", []string{"-sS", "-w", `|%{redirect_url}`}},
		{"dot segments", "../up%zz/./c", []string{"-sSL", "-w", `|%{url_effective}`}},
		{"absolute URL", "ABS/abs%zz", []string{"-sSL", "-w", `|%{url_effective}`}},
		{"-e ;auto after a written Location", "/a%zz/b", []string{"-sSL", "-e", ";auto"}},
		{"in the fragment only", "/f#x%zz", []string{"-sSL", "-w", `|%{url_effective}`}},
		{"past --max-redirs", "/a%zz", []string{"-sSL", "--max-redirs", "0", "-w", `|%{redirect_url}`}},
		{"what net/url escapes", `/q"<>|^x`, []string{"-sSL", "-w", `|%{url_effective}|%{num_redirects}`}},
		{"non-ASCII", "/é", []string{"-sSL", "-w", `|%{url_effective}`}},
		{"non-ASCII, not followed", "/é", []string{"-sS", "-w", `|%{redirect_url}`}},
		{"a query only", "?q=2", []string{"-sSL", "-w", `|%{url_effective}`}},
		{"dot segments, written", "../x%zz/../y", []string{"-sSL", "-w", `|%{url_effective}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, ok("first\n"))
			loc := strings.Replace(tc.location, "ABS/", s.url, 1)
			s.mu.Lock()
			s.script = []answer{{status: 302, headers: map[string]string{"Location": loc}, body: "moved\n"}, ok("there\n"), ok("again\n")}
			s.mu.Unlock()
			url := s.url + "d/e/first"
			y := run(t, nil, append(append([]string{"http"}, tc.args...), url)...)
			ys := s.requests()
			s.restart()
			c := runCurl(t, append(tc.args, url)...)
			cs := s.requests()
			if y.code != c.code || len(ys) != len(cs) {
				t.Fatalf("yaoki exit %d (%d requests), curl exit %d (%d requests)\nyaoki: %s\ncurl: %s", y.code, len(ys), c.code, len(cs), y.stderr, c.stderr)
			}
			for i := range ys {
				if ys[i].uri != cs[i].uri || ys[i].header.Get("Referer") != cs[i].header.Get("Referer") {
					t.Errorf("request %d: yaoki sent %q (Referer %q), curl %q (Referer %q)", i+1, ys[i].uri, ys[i].header.Get("Referer"), cs[i].uri, cs[i].header.Get("Referer"))
				}
			}
			if y.stdout != c.stdout {
				t.Errorf("stdout:\nyaoki: %q\ncurl:  %q", y.stdout, c.stdout)
			}
		})
	}
}

// Credentials go to the first URL's host only; --location-trusted (which
// follows redirects, as -L) sends -u's and -H Authorization and Cookie to
// every host a redirect leads to, as curl 7.88.
func TestHTTPLocationTrustedLikeCurl(t *testing.T) {
	other := startScripted(t, false, ok("other\n"))
	first := startScripted(t, false, answer{status: 302, headers: map[string]string{"Location": strings.Replace(other.url, "127.0.0.1", "localhost", 1) + "to"}, body: "moved\n"})
	for _, args := range [][]string{
		{"-sSL", "-u", "ann:pw", "-H", "Cookie: c=1"},
		{"-sS", "--location-trusted", "-u", "ann:pw", "-H", "Cookie: c=1"},
		{"-sS", "--location-trusted", "-H", "Authorization: Bearer t"},
	} {
		all := append(args, first.url)
		y := run(t, nil, append([]string{"http"}, all...)...)
		ys := other.requests()
		first.restart()
		other.restart()
		c := runCurl(t, all...)
		cs := other.requests()
		other.restart()
		if y.code != 0 || c.code != 0 || len(ys) != 1 || len(cs) != 1 || y.stdout != c.stdout {
			t.Fatalf("%q: yaoki exit %d %q (%d requests there), curl %d %q (%d)\n%s", args, y.code, y.stdout, len(ys), c.code, c.stdout, len(cs), y.stderr)
		}
		for _, h := range []string{"Authorization", "Cookie"} {
			if got, want := ys[0].header.Get(h), cs[0].header.Get(h); got != want {
				t.Errorf("%q: %s on the other host: yaoki %q, curl %q", args, h, got, want)
			}
		}
	}
}
