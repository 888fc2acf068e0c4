package curl

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// The limits curl 7.88 puts on cookies.
const (
	cookieMaxLine   = 5000 // a longer Set-Cookie or file line is dropped
	cookieMaxName   = 4096 // name and value together; each below 4095
	cookieMaxSend   = 150  // cookies sent in one request, at most
	cookieMaxHeader = 8190 // bytes of name=value pairs in one Cookie header
)

// cookie is one cookie as curl 7.88 keeps it (what its Netscape file
// format writes), not as RFC 6265 would: the path is kept as given (the
// default path ends with '/'), and matched without its last '/'.
type cookie struct {
	name, value string
	domain      string // without a leading dot; "" only from a file line "."
	tailmatch   bool   // the domain's subdomains too (a Domain attribute, TRUE in a file)
	path        string // as given, or the default: the request's path up to its last '/'
	secure      bool
	httpOnly    bool
	expires     int64 // Unix seconds; 0: a session cookie; 1: expired (Max-Age=0)
	live        bool  // set by an answer, not read from a file
	created     int   // order of creation: a replaced cookie keeps its own
	prefix      string
}

// matchPath is the path the cookie matches with: without quotes, "/"
// when it does not start with '/', without its last '/' (curl's
// sanitised path).
func (c *cookie) matchPath() string {
	p := strings.TrimPrefix(c.path, `"`)
	p = strings.TrimSuffix(p, `"`)
	if !strings.HasPrefix(p, "/") {
		return "/"
	}
	return strings.TrimSuffix(p, "/")
}

// expired reports whether the cookie's time has passed at now.
func (c *cookie) expired(now time.Time) bool {
	return c.expires != 0 && c.expires < now.Unix()
}

// netscapeLine is the cookie as a line of curl's cookie file.
func (c *cookie) netscapeLine() string {
	var b strings.Builder
	if c.httpOnly {
		b.WriteString("#HttpOnly_")
	}
	if c.tailmatch && !strings.HasPrefix(c.domain, ".") {
		b.WriteByte('.')
	}
	b.WriteString(c.domain)
	// An empty path (Set-Cookie's "Path=") is written empty, as curl
	// writes it.
	fmt.Fprintf(&b, "\t%s\t%s\t%s\t%d\t%s\t%s", upperBool(c.tailmatch), c.path, upperBool(c.secure), c.expires, c.name, c.value)
	return b.String()
}

func upperBool(v bool) string {
	if v {
		return "TRUE"
	}
	return "FALSE"
}

// parseCookieLine reads one line of a Netscape cookie file as curl 7.88
// reads it: seven fields separated by tabs (several tabs are one
// separator): domain (a leading dot dropped), TRUE when subdomains
// match, path (may be left out), TRUE when secure, expiry in Unix seconds
// (0: a session cookie), name, value (may be left out: empty). A line
// starting "#HttpOnly_" is an HttpOnly cookie; other lines starting with
// '#', and lines with other numbers of fields, are not cookies.
func parseCookieLine(line string) (cookie, bool) {
	var c cookie
	line = strings.TrimLeft(line, " \t")
	if rest, ok := strings.CutPrefix(line, "#HttpOnly_"); ok {
		line, c.httpOnly = rest, true
	}
	if strings.HasPrefix(line, "#") {
		return cookie{}, false
	}
	if i := strings.IndexByte(line, '\r'); i >= 0 {
		line = line[:i]
	}
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	var fields []string
	for _, f := range strings.Split(line, "\t") {
		if f != "" {
			fields = append(fields, f)
		}
	}
	// The path may be left out: a third field of TRUE or FALSE is the
	// secure flag, and the path is "/".
	if len(fields) >= 3 && (fields[2] == "TRUE" || fields[2] == "FALSE") {
		fields = append(fields[:2], append([]string{"/"}, fields[2:]...)...)
	}
	if len(fields) == 6 {
		fields = append(fields, "")
	}
	if len(fields) != 7 {
		return cookie{}, false
	}
	c.domain = strings.TrimPrefix(fields[0], ".")
	c.tailmatch = strings.EqualFold(fields[1], "TRUE")
	c.path = fields[2]
	c.secure = strings.EqualFold(fields[3], "TRUE")
	n, ok, overflow := leadingInt(fields[4])
	if !ok || overflow {
		return cookie{}, false
	}
	c.expires = n
	c.name, c.value = fields[5], fields[6]
	c.prefix = namePrefix(c.name)
	return c, true
}

