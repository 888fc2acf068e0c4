package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// cookieAnswer is what the cookie server answers on one path.
type cookieAnswer struct {
	status   int      // 200 when 0
	cookies  []string // Set-Cookie headers, in order
	location string   // a redirect's Location; PORT is the server's port, TLSPORT its TLS one
	busy     []string // a path ending with "/busy": the first answer's Set-Cookie headers
}

// cookieSeen is a request as the cookie server received it.
type cookieSeen struct {
	host, uri string
	cookie    []string // the Cookie headers
}

func (s cookieSeen) String() string { return fmt.Sprintf("%s%s Cookie:%q", s.host, s.uri, s.cookie) }

// cookieServer is a net/http server on a loopback port that answers each
// path from its script (200 "ok" for paths it does not name; a path that
// ends with "/busy" answers 503 once, then 200) and records the requests,
// whatever the Host (the tests reach it under several names with
// --resolve).
type cookieServer struct {
	port    string
	tlsPort string // the same server over TLS (a self-signed certificate)
	script  map[string]cookieAnswer
	mu      sync.Mutex
	got     []cookieSeen
	busy    map[string]bool
}

func startCookieServer(t *testing.T, script map[string]cookieAnswer) *cookieServer {
	t.Helper()
	s := &cookieServer{script: script, busy: map[string]bool{}}
	// The ports are known before the servers start serving.
	plain, secure := httptest.NewUnstartedServer(s), httptest.NewUnstartedServer(s)
	_, s.port, _ = net.SplitHostPort(plain.Listener.Addr().String())
	_, s.tlsPort, _ = net.SplitHostPort(secure.Listener.Addr().String())
	plain.Start()
	secure.StartTLS()
	t.Cleanup(plain.Close)
	t.Cleanup(secure.Close)
	return s
}

func (s *cookieServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.got = append(s.got, cookieSeen{host: r.Host, uri: r.RequestURI, cookie: r.Header.Values("Cookie")})
	a := s.script[r.URL.Path]
	if strings.HasSuffix(r.URL.Path, "/busy") && !s.busy[r.Host+r.URL.Path] {
		s.busy[r.Host+r.URL.Path] = true
		a = cookieAnswer{status: http.StatusServiceUnavailable, cookies: a.busy}
	}
	s.mu.Unlock()
	for _, c := range a.cookies {
		w.Header().Add("Set-Cookie", c)
	}
	if a.location != "" {
		w.Header().Set("Location", strings.NewReplacer("TLSPORT", s.tlsPort, "PORT", s.port).Replace(a.location))
	}
	w.WriteHeader(max(a.status, 200))
	fmt.Fprint(w, "ok\n")
}

// take returns the requests seen and forgets them.
func (s *cookieServer) take() []cookieSeen {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.got
	s.got, s.busy = nil, map[string]bool{}
	return got
}

// resolveArgs maps the names the cookie tests use to the server.
func (s *cookieServer) resolveArgs() []string {
	var out []string
	for _, h := range []string{"a.example.com", "b.example.com", "a.other.org", "localhost"} {
		out = append(out, "--resolve", h+":"+s.port+":127.0.0.1", "--resolve", h+":"+s.tlsPort+":127.0.0.1")
	}
	return out
}

// sameJar compares two cookie files as curl writes them, line by line,
// with expiry times 5 s apart taken as equal (Max-Age counts from when
// the answer came).
func sameJar(a, b string) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		fa, fb := strings.Split(la[i], "\t"), strings.Split(lb[i], "\t")
		if len(fa) != 7 || len(fb) != 7 {
			if la[i] != lb[i] {
				return false
			}
			continue
		}
		ea, _ := strconv.ParseInt(fa[4], 10, 64)
		eb, _ := strconv.ParseInt(fb[4], 10, 64)
		fa[4], fb[4] = "", ""
		if strings.Join(fa, "\t") != strings.Join(fb, "\t") || ea-eb > 5 || eb-ea > 5 {
			return false
		}
	}
	return true
}

