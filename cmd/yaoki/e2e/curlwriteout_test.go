package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// -w's sizes are curl's: the final answer's body, the status lines and
// headers received and the request bodies sent (along -L's redirects),
// the connections made; both write the same numbers.
func TestHTTPWriteOutSizesLikeCurl(t *testing.T) {
	redirect := answer{status: 302, headers: map[string]string{"Location": "/next"}, body: "moved\n"}
	for _, tc := range []struct {
		name   string
		script []answer
		args   []string
		path   string
	}{
		{"GET", []answer{ok("hello\n")}, nil, ""},
		{"POST", []answer{status(201, "made\n")}, []string{"-d", "a=1&b=2"}, ""},
		{"-L", []answer{redirect, ok("there\n")}, []string{"-L"}, ""},
		{"-L POST 307", []answer{{status: 307, headers: map[string]string{"Location": "/next"}, body: "moved\n"}, ok("there\n")}, []string{"-L", "-d", "a=1"}, ""},
		{"-f 404", []answer{status(404, "no\n")}, []string{"-f"}, ""},
		{"-I", []answer{ok("hello\n")}, []string{"-I"}, ""},
		{"refused", nil, nil, "http://127.0.0.1:1/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, append(tc.script, ok("unused"))[:max(1, len(tc.script))]...)
			url := s.url + "p"
			if tc.path != "" {
				url = tc.path
			}
			args := append(append([]string{"-s", "-o", t.TempDir() + "/out", "--retry", "0", "-w", `%{size_download} %{size_header} %{size_upload} %{num_connects} %{speed_upload}`}, tc.args...), url)
			y := run(t, nil, append([]string{"http"}, args...)...)
			s.restart()
			c := runCurl(t, args...)
			if y.code != c.code {
				t.Errorf("exit: yaoki %d, curl %d", y.code, c.code)
			}
			yf, cf := strings.Fields(y.stdout), strings.Fields(c.stdout)
			if len(yf) != 5 || len(cf) != 5 || strings.Join(yf[:4], " ") != strings.Join(cf[:4], " ") {
				t.Errorf("-w sizes: yaoki %q, curl %q", y.stdout, c.stdout)
			}
			if (yf[4] == "0") != (cf[4] == "0") {
				t.Errorf("speed_upload: yaoki %s, curl %s: want both 0 or neither", yf[4], cf[4])
			}
		})
	}
}

// %{size_request} is the bytes of the requests sent, headers and bodies:
// for yaoki http and for curl (whose headers differ: User-Agent,
// Attempt-Count), what the server received.
func TestHTTPWriteOutSizeRequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script []answer
		args   []string
	}{
		{"GET", []answer{ok("hello\n")}, nil},
		{"POST", []answer{ok("hello\n")}, []string{"-d", "a=1&b=2", "-H", "X-Two: a", "-H", "X-Two: b"}},
		{"-L", []answer{{status: 302, headers: map[string]string{"Location": "/next%zz"}, body: "moved\n"}, ok("there\n")}, []string{"-L"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, tc.script...)
			args := append(append([]string{"-s", "-o", t.TempDir() + "/out", "-w", `%{size_request}`}, tc.args...), s.url+"p?q=1")
			for _, who := range []string{"yaoki", "curl"} {
				s.restart()
				r := runAs(t, who, args...)
				want := 0
				for _, q := range s.requests() {
					want += len(q.method) + 1 + len(q.uri) + len(" HTTP/1.1\r\n") + len("Host: ") + len(q.host) + 2 + 2 + len(q.body)
					for k, vs := range q.header {
						for _, v := range vs {
							want += len(k) + 2 + len(v) + 2
						}
					}
				}
				if r.code != 0 || r.stdout != strconv.Itoa(want) {
					t.Errorf("%s: exit %d, %%{size_request} %q; the server received %d bytes", who, r.code, r.stdout, want)
				}
			}
		})
	}
}