// leadingInt reads the decimal integer at the start of s as C's strtoll
// does (leading white space and '+' skipped, what follows the digits
// ignored), refusing a negative one: ok is false when there is none,
// overflow true when it does not fit in an int64.
func leadingInt(s string) (n int64, ok, overflow bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	if strings.HasPrefix(s, "-") {
		return 0, false, false
	}
	s = strings.TrimPrefix(s, "+")
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := int64(s[i] - '0')
		if n > (math.MaxInt64-d)/10 {
			overflow = true
			continue
		}
		if !overflow {
			n = n*10 + d
		}
	}
	if overflow {
		n = math.MaxInt64
	}
	return n, i > 0, overflow
}

// namePrefix is "__Secure-" or "__Host-" (any case) when name starts
// with one, or "".
func namePrefix(name string) string {
	switch {
	case len(name) >= 9 && strings.EqualFold(name[:9], "__Secure-"):
		return "__Secure-"
	case len(name) >= 7 && strings.EqualFold(name[:7], "__Host-"):
		return "__Host-"
	}
	return ""
}

// cookieJar holds the cookies of one yaoki http run: curl's cookie
// engine, which -b FILE, -b "" and -c turn on. Its methods take the time
// of the decision. It is safe for concurrent use (hedged attempts).
type cookieJar struct {
	junkSession bool // -j: session cookies read from files are dropped

	mu      sync.Mutex
	cookies []*cookie
	created int
}

// load adds the cookies of a Netscape cookie file, as curl reads it:
// each line is trimmed of leading spaces and tabs; lines that are not
// cookies are skipped, and so are curl's "Set-Cookie:" lines (a cookie
// without a host, which curl would send to every host).
func (j *cookieJar) load(r io.Reader, now time.Time) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > cookieMaxLine {
			continue
		}
		trimmed := strings.TrimLeft(line, " \t")
		if len(trimmed) >= 11 && strings.EqualFold(trimmed[:11], "Set-Cookie:") {
			continue
		}
		c, ok := parseCookieLine(line)
		if !ok || !prefixAllowed(&c) || j.junkSession && c.expires == 0 {
			continue
		}
		j.add(c, false, now)
	}
	return sc.Err()
}

// prefixAllowed reports whether a "__Secure-" cookie is secure, and a
// "__Host-" cookie secure, for one host, with path "/".
func prefixAllowed(c *cookie) bool {
	switch c.prefix {
	case "__Secure-":
		return c.secure
	case "__Host-":
		return c.secure && c.path == "/" && !c.tailmatch
	}
	return true
}

// add puts c in the jar, in place of the cookie of the same name, domain
// and path (it keeps that one's place in the order of creation), as curl
// does; a cookie read from a file does not replace one set by an answer,
// and a cookie set outside a secure context cannot overlay a secure one.
func (j *cookieJar) add(c cookie, secureContext bool, now time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.created++
	c.created = j.created
	j.removeExpired(now)
	for _, old := range j.cookies {
		if !strings.EqualFold(old.name, c.name) || !strings.EqualFold(old.domain, c.domain) {
			continue
		}
		// As curl: a new path that starts with the secure one's, in any
		// case ("/login" covers "/login/en" and "/loginhelper" too).
		if op, np := old.matchPath(), c.matchPath(); old.secure && !c.secure && !secureContext &&
			len(np) >= len(op) && strings.EqualFold(np[:len(op)], op) {
			return
		}
	}
	for i, old := range j.cookies {
		if !strings.EqualFold(old.name, c.name) || !strings.EqualFold(old.domain, c.domain) ||
			old.tailmatch != c.tailmatch || !strings.EqualFold(old.matchPath(), c.matchPath()) {
			continue
		}
		if !c.live && old.live {
			return
		}
		c.created = old.created
		j.cookies[i] = &c
		return
	}
	j.cookies = append(j.cookies, &c)
}