// cookieFile is a Netscape cookie file as curl reads it: domain and path
// matching, secure, expired and session cookies, #HttpOnly_, comments,
// lines curl skips.
const cookieFile = `# Netscape HTTP Cookie File
# a comment
a.example.com	FALSE	/	FALSE	0	host	h1
.example.com	TRUE	/	FALSE	4102444800	dom	d1
example.com	TRUE	/set	FALSE	0	setpath	s1
a.example.com	FALSE	/set/deeper/	FALSE	0	deep	x1
a.example.com	FALSE	/	TRUE	0	sec	only-https
localhost	FALSE	/	TRUE	0	seclocal	l1
a.example.com	FALSE	/	FALSE	1	old	expired
#HttpOnly_a.example.com	FALSE	/	FALSE	0	ho	httponly
   a.example.com	FALSE	/	FALSE	0	spaced	sp
a.example.com	FALSE	FALSE	0	nopath	np
a.example.com	FALSE	/	FALSE	0	empty
a.example.com		FALSE	/	FALSE	0	twotabs	tt
a.example.com	FALSE	/	FALSE	0	too	many	fields
a.example.com	FALSE	/	FALSE	-5	neg	n
a.example.com	FALSE	/	FALSE	soon	word	w
a.other.org	FALSE	/	FALSE	0	other	o1
#a.example.com	FALSE	/	FALSE	0	commented	c
`