// -w's times are seconds with six decimals, as curl 7.88 writes them, in
// the order of a request's phases; curl's obey the same checks.
func TestHTTPWriteOutTimes(t *testing.T) {
	const w = `%{time_namelookup} %{time_connect} %{time_appconnect} %{time_pretransfer} %{time_starttransfer} %{time_total} %{time_redirect} %{size_download} %{speed_download}`
	redirect := answer{status: 302, headers: map[string]string{"Location": "/next"}, body: "moved\n"}
	for _, tc := range []struct {
		name     string
		script   []answer
		tls      bool
		args     []string
		refused  bool
		redirect bool
	}{
		{"GET", []answer{ok("hello\n")}, false, nil, false, false},
		{"TLS", []answer{ok("hello\n")}, true, []string{"-k"}, false, false},
		{"-L", []answer{redirect, ok("there\n")}, false, []string{"-L"}, false, true},
		{"refused", nil, false, nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, tc.tls, append(tc.script, ok("unused"))[:max(1, len(tc.script))]...)
			url := s.url
			if tc.refused {
				url = "http://127.0.0.1:1/"
			}
			args := append(append([]string{"-s", "--retry", "0", "-o", t.TempDir() + "/out", "-w", w}, tc.args...), url)
			for _, who := range []string{"yaoki", "curl"} {
				s.restart()
				r := runAs(t, who, args...)
				checkTimes(t, who, r.stdout, tc.tls, tc.refused, tc.redirect)
			}
		})
	}
}

var curlTime = regexp.MustCompile(`^\d+\.\d{6}$`)

// checkTimes checks the -w output of TestHTTPWriteOutTimes's format.
func checkTimes(t *testing.T, who, out string, tlsOn, refused, redirected bool) {
	t.Helper()
	f := strings.Fields(out)
	if len(f) != 9 {
		t.Fatalf("%s: -w wrote %q", who, out)
	}
	v := make([]float64, 9)
	for i, s := range f {
		if i < 7 && !curlTime.MatchString(s) {
			t.Errorf("%s: time %d is %q: want seconds with six decimals", who, i, s)
		}
		v[i], _ = strconv.ParseFloat(s, 64)
	}
	lookup, connect, app, pre, start, total, redirect, size, speed := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]
	switch {
	case refused:
		if connect != 0 || pre != 0 || start != 0 || lookup > total || size != 0 || speed != 0 {
			t.Errorf("%s: refused: %q: want no connect, no transfer, the lookup within the total", who, out)
		}
		return
	case !(lookup <= connect && connect <= pre && pre <= start && start <= total && total > 0):
		t.Errorf("%s: %q: want namelookup ≤ connect ≤ pretransfer ≤ starttransfer ≤ total", who, out)
	case tlsOn && !(connect <= app && app <= pre):
		t.Errorf("%s: %q: want connect ≤ appconnect ≤ pretransfer over TLS", who, out)
	case !tlsOn && app != 0:
		t.Errorf("%s: %q: want appconnect 0 without TLS", who, out)
	case redirected != (redirect > 0) || redirect > total:
		t.Errorf("%s: %q: want time_redirect > 0 (and ≤ total) only after a redirect", who, out)
	}
	// speed_download is size_download over time_total, in whole bytes; the
	// total is written to the microsecond, so allow that much.
	if want := size / total; speed > want || speed < size/(total+1e-6)-1 {
		t.Errorf("%s: speed_download %v with %v bytes in %v s: want about %v", who, speed, size, total, want)
	}
}

// With retries, the times are of the final answer's attempt on the clock
// of the whole run: its connection is made after the wait before it
// (curl, which starts a new transfer for a retry, measures from there).
func TestHTTPWriteOutTimesAfterRetries(t *testing.T) {
	s := startScripted(t, false, status(503, "busy\n"), ok("done\n"))
	r := run(t, nil, "http", "-s", "--retry", "1", "--retry-delay", "0.2", "-o", t.TempDir()+"/out", "-w", `%{time_pretransfer} %{time_starttransfer} %{time_total} %{num_retries}`, s.url)
	f := strings.Fields(r.stdout)
	if r.code != 0 || len(f) != 4 || f[3] != "1" {
		t.Fatalf("exit %d, -w wrote %q; want 0 and one retry", r.code, r.stdout)
	}
	pre, _ := strconv.ParseFloat(f[0], 64)
	start, _ := strconv.ParseFloat(f[1], 64)
	total, _ := strconv.ParseFloat(f[2], 64)
	if !(0.2 <= pre && pre <= start && start <= total) {
		t.Errorf("-w wrote %q: want 0.2 ≤ pretransfer ≤ starttransfer ≤ total (the final attempt after the 0.2 s wait)", r.stdout)
	}
}

// runAs runs yaoki http (who "yaoki") or curl with args.
func runAs(t *testing.T, who string, args ...string) result {
	t.Helper()
	if who == "yaoki" {
		return run(t, nil, append([]string{"http"}, args...)...)
	}
	return runCurl(t, args...)
}