// removeExpired drops the cookies whose time has passed. j.mu is held.
func (j *cookieJar) removeExpired(now time.Time) {
	kept := j.cookies[:0]
	for _, c := range j.cookies {
		if !c.expired(now) {
			kept = append(kept, c)
		}
	}
	clear(j.cookies[len(kept):])
	j.cookies = kept
}

// cookieHost is the host as curl's cookie engine names it: the URL's
// host name, without brackets for IPv6.
func cookieHost(req *http.Request) string {
	if req.Host != "" {
		if h, _, err := net.SplitHostPort(req.Host); err == nil {
			return h
		}
		return strings.Trim(req.Host, "[]")
	}
	return req.URL.Hostname()
}

// secureContext reports whether cookies marked Secure may be set and sent
// on a request to host over scheme: HTTPS, or the local host, as curl
// 7.88 decides.
func secureContext(scheme, host string) bool {
	return strings.EqualFold(scheme, "https") || strings.EqualFold(host, "localhost") || host == "127.0.0.1" || host == "::1"
}

// isIP reports whether host is an IPv4 or IPv6 address.
func isIP(host string) bool { return net.ParseIP(host) != nil }

// tailMatch reports whether host is domain or one of its subdomains,
// ignoring case.
func tailMatch(domain, host string) bool {
	if len(host) < len(domain) || !strings.EqualFold(host[len(host)-len(domain):], domain) {
		return false
	}
	return len(host) == len(domain) || host[len(host)-len(domain)-1] == '.'
}

// pathMatch reports whether the request's path (its query cut off)
// matches a cookie's path p (as matchPath gives it), as curl matches
// them: p is "/" or "", or the path is p or starts with p and '/'.
func pathMatch(p, path string) bool {
	if len(p) <= 1 {
		return true
	}
	path, _, _ = strings.Cut(path, "?")
	if !strings.HasPrefix(path, "/") {
		path = "/"
	}
	return strings.HasPrefix(path, p) && (len(path) == len(p) || path[len(p)] == '/')
}

// matching returns the cookies to send to host for path, in the order
// curl sends them: longer paths (as given) first, then longer domains,
// then longer names, then the newest.
func (j *cookieJar) matching(host, path string, secure bool, now time.Time) []cookie {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.removeExpired(now)
	ip := isIP(host)
	var out []cookie
	for _, c := range j.cookies {
		if c.secure && !secure {
			continue
		}
		var domainOK bool
		if c.tailmatch && !ip {
			domainOK = tailMatch(c.domain, host)
		} else {
			domainOK = strings.EqualFold(host, c.domain)
		}
		if !domainOK || !pathMatch(c.matchPath(), path) {
			continue
		}
		out = append(out, *c)
		if len(out) >= cookieMaxSend {
			break
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		x, y := &out[a], &out[b]
		if len(x.path) != len(y.path) {
			return len(x.path) > len(y.path)
		}
		if len(x.domain) != len(y.domain) {
			return len(x.domain) > len(y.domain)
		}
		if len(x.name) != len(y.name) {
			return len(x.name) > len(y.name)
		}
		return x.created > y.created
	})
	return out
}

// write writes the jar as curl 7.88 writes its -c file: three comment
// lines and an empty one, then one line per cookie that has not expired,
// newest first.
func (j *cookieJar) write(w io.Writer, now time.Time) error {
	j.mu.Lock()
	j.removeExpired(now)
	all := make([]*cookie, len(j.cookies))
	copy(all, j.cookies)
	j.mu.Unlock()
	sort.Slice(all, func(a, b int) bool { return all[a].created > all[b].created })
	bw := bufio.NewWriter(w)
	bw.WriteString("# Netscape HTTP Cookie File\n# https://curl.se/docs/http-cookies.html\n# This file was generated by libcurl! Edit at your own risk.\n\n")
	for _, c := range all {
		bw.WriteString(c.netscapeLine())
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