// TestHTTPCookiesLikeCurl compares, for -b, -c and -j, the Cookie headers
// each request of a run carries (the URL given, then each redirect
// followed with -L, across hosts, ports and paths) and the file -c
// writes, from yaoki http and from curl 7.88 against one loopback server.
func TestHTTPCookiesLikeCurl(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cookies.txt")
	if err := os.WriteFile(file, []byte(cookieFile), 0o600); err != nil {
		t.Fatal(err)
	}
	// A tour of hosts and paths: a.example.com/set/x, then its
	// subdomain's sibling, another domain, localhost, another path.
	tour := map[string]cookieAnswer{
		"/set/x":    {status: 302, location: "http://b.example.com:PORT/set/y"},
		"/set/y":    {status: 302, location: "http://a.other.org:PORT/set/z"},
		"/set/z":    {status: 302, location: "http://localhost:PORT/set/w"},
		"/set/w":    {status: 302, location: "http://a.example.com:PORT/set/deeper/q?x=/"},
		"/set/deep": {},
	}
	setting := map[string]cookieAnswer{
		"/set/x": {status: 302, location: "/set/next", cookies: []string{
			"plain=1", "withpath=2; Path=/set", "dom=3; Domain=example.com", "lead=4; domain=.EXAMPLE.com; path=/",
			"sec=5; Secure", "ho=6; HttpOnly", "exp=7; Expires=Wed, 01 Jan 2031 00:00:00 GMT",
			"dash=8; expires=Wed, 01-Jan-2031 00:00:00 GMT", "ma=9; Max-Age=3600", "both=10; Max-Age=60; Expires=Wed, 01 Jan 2031 00:00:00 GMT",
			"gone=11; Max-Age=0", "past=12; Expires=Wed, 01 Jan 2020 00:00:00 GMT", "tld=13; Domain=com", "foreign=14; Domain=other.org",
			"  spaced  =  v 15  ; path = /set/ ", "noeq", "=novalue", "quoted=\"q 16\"", "tab=a\tb", "__Secure-x=17", "__Host-y=18; Path=/",
			"unknownattr=19; Foo=bar; Version=1", "nopathval=20; Path=", "relpath=21; Path=rel", "host=replaced",
		}},
		"/set/next": {status: 302, location: "http://b.example.com:PORT/set/y"},
		"/set/y":    {status: 302, location: "http://a.example.com:PORT/"},
	}
	deleting := map[string]cookieAnswer{
		"/del": {status: 302, location: "/after", cookies: []string{"host=; Max-Age=0", "dom=; Domain=example.com; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "ho=new; Path=/"}},
	}
	// Secure cookies set over HTTPS, sent over HTTPS only.
	secure := map[string]cookieAnswer{
		"/s":  {status: 302, location: "https://b.example.com:TLSPORT/s2", cookies: []string{"sec=1; Secure; Domain=example.com", "plain=2; Domain=example.com", "__Secure-x=3; Secure", "__Host-y=4; Secure; Path=/", "__Host-z=5; Secure; Path=/; Domain=example.com", "__Secure-w=6"}},
		"/s2": {status: 302, location: "http://b.example.com:PORT/p", cookies: []string{"other=7; Domain=example.com"}},
		"/p":  {status: 302, location: "https://a.example.com:TLSPORT/end", cookies: []string{"sec=8; Domain=example.com"}},
	}
	// Expires dates in the forms curl reads, and some it does not.
	var expires []string
	for i, d := range []string{
		"Wed, 01 Jan 2031 00:00:00 GMT", "Wed, 01-Jan-2031 00:00:00 GMT", "Wednesday, 01-Jan-31 00:00:00 GMT", "Wed Jan  1 00:00:00 2031",
		"Wed, 01 Jan 2031 00:00:00 +0100", "Wed, 01 Jan 2031 00:00:00 -0130", "01 Jan 2031 00:00:00 GMT", "2031-01-01 00:00:00",
		"Wed, 1 Jan 2031 00:00 GMT", "wed, 01 jan 2031 00:00:00 utc", "Wed, 01 Jan 2031 00:00:00 PST", "Wed, 01 Jan 2031 00:00:00 CEST",
		"Wed, 01 Jan 2031 00:00:00 A", "Wed, 01 Jan 2031 00:00:00 N", "Wed, 01 Jan 69 00:00:00 GMT", "Wed, 01 Jan 2031", "20310101",
		"Wed, 31 Feb 2031 25:00:00 GMT", "Wed, 30 Feb 2031 23:59:60 GMT", "Jan 1 2031 10:20", "2031 Jan 1", "Thu, 01 Jan 1970 00:00:00 GMT",
		"Wed, 31 Dec 1969 23:59:59 GMT", "Wed, 31 Dec 1969 23:59:58 GMT", "Fri, 01 Jan 1582 00:00:00 GMT", "Wed 01 Jan 2031 00:00:00 GMT extra",
		"1 Jan 2031 12:00:00 JST NZDT", "Wed, 01 Jan 2031 00:00:00 XYZ", "Wed,01-Jan-2031 00:00:00 GMT", "31 Dec 9999 23:59:59",
	} {
		expires = append(expires, fmt.Sprintf("e%d=%d; Expires=%s", i, i, d))
	}
	local := map[string]cookieAnswer{
		"/l": {status: 302, location: "/l2", cookies: []string{"s=1; Secure", "h=2"}},
	}
	for _, tc := range []struct {
		name   string
		script map[string]cookieAnswer
		url    string // HOST stands for a.example.com:PORT
		args   []string
		jar    bool // compare the files -c writes
		// given is -b's NAME=VALUE string where -L leads to another
		// host: curl sends it there too, yaoki http does not.
		given string
	}{
		{"-b string", nil, "HOST/p", []string{"-b", "a=1; b=2"}, false, ""},
		{"-b strings joined", nil, "HOST/p", []string{"-b", "a=1", "-b", "b=2;c=3"}, false, ""},
		{"-b string, -L to another port", map[string]cookieAnswer{"/p": {status: 302, location: "http://a.example.com:PORT/q"}}, "HOST/p", []string{"-L", "-b", "a=1"}, false, ""},
		{"-b string, -L to another host", map[string]cookieAnswer{"/p": {status: 302, location: "http://b.example.com:PORT/q"}}, "HOST/p", []string{"-L", "-b", "a=1"}, false, "a=1"},
		{"-H Cookie beats -b string", nil, "HOST/p", []string{"-H", "Cookie: mine=1", "-b", "a=1"}, false, ""},
		{"-H Cookie: removes nothing of -b FILE", nil, "HOST/set/x", []string{"-H", "Cookie: mine=1", "-b", file}, false, ""},
		{"-b FILE", tour, "HOST/set/x", []string{"-L", "-b", file}, false, ""},
		{"-b FILE -c", tour, "HOST/set/x", []string{"-L", "-b", file, "-c", "JAR"}, true, ""},
		{"-b FILE -j -c", tour, "HOST/set/x", []string{"-L", "-j", "-b", file, "-c", "JAR"}, true, ""},
		{"-b FILE -H Host", nil, "HOST/set/x", []string{"-b", file, "-b", "s=1", "-H", "Host: b.example.com"}, false, ""},
		{"Set-Cookie -H Host", setting, "HOST/set/x", []string{"-b", "", "-H", "Host: b.example.com", "-c", "JAR"}, true, ""},
		{"-b FILE and string", tour, "HOST/set/x", []string{"-L", "-b", file, "-b", "s=1"}, false, "s=1"},
		{"Set-Cookie with -b \"\"", setting, "HOST/set/x", []string{"-L", "-b", "", "-c", "JAR"}, true, ""},
		{"Set-Cookie with -c only", setting, "HOST/set/x", []string{"-L", "-c", "JAR"}, true, ""},
		{"Set-Cookie with a missing -b FILE", setting, "HOST/set/x", []string{"-L", "-b", filepath.Join(dir, "missing")}, false, ""},
		{"Set-Cookie without the engine", setting, "HOST/set/x", []string{"-L", "-b", "a=1"}, false, "a=1"},
		{"Set-Cookie replaces -b FILE's", setting, "HOST/set/x", []string{"-L", "-b", file, "-c", "JAR"}, true, ""},
		{"Set-Cookie deletes -b FILE's", deleting, "HOST/del", []string{"-L", "-b", file, "-c", "JAR"}, true, ""},
		{"Secure from localhost", local, "http://localhost:PORT/l", []string{"-L", "-c", "JAR"}, true, ""},
		{"from an IP", setting, "http://127.0.0.1:PORT/set/x", []string{"-L", "-b", "", "-c", "JAR"}, true, ""},
		{"Secure over HTTPS", secure, "https://a.example.com:TLSPORT/s", []string{"-k", "-L", "-c", "JAR"}, true, ""},
		{"Expires forms", map[string]cookieAnswer{"/e": {cookies: expires}}, "HOST/e", []string{"-c", "JAR"}, true, ""},
		{"-c -", local, "http://localhost:PORT/l", []string{"-L", "-c", "-", "-w", "[%{http_code}]"}, false, ""},
		{"-c to a folder that does not exist", setting, "HOST/set/x", []string{"-L", "-c", filepath.Join(dir, "missing", "jar")}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startCookieServer(t, tc.script)
			url := strings.NewReplacer("HOST", "http://a.example.com:"+s.port, "TLSPORT", s.tlsPort, "PORT", s.port).Replace(tc.url)
			var got [2][]cookieSeen
			var res [2]result
			var jars [2]string
			for i, who := range []string{"yaoki", "curl"} {
				jar := filepath.Join(dir, strings.ReplaceAll(tc.name, "/", "_")+"."+who)
				args := append(append([]string{"-sS"}, s.resolveArgs()...), tc.args...)
				for j := range args {
					if args[j] == "JAR" {
						args[j] = jar
					}
				}
				res[i] = runAs(t, who, append(args, url)...)
				got[i] = s.take()
				if tc.jar {
					b, err := os.ReadFile(jar)
					if err != nil {
						t.Fatalf("%s -c: %v", who, err)
					}
					jars[i] = string(b)
				}
			}
			if res[0].code != res[1].code || res[0].stdout != res[1].stdout {
				t.Fatalf("yaoki exit %d, stdout %q; curl exit %d, stdout %q\nyaoki: %s\ncurl: %s", res[0].code, res[0].stdout, res[1].code, res[1].stdout, res[0].stderr, res[1].stderr)
			}
			if tc.given != "" {
				var sent bool
				got[1], sent = withoutGiven(got[1], tc.given, "a.example.com:"+s.port)
				if !sent {
					t.Errorf("curl did not send -b %q to another host: %v", tc.given, got[1])
				}
			}
			if fmt.Sprint(got[0]) != fmt.Sprint(got[1]) {
				t.Errorf("requests:\nyaoki %v\ncurl  %v", got[0], got[1])
			}
			if tc.jar && !sameJar(jars[0], jars[1]) {
				t.Errorf("-c file:\nyaoki:\n%s\ncurl:\n%s", jars[0], jars[1])
			}
		})
	}
}

// withoutGiven returns the requests with -b's string given taken out of
// the Cookie headers sent to other hosts than host, and whether there
// were such.
func withoutGiven(reqs []cookieSeen, given, host string) ([]cookieSeen, bool) {
	out := make([]cookieSeen, len(reqs))
	found := false
	for i, r := range reqs {
		out[i] = cookieSeen{host: r.host, uri: r.uri}
		for _, c := range r.cookie {
			if r.host != host {
				if c == given {
					found = true
					continue
				}
				if rest, ok := strings.CutSuffix(c, "; "+given); ok {
					c, found = rest, true
				}
			}
			out[i].cookie = append(out[i].cookie, c)
		}
	}
	return out, found
}

// TestHTTPCookiesOnRetries: every attempt of a request sends the same
// cookies, and the Set-Cookie of an answer yaoki http retries (a 503) is
// dropped with that answer: not sent on the retry, not in -c's file.
// curl 7.88 keeps it, sends it on the retry and writes it, which this
// test measures too.
func TestHTTPCookiesOnRetries(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cookies.txt")
	os.WriteFile(file, []byte("a.example.com\tFALSE\t/\tFALSE\t0\tfromfile\tf1\n"), 0o600)
	s := startCookieServer(t, map[string]cookieAnswer{
		"/r/busy": {busy: []string{"busy=1; Path=/"}, cookies: []string{"final=2; Path=/"}, status: 302, location: "/r/next"},
	})
	url := "http://a.example.com:" + s.port + "/r/busy"
	var got [2][]cookieSeen
	var jars [2]string
	for i, who := range []string{"yaoki", "curl"} {
		jar := filepath.Join(dir, "jar."+who)
		args := append(append([]string{"-sS", "-L", "-b", file, "-b", "given=g", "-c", jar, "--retry", "1"}, s.resolveArgs()...), url)
		if who == "yaoki" {
			args = append(fastRetries, args...)
		} else {
			args = append([]string{"--retry-delay", "1"}, args...)
		}
		r := runAs(t, who, args...)
		if r.code != 0 || !strings.HasSuffix(r.stdout, "ok\n") {
			t.Fatalf("%s: exit %d, stdout %q; want 0 and ok\n%s", who, r.code, r.stdout, r.stderr)
		}
		got[i] = s.take()
		b, _ := os.ReadFile(jar)
		jars[i] = string(b)
	}
	y, c := got[0], got[1]
	if len(y) != 3 || len(c) != 3 {
		t.Fatalf("yaoki sent %d requests, curl %d; want 3 (the 503, its retry, the redirect)\nyaoki %v\ncurl %v", len(y), len(c), y, c)
	}
	same := fmt.Sprintf("%q", []string{"fromfile=f1; given=g"})
	if fmt.Sprintf("%q", y[0].cookie) != same || fmt.Sprintf("%q", y[1].cookie) != same {
		t.Errorf("yaoki's attempts sent %q and %q; want %s on both", y[0].cookie, y[1].cookie, same)
	}
	if want := fmt.Sprintf("%q", []string{"fromfile=f1; final=2; given=g"}); fmt.Sprintf("%q", y[2].cookie) != want {
		t.Errorf("yaoki's redirect sent %q, want %s", y[2].cookie, want)
	}
	if strings.Contains(jars[0], "busy") || !strings.Contains(jars[0], "\tfinal\t2\n") {
		t.Errorf("yaoki's -c file:\n%s\nwant final, not busy", jars[0])
	}
	// What curl 7.88 does instead.
	if fmt.Sprintf("%q", c[1].cookie) != fmt.Sprintf("%q", []string{"fromfile=f1; busy=1; given=g"}) || !strings.Contains(jars[1], "\tbusy\t1\n") {
		t.Errorf("curl's retry sent %q, its -c file:\n%s\nwant busy=1 in both (as measured with curl 7.88)", c[1].cookie, jars[1])
	}
}

// A -c file that cannot be written leaves the exit code as it is, as in
// curl 7.88 (which says nothing); yaoki http says so on stderr, unless -s.
// So does -v for a -b file that cannot be read.
func TestHTTPCookieJarUnwritable(t *testing.T) {
	s := startCookieServer(t, map[string]cookieAnswer{"/": {cookies: []string{"a=1"}}})
	jar := filepath.Join(t.TempDir(), "missing", "jar")
	url := "http://127.0.0.1:" + s.port + "/"
	y, c := run(t, nil, "http", "-c", jar, url), runCurl(t, "-sS", "-c", jar, url)
	if y.code != 0 || c.code != 0 || !strings.Contains(y.stderr, "-c "+jar+": the cookies were not saved") || c.stderr != "" {
		t.Errorf("yaoki exit %d, stderr %q; curl exit %d, stderr %q; want 0 for both, a message from yaoki", y.code, y.stderr, c.code, c.stderr)
	}
	if r := run(t, nil, "http", "-s", "-c", jar, url); r.code != 0 || r.stderr != "" {
		t.Errorf("-s: exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
	}
	// A -b file that cannot be read gives no cookies, as in curl; -v
	// says why.
	if r := run(t, nil, "http", "-v", "-b", jar, url); r.code != 0 || !strings.Contains(r.stderr, "* yaoki http: -b "+jar+": no cookies read") {
		t.Errorf("-v -b missing: exit %d, stderr %q; want 0 and why no cookies were read", r.code, r.stderr)
	}
}
