package proxy

import "bytes"

// frontRequest is a request head that the front end serves itself,
// parsed by parseFrontRequest: its slices point into the head's bytes.
type frontRequest struct {
	head   bool   // HEAD; else GET
	path   []byte // the request target's path: '/' then pchars, no dot segment
	query  []byte // after '?', not empty; nil when the target has none
	host   []byte // the Host field's value
	close  bool   // Connection: close
	fields []frontField
	xff    []int // indices in fields of the X-Forwarded-For fields
}

// frontField is a header field as it came: its name, and its value
// without the whitespace around it.
type frontField struct {
	name, value []byte
	send        bool // sent on to the upstream as it is
}

// parseFrontRequest parses head, a request's head to its empty line
// (CRLF CRLF) included, into r, and reports whether the front end serves
// it. It serves, and parses, only the plainest requests: an HTTP/1.1 GET
// or HEAD, of a target in origin form whose path is made of RFC 3986
// pchars and slashes without a dot segment or percent-encoding (so that
// the path routed on is the path the upstream gets, with no decoding in
// between) and whose query, if any, is not empty; every line ended by
// CRLF; field names that are tokens, values without control characters
// but tab; one valid Host; and none of the fields that ask more of a proxy
// than passing the request on: a body (Content-Length,
// Transfer-Encoding), an Upgrade or Expect, TE or Trailer, a Via (the loop
// count), Attempt-Count (a client that retries) or an Idempotency-Key; a
// Connection field may say close or keep-alive only. Anything else goes to
// net/http's server, which applies its rules and the proxy's (it answers
// what is malformed with 400).
func parseFrontRequest(head []byte, r *frontRequest) bool {
	*r = frontRequest{fields: r.fields[:0], xff: r.xff[:0]}
	end := bytes.Index(head, crlf)
	if end < 0 {
		return false
	}
	line := head[:end]
	switch {
	case bytes.HasPrefix(line, []byte("GET ")):
		line = line[4:]
	case bytes.HasPrefix(line, []byte("HEAD ")):
		r.head = true
		line = line[5:]
	default:
		return false
	}
	target, ok := bytes.CutSuffix(line, []byte(" HTTP/1.1"))
	if !ok || !parseTarget(target, r) {
		return false
	}
	rest := head[end+2:]
	hosts := 0
	for {
		end := bytes.Index(rest, crlf)
		if end < 0 {
			return false
		}
		line := rest[:end]
		rest = rest[end+2:]
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) {
			return false // obs-fold (a leading space) too
		}
		f := frontField{name: line[:colon], value: trimOWS(line[colon+1:]), send: true}
		if !validFieldValue(f.value) {
			return false
		}
		switch fieldKind(f.name) {
		case kindRefused:
			return false
		case kindHost:
			hosts++
			if hosts > 1 || !validHostValue(f.value) {
				return false
			}
			r.host, f.send = f.value, false
		case kindConnection:
			for rest := f.value; len(rest) > 0; {
				var tok []byte
				tok, rest = nextToken(rest)
				switch {
				case len(tok) == 0, bytes.EqualFold(tok, []byte("keep-alive")):
				case bytes.EqualFold(tok, []byte("close")):
					r.close = true
				default:
					return false
				}
			}
			f.send = false
		case kindXFF:
			r.xff = append(r.xff, len(r.fields))
			f.send = false
		case kindDropped:
			f.send = false
		}
		r.fields = append(r.fields, f)
	}
	return hosts == 1 && len(rest) == 0
}

var crlf = []byte("\r\n")

// nextToken splits the first comma-separated element off a field value
// (a list, RFC 9110 §5.6.1): tok without the whitespace around it, and
// the rest. It allocates nothing, where bytes.Split would allocate the
// list of every value of the kind that nginx sends on every answer
// (Connection: keep-alive).
func nextToken(v []byte) (tok, rest []byte) {
	tok, rest, _ = bytes.Cut(v, []byte(","))
	return trimOWS(tok), rest
}

