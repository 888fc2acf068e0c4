package httpletter

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/internal/credential"
)

// credentialHeader reports whether the header name (canonical) is one of
// the listed credentials.
func credentialHeader(name string) bool {
	switch name {
	case "Authorization", "Proxy-Authorization", "Cookie",
		"Api-Key", "X-Api-Key", "X-Auth-Token", "X-Access-Token", "X-Amz-Security-Token":
		return true
	}
	return false
}

// kept reports whether Encode keeps the header name (canonical), as far as
// the package decides: not the listed credentials, nor the attempt count,
// nor the request's framing (framing).
func kept(name string) bool {
	return name != header.AttemptCount && !framing(name) && !credentialHeader(name)
}

// framing reports whether the header name (canonical) is one that net/http
// writes itself from the request (Host, Content-Length, Transfer-Encoding,
// Trailer) or a hop-by-hop header, which concerns one connection and asks
// a proxy to upgrade it or to drop other headers. A letter holds none of
// them: net/http writes a header map's names as they are, so a letter's
// "transfer-encoding" beside net/http's own Content-Length would frame the
// body two ways, and a proxy in front could split it into two requests.
func framing(name string) bool {
	switch name {
	case "Host", "Content-Length", "Transfer-Encoding", "Trailer",
		"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Upgrade":
		return true
	}
	return false
}

// dropHeader reports whether the header name (canonical) is one of e's own
// credentials.
func (e Encoder) dropHeader(name string) bool {
	return slices.ContainsFunc(e.DropHeaders, func(d string) bool { return strings.EqualFold(d, name) })
}

// dropQuery reports whether Encode leaves the query parameter name out.
func (e Encoder) dropQuery(name string) bool {
	return credential.Query(name) || slices.ContainsFunc(e.DropQuery, func(d string) bool { return strings.EqualFold(d, name) })
}

// cleanURL returns u without its userinfo, its credential query
// parameters and its fragment (never sent; OAuth's implicit flow puts an
// access token there). The other parameters keep their order and their
// encoding.
func (e Encoder) cleanURL(u *url.URL) url.URL {
	c := *u
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	if c.RawQuery == "" {
		return c
	}
	kept := make([]string, 0, strings.Count(c.RawQuery, "&")+1)
	for part := range strings.SplitSeq(c.RawQuery, "&") {
		if !e.dropQuery(credential.QueryName(part)) {
			kept = append(kept, part)
		}
	}
	c.RawQuery = strings.Join(kept, "&")
	return c
}

// redacted replaces a credential in a message.
const redacted = credential.Hidden

// minSecret is the length from which a credential's value is looked for
// in a message: a shorter one would match ordinary words. (The URL, where
// short userinfo appears, is replaced whole.)
const minSecret = 6

// redact returns msg, an error's message about req, without req's
// credentials: every way net/http and httpretry write req's URL (in full,
// with its password redacted, with "***" for it) is replaced by the URL as
// the letter keeps it, and then every remaining credential value of at
// least minSecret bytes (the user name and password, the values of the
// dropped header and trailer fields and query parameters, and their
// words) by "xxxxx".
func (e Encoder) redact(req *http.Request, msg string) string {
	u := req.URL
	c := e.cleanURL(u)
	clean := c.String()
	forms := []string{u.String(), u.Redacted()}
	if _, ok := u.User.Password(); ok {
		// As http.Client writes it in a *url.Error.
		forms = append(forms, strings.Replace(u.String(), u.User.String()+"@", u.User.Username()+":***@", 1))
	}
	for _, f := range forms {
		if f != clean {
			msg = strings.ReplaceAll(msg, f, clean)
		}
	}
	var secrets []string
	add := func(v string) {
		secrets = append(secrets, v)
		secrets = append(secrets, strings.FieldsFunc(v, func(r rune) bool {
			return r == ' ' || r == '\t' || r == ',' || r == ';' || r == '='
		})...)
	}
	if u.User != nil {
		add(u.User.Username())
		if p, ok := u.User.Password(); ok {
			add(p)
		}
	}
	for _, h := range []http.Header{req.Header, req.Trailer} {
		for name, vs := range h {
			if c := http.CanonicalHeaderKey(name); credentialHeader(c) || e.dropHeader(c) {
				for _, v := range vs {
					add(v)
				}
			}
		}
	}
	for part := range strings.SplitSeq(u.RawQuery, "&") {
		if _, v, _ := strings.Cut(part, "="); e.dropQuery(credential.QueryName(part)) {
			add(v)
			if d, err := url.QueryUnescape(v); err == nil {
				add(d)
			}
		}
	}
	// Longest first, so that a value is replaced before its words.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		if len(s) >= minSecret {
			msg = strings.ReplaceAll(msg, s, redacted)
		}
	}
	return e.scrub(msg)
}

// urlEnd are the bytes that end a URL's part quoted in a message.
const urlEnd = "\"' \t\r\n<>"

// scrub returns msg with the userinfo of every URL it quotes left out and
// the values of the query parameters e drops replaced by "xxxxx": URLs
// other than the request's (a redirect's Location, such as an object
// store's presigned URL) hold credentials that the request did not.
func (e Encoder) scrub(msg string) string {
	var b strings.Builder
	for {
		i := strings.Index(msg, "://")
		if i < 0 {
			break
		}
		b.WriteString(msg[:i+3])
		msg = msg[i+3:]
		host := strings.IndexAny(msg, "/?#"+urlEnd)
		if host < 0 {
			host = len(msg)
		}
		if at := strings.LastIndexByte(msg[:host], '@'); at >= 0 {
			msg = msg[at+1:]
		}
	}
	b.WriteString(msg)
	msg = b.String()
	b.Reset()
	for {
		i := strings.IndexAny(msg, "?&")
		if i < 0 {
			break
		}
		b.WriteString(msg[:i+1])
		msg = msg[i+1:]
		eq := strings.IndexAny(msg, "=?&#"+urlEnd)
		if eq < 0 || msg[eq] != '=' || !e.dropQuery(credential.QueryName(msg[:eq])) {
			continue
		}
		b.WriteString(msg[:eq+1])
		msg = msg[eq+1:]
		end := strings.IndexAny(msg, "&#"+urlEnd)
		if end < 0 {
			end = len(msg)
		}
		if end > 0 {
			b.WriteString(redacted)
		}
		msg = msg[end:]
	}
	b.WriteString(msg)
	return b.String()
}

// hide returns err, a redrive's error about req, with a message that holds
// none of req's credentials: those the package lists, and the query
// parameters that are in req's URL but not in query, the letter's query
// (prepare added them). It unwraps to err, so that errors.Is and As, and
// the retry marks (Permanent, After), see through.
func hide(req *http.Request, query string, err error) error {
	if err == nil {
		return nil
	}
	var e Encoder
	if req.URL.RawQuery != query {
		had := map[string]bool{}
		for part := range strings.SplitSeq(query, "&") {
			had[part] = true
		}
		for part := range strings.SplitSeq(req.URL.RawQuery, "&") {
			if !had[part] {
				e.DropQuery = append(e.DropQuery, credential.QueryName(part))
			}
		}
	}
	msg := err.Error()
	clean := e.redact(req, msg)
	if clean == msg {
		return err
	}
	return &hiddenError{msg: clean, err: err}
}

// hiddenError is err with a message without credentials.
type hiddenError struct {
	msg string
	err error
}

func (e *hiddenError) Error() string { return e.msg }
func (e *hiddenError) Unwrap() error { return e.err }
