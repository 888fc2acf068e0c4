package curl

import (
	"math"
	"strings"
	"time"
)

// cookieDate reads an Expires value as curl 7.88 keeps it: Unix seconds
// (curlDate); 1 for the epoch itself or the second before (expired), 0
// (a session cookie) for an earlier date or one that cannot be read.
func cookieDate(s string) int64 {
	t, ok := curlDate(s)
	switch {
	case !ok || t < -1:
		return 0
	case t <= 0:
		return 1
	}
	return t
}

// badCookieOctet reports whether s holds a control character other than
// a tab, which curl refuses in a cookie's name and value.
func badCookieOctet(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r != '\t' && (r < 0x20 || r == 0x7f) }) >= 0
}

// parseSetCookie reads a Set-Cookie header's value from an answer to a
// request for host and path (as sent, its query cut off), as curl 7.88
// reads it. secure says whether the request was made in a secure context
// (secureContext): a Secure cookie set outside one is refused. It returns
// false for a header curl drops.
func parseSetCookie(v, host, path string, secure bool, now time.Time) (cookie, bool) {
	if len(v) > cookieMaxLine {
		return cookie{}, false
	}
	c := cookie{live: true}
	first, gotDomain, gotPath, ip := true, false, false, isIP(host)
	rest := v
	for {
		rest = strings.TrimLeft(rest, " \t")
		nlen := strings.IndexAny(rest, ";\t\r\n=")
		if nlen < 0 {
			nlen = len(rest)
		}
		if nlen > 0 {
			name := strings.TrimRight(rest[:nlen], " \t")
			rest = rest[nlen:]
			var value string
			sep := strings.HasPrefix(rest, "=")
			if sep {
				rest = rest[1:]
				vlen := strings.IndexAny(rest, ";\r\n")
				if vlen < 0 {
					vlen = len(rest)
				}
				value = strings.Trim(rest[:vlen], " \t")
				rest = rest[vlen:]
				if strings.Contains(value, "\t") {
					return cookie{}, false
				}
			}
			if len(name) >= cookieMaxName-1 || len(value) >= cookieMaxName-1 || len(name)+len(value) > cookieMaxName {
				return cookie{}, false
			}
			// As curl: any pair's name can carry the prefix.
			if p := namePrefix(name); p != "" {
				c.prefix = p
			}
			done := false
			switch {
			case first:
				if !sep || badCookieOctet(name) || badCookieOctet(value) {
					return cookie{}, false
				}
				c.name, c.value, first, done = name, value, false, true
			case value == "":
				done = true
				switch {
				case strings.EqualFold(name, "secure"):
					if !secure {
						return cookie{}, false
					}
					c.secure = true
				case strings.EqualFold(name, "httponly"):
					c.httpOnly = true
				case sep:
					done = false // "name=": an attribute without value
				}
			}
			switch {
			case done:
			case strings.EqualFold(name, "path"):
				c.path, gotPath = value, true
			case strings.EqualFold(name, "domain") && value != "":
				d := strings.TrimPrefix(value, ".")
				if ip && d != host || !ip && !tailMatch(d, host) {
					return cookie{}, false
				}
				c.domain, c.tailmatch, gotDomain = d, !ip, true
			case strings.EqualFold(name, "max-age"):
				n, ok, overflow := leadingInt(strings.TrimPrefix(value, `"`))
				switch {
				case overflow:
					c.expires = math.MaxInt64
				case !ok || n == 0:
					c.expires = 1
				case n > math.MaxInt64-now.Unix():
					c.expires = math.MaxInt64
				default:
					c.expires = now.Unix() + n
				}
			case strings.EqualFold(name, "expires"):
				if c.expires == 0 && len(value) < 128 {
					c.expires = cookieDate(value)
				}
			}
		}
		rest = strings.TrimLeft(rest, " \t")
		if !strings.HasPrefix(rest, ";") {
			break
		}
		rest = rest[1:]
	}
	if first {
		return cookie{}, false
	}
	if !gotDomain {
		c.domain = host
	}
	if !gotPath {
		c.path = defaultCookiePath(path)
	}
	// In place of curl's public suffix list: a domain of one label that
	// is not the host itself is a public suffix ("com", "test").
	if !ip && gotDomain && !strings.EqualFold(c.domain, host) && !strings.Contains(c.domain, ".") {
		return cookie{}, false
	}
	if !prefixAllowed(&c) {
		return cookie{}, false
	}
	return c, true
}

// defaultCookiePath is the path of a cookie set without Path by an answer
// to path, as curl keeps it: path up to and including its last '/'
// (before any query).
func defaultCookiePath(path string) string {
	path, _, _ = strings.Cut(path, "?")
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i+1]
	}
	return "/"
}