// parseTarget reads a request target in origin form into r's path and
// query; false if the front end does not take it (see parseFrontRequest).
func parseTarget(t []byte, r *frontRequest) bool {
	if len(t) == 0 || t[0] != '/' {
		return false
	}
	path, query, hasQuery := bytes.Cut(t, []byte("?"))
	for i := 0; i < len(path); i++ {
		if !pathByte[path[i]] {
			return false
		}
	}
	for seg := range bytes.SplitSeq(path[1:], []byte("/")) {
		if len(seg) > 0 && len(seg) <= 2 && (seg[0] == '.' && (len(seg) == 1 || seg[1] == '.')) {
			return false
		}
	}
	if hasQuery {
		if len(query) == 0 {
			return false
		}
		for i := 0; i < len(query); i++ {
			c := query[i]
			switch {
			case c == '%':
				if i+2 >= len(query) || !isHex(query[i+1]) || !isHex(query[i+2]) {
					return false
				}
			case !pathByte[c] && c != '?':
				return false
			}
		}
		r.query = query
	}
	r.path = path
	return true
}

// pathByte holds the bytes a path may have on the front end: RFC 3986's
// unreserved and sub-delims, ':', '@' and '/' (no '%').
var pathByte = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "-._~!$&'()*+,;=:@/" {
		t[c] = true
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// tokenByte holds the bytes of an RFC 9110 token.
var tokenByte = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tokenByte[c] {
			return false
		}
	}
	return true
}

// validFieldValue reports whether v has no control character but tab
// (RFC 9110 §5.5; obs-text, bytes from 0x80, is let through as net/http
// lets it).
func validFieldValue(v []byte) bool {
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// validHostValue reports whether h is a host the front end routes on: a
// name or an address, with a port or not, of letters, digits and
// "-._:[]".
func validHostValue(h []byte) bool {
	if len(h) == 0 {
		return false
	}
	for _, c := range h {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || bytes.IndexByte([]byte("-._:[]"), c) >= 0) {
			return false
		}
	}
	return true
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// What a request field is to the front end.
const (
	kindPlain      = iota // sent on as it is
	kindRefused           // the front end does not serve the request
	kindHost              // the Host
	kindConnection        // Connection: read, not sent on
	kindXFF               // X-Forwarded-For: the chain the proxy extends
	kindDropped           // hop-by-hop, or one the proxy writes itself
)

// fieldKind says what a request field named name is to the front end.
func fieldKind(name []byte) int {
	switch len(name) {
	case 2:
		if bytes.EqualFold(name, []byte("TE")) {
			return kindRefused
		}
	case 3:
		if bytes.EqualFold(name, []byte("Via")) {
			return kindRefused
		}
	case 4:
		if bytes.EqualFold(name, []byte("Host")) {
			return kindHost
		}
	case 6:
		if bytes.EqualFold(name, []byte("Expect")) {
			return kindRefused
		}
	case 7:
		if bytes.EqualFold(name, []byte("Upgrade")) || bytes.EqualFold(name, []byte("Trailer")) {
			return kindRefused
		}
	case 9:
		if bytes.EqualFold(name, []byte("Forwarded")) {
			return kindDropped
		}
	case 10:
		if bytes.EqualFold(name, []byte("Connection")) {
			return kindConnection
		}
		if bytes.EqualFold(name, []byte("Keep-Alive")) {
			return kindDropped
		}
	case 13:
		if bytes.EqualFold(name, []byte("Attempt-Count")) {
			return kindRefused
		}
	case 14:
		if bytes.EqualFold(name, []byte("Content-Length")) {
			return kindRefused
		}
	case 15:
		if bytes.EqualFold(name, []byte("Idempotency-Key")) {
			return kindRefused
		}
		if bytes.EqualFold(name, []byte("X-Forwarded-For")) {
			return kindXFF
		}
	case 16:
		if bytes.EqualFold(name, []byte("Proxy-Connection")) || bytes.EqualFold(name, []byte("X-Forwarded-Host")) {
			return kindDropped
		}
	case 17:
		if bytes.EqualFold(name, []byte("Transfer-Encoding")) || bytes.EqualFold(name, []byte("X-Idempotency-Key")) {
			return kindRefused
		}
		if bytes.EqualFold(name, []byte("X-Forwarded-Proto")) {
			return kindDropped
		}
	case 18:
		if bytes.EqualFold(name, []byte("Proxy-Authenticate")) {
			return kindDropped
		}
	case 19:
		if bytes.EqualFold(name, []byte("Proxy-Authorization")) {
			return kindDropped
		}
	}
	return kindPlain
}
