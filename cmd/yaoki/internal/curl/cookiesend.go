package curl

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// cookieFlags are curl's -b, -c and -j.
type cookieFlags struct {
	given   []string // -b: NAME=VALUE strings (any with '='), else files, in order
	jarFile string   // -c: where the cookies known at the end are written ("-": stdout)
	junk    bool     // -j: session cookies read from -b's files are dropped
}

func (f *cookieFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&f.given, "cookie", "b", nil, "'NAME=VALUE; N2=V2' to send as given (to the URL's host only), or a FILE of cookies in the Netscape format (- for stdin; \"\" none), which turns on the cookie engine: cookies the answers set are sent on the next requests of the run (-L), as curl (repeatable)")
	fs.StringVarP(&f.jarFile, "cookie-jar", "c", "", "write the cookies known at the end of the run to FILE in the Netscape format, as curl (- for stdout); turns on the cookie engine")
	fs.BoolVarP(&f.junk, "junk-session-cookies", "j", false, "drop the session cookies (expiry 0) of -b's files, as a new session would")
}

// on reports whether the flags ask for cookies.
func (f *cookieFlags) on() bool { return len(f.given) > 0 || f.jarFile != "" }

// setup reads -b's strings and files: it returns the NAME=VALUE string to
// send (the strings joined with ';', as curl joins them) and the cookie
// jar, nil unless -b names a file (even "" or one that cannot be read,
// as curl) or -c is given.
func (f *cookieFlags) setup(stdin io.Reader, verbose io.Writer, now time.Time) (string, *cookieJar) {
	var strs []string
	var jar *cookieJar
	if f.jarFile != "" {
		jar = &cookieJar{junkSession: f.junk}
	}
	for _, g := range f.given {
		if strings.Contains(g, "=") {
			strs = append(strs, g)
		} else if jar == nil {
			jar = &cookieJar{junkSession: f.junk}
		}
	}
	f.loadFiles(jar, stdin, verbose, now)
	return strings.Join(strs, ";"), jar
}

// loadFiles adds the cookies of -b's files to jar. A file that cannot be
// read gives no cookies, as in curl; verbose (if not nil) says why.
func (f *cookieFlags) loadFiles(jar *cookieJar, stdin io.Reader, verbose io.Writer, now time.Time) {
	for _, g := range f.given {
		if strings.Contains(g, "=") || g == "" {
			continue
		}
		var err error
		if g == "-" {
			err = jar.load(stdin, now)
		} else if fl, oerr := os.Open(g); oerr != nil {
			err = oerr
		} else {
			err = jar.load(fl, now)
			fl.Close()
		}
		if err != nil && verbose != nil {
			fmt.Fprintf(verbose, "* yaoki http: -b %s: no cookies read: %v\n", g, err)
		}
	}
}

// save writes the jar to -c's file, at the end of the run. As curl 7.88,
// it first reads -b's files again (stdin aside): a cookie an answer
// deleted is written back, a cookie an answer set is kept. As curl, a
// file that cannot be written does not change the exit code; yaoki says
// so on stderr.
func (f *cookieFlags) save(jar *cookieJar, stdout io.Writer, say func(string, ...any), now time.Time) {
	if f.jarFile == "" || jar == nil {
		return
	}
	f.loadFiles(jar, strings.NewReader(""), nil, now)
	if f.jarFile == "-" {
		_ = jar.write(stdout, now)
		return
	}
	var b strings.Builder
	_ = jar.write(&b, now)
	if err := os.WriteFile(f.jarFile, []byte(b.String()), 0o600); err != nil {
		say("-c %s: the cookies were not saved: %v", f.jarFile, err)
	}
}

// cookieTransport adds the cookies to each request of the run (the URL
// given, each redirect), before the retrying transport: every attempt of
// a request sends the same cookies. With a jar, it keeps the cookies that
// the answer set (the answer the retries ended with: a Set-Cookie of an
// answer that was retried is dropped with it).
type cookieTransport struct {
	base       http.RoundTripper
	jar        *cookieJar // nil: no cookie engine
	given      string     // -b NAME=VALUE, sent as given
	host       string     // the URL given's host: given goes to it only
	userCookie bool       // -H Cookie: given is not sent, as curl
	t          *target
}

func (c *cookieTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	host := cookieHost(req)
	path, ok := c.t.pathFor(req)
	if !ok {
		path = req.URL.EscapedPath()
	}
	if path == "" {
		path = "/"
	}
	secure := secureContext(req.URL.Scheme, host)
	var pairs []string
	size, capped := 0, false
	if c.jar != nil {
		for _, ck := range c.jar.matching(host, path, secure, time.Now()) {
			if size+len(ck.name)+len(ck.value) > cookieMaxHeader {
				capped = true
				break
			}
			pairs = append(pairs, ck.name+"="+ck.value)
			size += len(ck.name) + len(ck.value) + 1
		}
	}
	// curl sends -b's string to every host a redirect leads to; yaoki
	// http to the host of the URL given only, as it does -H Cookie.
	if c.given != "" && !capped && !c.userCookie && strings.EqualFold(req.URL.Hostname(), c.host) {
		pairs = append(pairs, c.given)
	}
	out := req
	if len(pairs) > 0 {
		out = req.WithContext(req.Context())
		out.Header = req.Header.Clone()
		out.Header["Cookie"] = append([]string{strings.Join(pairs, "; ")}, req.Header["Cookie"]...)
	}
	resp, err := c.base.RoundTrip(out)
	if resp != nil && c.jar != nil {
		now := time.Now()
		for _, v := range resp.Header.Values("Set-Cookie") {
			if ck, ok := parseSetCookie(v, host, path, secure, now); ok {
				c.jar.add(ck, secure, now)
			}
		}
	}
	return resp, err
}

func (c *cookieTransport) CloseIdleConnections() {
	if ci, ok := c.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
