package main

import (
	"net/http"
	"net/url"
	"strings"
)

// target is the URL yaoki http was given. A '%' that starts no escape
// ("/a%zz", "/100%") is sent as written, as curl sends it, though net/url
// cannot hold it: url reads each such '%' as "%25", and with written, path
// and fragment keep those parts as written, for the wire (writtenPath)
// and for what yaoki http shows (-w %{url_effective}, -v).
type target struct {
	url      *url.URL
	written  bool   // the path or the fragment holds a '%' that starts no escape
	path     string // with written: the request target's path
	fragment string // with written: the fragment as written
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

// parseWritten parses s (a URL with its scheme) as curl reads it: a '%'
// that starts no escape outside the query (net/url leaves the query as
// written) reads as "%25", and a path that holds one is kept as written.
func parseWritten(s string) (*target, error) {
	rest, fragment, hasFragment := strings.Cut(s, "#")
	rest, query, hasQuery := strings.Cut(rest, "?")
	if !badEscape(rest) && !badEscape(fragment) {
		u, err := url.Parse(s)
		if err != nil {
			return nil, err
		}
		return &target{url: u}, nil
	}
	t := escapeBadPercents(rest)
	if hasQuery {
		t += "?" + query
	}
	if hasFragment {
		t += "#" + escapeBadPercents(fragment)
	}
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
	if badEscape(path) || badEscape(fragment) {
		tg.written, tg.path, tg.fragment = true, u.EscapedPath(), fragment
		// A path starting with "//" cannot be sent from url.Opaque (it
		// would be taken for an authority): it is sent as net/url writes
		// it.
		if badEscape(path) && !strings.HasPrefix(path, "//") {
			tg.path = path
		}
		if tg.path == "" {
			tg.path = "/"
		}
	}
	return tg, nil
}

// is reports whether u is the URL given (not a redirect's).
func (t *target) is(u *url.URL) bool {
	return t.written && u.String() == t.url.String()
}

// text is u as yaoki http shows it: the parts of the URL given as
// written, credentials hidden if redact.
func (t *target) text(u *url.URL, redact bool) string { return t.show(u, t.is(u), redact) }

// referer is the Referer that -e ';auto' sends after leaving req: its URL
// (as written, for the URL given) without credentials and fragment, as
// curl sends it.
func (t *target) referer(req *http.Request) string {
	written := req.Response == nil && t.is(req.URL)
	u := *req.URL
	u.User, u.Fragment, u.RawFragment = nil, "", ""
	return t.show(&u, written, false)
}

// show is u, with the parts of the URL given as written if written.
func (t *target) show(u *url.URL, written, redact bool) string {
	if !written {
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
	s += t.path
	if u.RawQuery != "" || u.ForceQuery {
		s += "?" + u.RawQuery
	}
	if u.Fragment != "" {
		s += "#" + t.fragment
	}
	return s
}

// writtenPath sends the request to the URL given with its path as written
// (see target); redirects go on unchanged.
type writtenPath struct {
	base http.RoundTripper
	t    *target
}

func (w writtenPath) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Response != nil || !w.t.is(req.URL) { // a redirect's
		return w.base.RoundTrip(req)
	}
	out := req.WithContext(req.Context()) // a shallow copy, whose URL is replaced
	u := *req.URL
	u.Opaque = w.t.path // sent as the request target, with u.RawQuery
	out.URL = &u
	resp, err := w.base.RoundTrip(out)
	if resp != nil {
		resp.Request = req
	}
	return resp, err
}

func (w writtenPath) CloseIdleConnections() {
	if ci, ok := w.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
