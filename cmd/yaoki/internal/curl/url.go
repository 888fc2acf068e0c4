package curl

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// target is the URL yaoki http was given. A '%' that starts no escape
// ("/a%zz", "/100%") is sent as written, as curl sends it, though net/url
// cannot hold it: url reads each such '%' as "%25", and with written, path
// and fragment keep those parts as written, for the wire (writtenPath)
// and for what yaoki http shows (-w %{url_effective}, -v).
type target struct {
	url      *url.URL
	written  bool   // the path or the fragment holds a '%' that starts no escape
	path     string // with written: the request target's path, as curl sends it (curlPath)
	shown    string // with written: the path as written, as curl shows it (%{url_effective})
	fragment string // with written: the fragment as written

	mu   sync.Mutex
	hops map[*http.Response]hop // the redirects whose Location holds a '%' that starts no escape
}

// badEscape reports whether s holds a '%' that is not followed by two
// hexadecimal digits.
func badEscape(s string) bool { return escapeBadPercents(s) != s }

// escapeBadPercents writes each '%' of s that starts no escape as "%25".
func escapeBadPercents(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && (i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2])) {
			b.WriteString("%25")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// splitWritten splits s, a URL or a reference as written, into what
// comes before its query and its fragment, and returns it with each '%'
// that starts no escape outside the query written as "%25" (net/url leaves
// the query as written), for net/url to parse.
func splitWritten(s string) (escaped, beforeQuery, fragment string, hasFragment bool) {
	beforeQuery, fragment, hasFragment = strings.Cut(s, "#")
	beforeQuery, query, hasQuery := strings.Cut(beforeQuery, "?")
	escaped = escapeBadPercents(beforeQuery)
	if hasQuery {
		escaped += "?" + query
	}
	if hasFragment {
		escaped += "#" + escapeBadPercents(fragment)
	}
	return escaped, beforeQuery, fragment, hasFragment
}

// parseWritten parses s (a URL with its scheme) as curl reads it: a '%'
// that starts no escape outside the query (net/url leaves the query as
// written) reads as "%25"; the path's "." and ".." segments are removed
// (not with asIs: curl's --path-as-is). The path is sent as curl sends
// it (curlPath), as written, when net/url would send it otherwise.
func parseWritten(s string, asIs bool) (*target, error) {
	t, rest, fragment, _ := splitWritten(s)
	u, err := url.Parse(t)
	if err != nil {
		return nil, err
	}
	tg := &target{url: u}
	path := ""
	if _, afterScheme, ok := strings.Cut(rest, "://"); ok {
		if i := strings.IndexByte(afterScheme, '/'); i >= 0 {
			path = afterScheme[i:]
		}
	}
	if !asIs {
		path = removeDotSegments(path)
		if ep := removeDotSegments(u.EscapedPath()); ep != u.EscapedPath() {
			if p, err := url.PathUnescape(ep); err == nil {
				u.Path, u.RawPath = p, ep
			}
		}
	}
	send := curlPath(path)
	if send != u.EscapedPath() || badEscape(fragment) {
		tg.written, tg.path, tg.shown, tg.fragment = true, u.EscapedPath(), u.EscapedPath(), fragment
		// A path starting with "//" cannot be sent from url.Opaque (it
		// would be taken for an authority): it is sent as net/url writes
		// it.
		if send != "" && !strings.HasPrefix(send, "//") {
			tg.path, tg.shown = send, path
		}
		if tg.path == "" {
			tg.path, tg.shown = "/", "/"
		}
	}
	return tg, nil
}

// curlPath is the path p (as written) as curl sends it: each byte from
// 0x80 percent-escaped with lower-case hexadecimal digits, the rest as it
// is (where net/url escapes '"', '<', '|' and others, and writes upper
// case).
func curlPath(p string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if c := p[i]; c >= 0x80 {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// is reports whether u is the URL given (not a redirect's).
func (t *target) is(u *url.URL) bool {
	return t.written && u.String() == t.url.String()
}

// text is u as yaoki http shows it: the parts of the URL given as
// written, credentials hidden if redact.
func (t *target) text(u *url.URL, redact bool) string {
	if !t.is(u) {
		return t.show(u, "", "", redact)
	}
	return t.show(u, t.shown, t.fragment, redact)
}

// textOf is the URL of req (the URL given, or a redirect's) as yaoki http
// shows it: the parts that were written with a '%' that starts no escape
// as written.
func (t *target) textOf(req *http.Request, redact bool) string {
	if req.Response == nil {
		return t.text(req.URL, redact)
	}
	if h, ok := t.hop(req.Response); ok {
		return t.show(req.URL, h.shown, h.fragment, redact)
	}
	return t.show(req.URL, "", "", redact)
}

// referer is the Referer that -e ';auto' sends after leaving req: its URL
// (as written, for the URL given and for a Location that held a '%' that
// starts no escape) without credentials and fragment, as curl sends it.
func (t *target) referer(req *http.Request) string {
	path, ok := t.pathFor(req)
	if !ok {
		path = ""
	}
	u := *req.URL
	u.User, u.Fragment, u.RawFragment = nil, "", ""
	return t.show(&u, path, "", false)
}

// show is u, with path (if not "") in place of its path and fragment (if
// not "") in place of its fragment, as written.
func (t *target) show(u *url.URL, path, fragment string, redact bool) string {
	if path == "" && fragment == "" {
		if redact {
			return u.Redacted()
		}
		return u.String()
	}
	head := *u
	head.Path, head.RawPath, head.RawQuery, head.ForceQuery, head.Fragment, head.RawFragment = "", "", "", false, "", ""
	s := head.String()
	if redact {
		s = head.Redacted()
	}
	if path == "" {
		path = u.EscapedPath()
	}
	s += path
	if u.RawQuery != "" || u.ForceQuery {
		s += "?" + u.RawQuery
	}
	if u.Fragment != "" {
		if fragment == "" {
			fragment = u.EscapedFragment()
		}
		s += "#" + fragment
	}
	return s
}

// hop is a redirect whose Location holds a '%' that starts no escape,
// which net/url cannot parse: it is followed as curl follows it, to the
// path as written.
type hop struct {
	location []string // the Location header as the server sent it
	url      *url.URL // where it points, each such '%' read as "%25"
	path     string   // the next request's path, as curl sends it (curlPath)
	shown    string   // that path as curl shows it (the same, for a Location)
	fragment string   // the Location's fragment, as written
}

func (t *target) hop(resp *http.Response) (hop, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.hops[resp]
	return h, ok
}

// pathFor returns the path to send for req as written, if it is the URL
// given or a redirect's whose Location held a '%' that starts no escape.
func (t *target) pathFor(req *http.Request) (string, bool) {
	if req.Response == nil {
		return t.path, t.is(req.URL)
	}
	h, ok := t.hop(req.Response)
	return h.path, ok && h.path != ""
}

// redirected makes resp's Location readable by net/http when it holds a
// '%' that starts no escape outside its query: each such '%' becomes
// "%25", and the path as written is kept for the request that follows
// it (pathFor) and for what yaoki http shows. restore puts the Location
// back as the server sent it.
func (t *target) redirected(resp *http.Response) {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return
	}
	escaped, ref, fragment, hasFragment := splitWritten(loc)
	u, err := resp.Request.URL.Parse(escaped)
	if err != nil {
		return // net/http says why it cannot follow it
	}
	base, ok := t.pathFor(resp.Request)
	if !ok {
		base = resp.Request.URL.EscapedPath()
	}
	h := hop{location: resp.Header.Values("Location"), url: u}
	if shown := removeDotSegments(refPath(base, ref)); curlPath(shown) != u.EscapedPath() {
		h.path, h.shown = curlPath(shown), curlPath(shown) // curl shows a Location's non-ASCII bytes escaped
		if strings.HasPrefix(shown, "//") || !strings.HasPrefix(shown, "/") {
			h.path, h.shown = "", "" // cannot be sent as a request target: sent as net/url writes it
		}
	}
	if hasFragment && badEscape(fragment) {
		h.fragment = fragment
	}
	if h.path == "" && h.fragment == "" && escaped == loc {
		return // net/url sends and shows it as curl does
	}
	t.mu.Lock()
	if t.hops == nil {
		t.hops = map[*http.Response]hop{}
	}
	t.hops[resp] = h
	t.mu.Unlock()
	resp.Header.Set("Location", escaped)
}

// restore puts back, in resp and the redirects that led to it, the
// Location headers that redirected changed.
func (t *target) restore(resp *http.Response) {
	for r := resp; r != nil; r = r.Request.Response {
		if h, ok := t.hop(r); ok {
			r.Header["Location"] = h.location
		}
		if r.Request == nil {
			break
		}
	}
}

// location is where the redirect resp points, as yaoki http shows it
// (-w %{redirect_url}), or "".
func (t *target) location(resp *http.Response) string {
	if h, ok := t.hop(resp); ok {
		return t.show(h.url, h.shown, h.fragment, false)
	}
	if loc, err := resp.Location(); err == nil {
		return loc.String()
	}
	return ""
}

// refPath is the path that the reference ref (without query and fragment)
// leads to from a request whose path is base, both as written (RFC 3986
// §5.2.2, without removing dot segments).
func refPath(base, ref string) string {
	if i := strings.Index(ref, "://"); i >= 0 && !strings.ContainsAny(ref[:i], "/") {
		ref = "//" + ref[i+3:]
	}
	if rest, ok := strings.CutPrefix(ref, "//"); ok { // an authority, then the path
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			return rest[i:]
		}
		return "/"
	}
	switch {
	case ref == "":
		return base
	case strings.HasPrefix(ref, "/"):
		return ref
	}
	return base[:strings.LastIndexByte(base, '/')+1] + ref
}

// removeDotSegments removes the "." and ".." segments of an absolute path
// (RFC 3986 §5.2.4), as curl and net/url do when they follow a redirect.
func removeDotSegments(p string) string {
	if !strings.Contains(p, ".") {
		return p
	}
	segs := strings.Split(p, "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 1 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return strings.Join(out, "/")
}

// writtenPath sends the request to the URL given, and to a redirect's
// Location, with its path as written (see target), and makes the
// Locations that net/url cannot read readable (target.redirected).
type writtenPath struct {
	base http.RoundTripper
	t    *target
}

func (w writtenPath) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req
	if p, ok := w.t.pathFor(req); ok {
		out = req.WithContext(req.Context()) // a shallow copy, whose URL is replaced
		u := *req.URL
		u.Opaque = p // sent as the request target, with u.RawQuery
		out.URL = &u
	}
	resp, err := w.base.RoundTrip(out)
	if resp != nil {
		resp.Request = req
		w.t.redirected(resp)
	}
	return resp, err
}

func (w writtenPath) CloseIdleConnections() {
	if ci, ok := w.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// lowerEscapes writes the hex digits of s's %XX escapes in lower case, as
// curl 7.88 writes the data -G appends to the query ("a%3Db" is sent as
// "a%3db"); a % that starts no escape is left as it is.
func lowerEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' && isHex(b[i+1]) && isHex(b[i+2]) {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}
