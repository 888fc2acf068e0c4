package main

import (
	"testing"
	"time"
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
		if got := ti.writeOut(format); got != want {
			t.Errorf("-w %q wrote %q, want %q", format, got, want)
		}
	}
	if got := (&transferInfo{}).writeOut(`%{http_code}`); got != "000" {
		t.Errorf("no answer: %%{http_code} is %q, want 000 as curl", got)
	}
	if u := checkWriteOut(`%{http_code} %{bogus} %{time_total} %{nope}`); len(u) != 2 || u[0] != "bogus" || u[1] != "nope" {
		t.Errorf("unknown variables: got %q, want bogus, nope", u)
	}
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
	} {
		_, err := checkURL(raw)
		got := 0
		if err != nil {
			got = err.(*exitError).code
		}
		if got != code {
			t.Errorf("checkURL(%q): exit %d, want %d (%v)", raw, got, code, err)
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
	for _, s := range []string{`%{http_code}\n`, `%%{`, `\`, `%{`, `%{}`, `a\nb%{time_total}`} {
		f.Add(s)
	}
	ti := &transferInfo{status: 200, url: "u"}
	f.Fuzz(func(t *testing.T, format string) {
		out := ti.writeOut(format)
		if len(out) > 2*len(format)+64*len(format) {
			t.Fatalf("-w %q wrote %d bytes", format, len(out))
		}
		_ = checkWriteOut(format)
	})
}