// %{json} is valid JSON with curl's keys and types; the values that do not
// depend on time, on the port or on the request's headers are curl's.
func TestHTTPWriteOutJSONLikeCurl(t *testing.T) {
	redirect := answer{status: 302, headers: map[string]string{"Location": "/next"}, body: "moved\n"}
	for _, tc := range []struct {
		name   string
		script []answer
		args   []string
		path   string
	}{
		{"GET -o", []answer{ok("hello\n")}, []string{"-o", "OUT"}, ""},
		{"redirect not followed, -e", []answer{redirect}, []string{"-e", "http://from.example/"}, ""},
		{"-L", []answer{redirect, ok("there\n")}, []string{"-L"}, ""},
		{"refused", nil, nil, "http://127.0.0.1:1/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, append(tc.script, ok("unused"))[:max(1, len(tc.script))]...)
			url := s.url + "p?q=1"
			if tc.path != "" {
				url = tc.path
			}
			out := t.TempDir() + "/out"
			args := []string{"-s", "--retry", "0", "-w", "%{json}"}
			for _, a := range tc.args {
				args = append(args, strings.Replace(a, "OUT", out, 1))
			}
			args = append(args, url)
			got := map[string]map[string]any{}
			for _, who := range []string{"yaoki", "curl"} {
				s.restart()
				r := runAs(t, who, args...)
				text := r.stdout[strings.LastIndex(r.stdout, "{"+`"`):]
				var m map[string]any
				if err := json.Unmarshal([]byte(text), &m); err != nil {
					t.Fatalf("%s: %%{json} is not JSON: %v\n%s", who, err, text)
				}
				got[who] = m
			}
			differ := map[string]bool{"local_port": true, "size_request": true, "errormsg": true, "speed_download": true, "speed_upload": true}
			for k, yv := range got["yaoki"] {
				cv, ok := got["curl"][k]
				switch {
				case k == "num_retries":
				case !ok:
					t.Errorf("yaoki writes %q, which curl does not", k)
				case fmt.Sprintf("%T", yv) != fmt.Sprintf("%T", cv):
					t.Errorf("%s: yaoki %#v, curl %#v: want the same JSON type", k, yv, cv)
				case strings.HasPrefix(k, "time_") || differ[k]:
				case yv != cv:
					t.Errorf("%s: yaoki %#v, curl %#v", k, yv, cv)
				}
			}
		})
	}
}

// A run that ends before its transfer (a malformed URL, a protocol other
// than HTTP, a -T file that cannot be read) writes -w's format as curl
// does, %{http_code} 000 and %{exitcode} included: a script that reads
// the status with -w gets 000, not nothing. %{url} is the URL as given.
func TestHTTPWriteOutBeforeTransferLikeCurl(t *testing.T) {
	s := startScripted(t, false, ok("hello\n"))
	host := strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/")
	const w = `%{http_code} %{exitcode} %{method} %{size_download} %{num_redirects} [%{url}] [%{url_effective}] [%{filename_effective}]`
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"a space in the URL", []string{"http://" + host + "/a b"}, 3},
		{"a port out of range", []string{"-d", "x=1", "http://127.0.0.1:99999/"}, 3},
		{"another protocol", []string{"-o", "OUT", "foo://" + host + "/"}, 1},
		{"-T a file that cannot be read", []string{"-T", "MISSING", "http://" + host + "/up/"}, 26}, // curl's %{method} is GET: yaoki's PUT is left out
		{"-G", []string{"-G", "-d", "a=1", "http://" + host + "/x/../p?z=1#f"}, 0},
		{"-G a space", []string{"-G", "-d", "a=b c", "http://" + host + "/p"}, 3},
		{"%{url} without a scheme", []string{host + "/p"}, 0},
		{"%{url} as written", []string{"HTTP://" + host + "/x/../p"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			format := w
			if tc.args[0] == "-T" {
				format = strings.Replace(w, "%{method} ", "", 1)
			}
			args := []string{"-s", "-w", format}
			for _, a := range tc.args {
				a = strings.Replace(a, "OUT", dir+"/out", 1)
				args = append(args, strings.Replace(a, "MISSING", dir+"/missing", 1))
			}
			y, c := runAs(t, "yaoki", args...), runAs(t, "curl", args...)
			if y.code != tc.code || c.code != tc.code {
				t.Errorf("exit: yaoki %d, curl %d; want %d", y.code, c.code, tc.code)
			}
			if y.stdout != c.stdout {
				t.Errorf("stdout:\nyaoki: %q\ncurl:  %q", y.stdout, c.stdout)
			}
			if y.stderr != "" {
				t.Errorf("stderr %q: want nothing with -s", y.stderr)
			}
		})
	}
}
