package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/yaoki-go/yaoki/header"
)

// frontResponse is the head of an upstream's answer on the front end:
// its fields are spans of buf, which read fills.
type frontResponse struct {
	buf     []byte
	spans   []respSpan
	proto10 bool // HTTP/1.0
	code    int
	reason  [2]int // the reason phrase's span in buf

	length  int64 // Content-Length; -1: none
	chunked bool  // Transfer-Encoding: chunked
	body    int   // bodyNone, bodyLength, bodyChunked, bodyToClose
	close   bool  // the connection ends after this answer

	doNotRetry bool // Do-Not-Retry: true
	connNames  bool // a Connection field names fields (listedInConnection has work)
	hasDate    bool
	hasHint    bool // Retry-After or a RateLimit field: hint() has something to read
	rewrite    bool // Location, Content-Location or Link: clientLocation may change them
	trailer    bool // a Trailer field
}

// respSpan is a field of a frontResponse: its name and value in buf, and
// what it is to the front end (respFieldKind).
type respSpan struct {
	ns, ne, vs, ve int
	kind           uint8
}

// What an answer's field is to the front end.
const (
	rfPlain            uint8 = iota
	rfHop                    // hop-by-hop (RFC 9110 §7.6.1, and what httputil.ReverseProxy drops besides): not relayed
	rfTrailer                // Trailer: hop-by-hop, its names announced again (writeTrailerNames)
	rfConnection             // Connection: hop-by-hop, and may name more
	rfTransferEncoding       // hop-by-hop; frames the body
	rfContentLength          // frames the body
	rfDoNotRetry             // Do-Not-Retry
	rfDate                   // Date
	rfHint                   // Retry-After, RateLimit*
	rfLocation               // Location
	rfContentLocation        // Content-Location
	rfLink                   // Link
	rfContentType            // Content-Type: none on a 304
)

// respFieldKind says what an answer's field named name is to the front
// end.
func respFieldKind(name []byte) uint8 {
	eq := func(s string) bool { return bytes.EqualFold(name, []byte(s)) }
	switch len(name) {
	case 2:
		if eq("TE") {
			return rfHop
		}
	case 4:
		switch {
		case eq("Date"):
			return rfDate
		case eq("Link"):
			return rfLink
		}
	case 7:
		switch {
		case eq("Trailer"):
			return rfTrailer
		case eq("Upgrade"):
			return rfHop
		}
	case 8:
		if eq("Location") {
			return rfLocation
		}
	case 10:
		switch {
		case eq("Connection"):
			return rfConnection
		case eq("Keep-Alive"):
			return rfHop
		}
	case 11:
		if eq("Retry-After") {
			return rfHint
		}
	case 12:
		switch {
		case eq(header.DoNotRetry):
			return rfDoNotRetry
		case eq("Content-Type"):
			return rfContentType
		}
	case 14:
		if eq("Content-Length") {
			return rfContentLength
		}
	case 16:
		switch {
		case eq("Proxy-Connection"):
			return rfHop
		case eq("Content-Location"):
			return rfContentLocation
		}
	case 17:
		if eq("Transfer-Encoding") {
			return rfTransferEncoding
		}
	case 18:
		if eq("Proxy-Authenticate") {
			return rfHop
		}
	case 19:
		if eq("Proxy-Authorization") {
			return rfHop
		}
	}
	if len(name) >= 9 && bytes.EqualFold(name[:9], []byte("RateLimit")) {
		return rfHint
	}
	return rfPlain
}

// How an answer's body is delimited (RFC 9112 §6.3).
const (
	bodyNone    = iota // no body: a HEAD's answer, 1xx, 204, 304
	bodyLength         // Content-Length
	bodyChunked        // chunked
	bodyToClose        // read until the upstream closes the connection
)

// errMalformedAnswer is the cause of an answer the front end cannot read.
var errMalformedAnswer = errors.New("proxy: malformed answer from the upstream")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errMalformedAnswer}, args...)...)
}

func (r *frontResponse) name(s respSpan) []byte  { return r.buf[s.ns:s.ne] }
func (r *frontResponse) value(s respSpan) []byte { return r.buf[s.vs:s.ve] }

// readLine reads a line from br onto r.buf and returns its span, without
// its CRLF (or LF, as net/http reads answers). A head's lines are bounded
// by maxResponseHeaderBytes (countingReader).
func (r *frontResponse) readLine(br *bufio.Reader) (start, end int, err error) {
	return r.readLineMax(br, -1)
}

// maxChunkLine is the most bytes a line of a chunked body (a chunk's size
// line, the end of a chunk) may have, its LF included, and a trailer
// altogether: net/http's bounds (its reader's buffer), beyond which an
// upstream's line that never ends would be kept whole.
const maxChunkLine = 4 << 10

// errChunkLineTooLong is the error of a chunk line or a trailer longer
// than maxChunkLine.
var errChunkLineTooLong = malformed("a chunk line or trailer longer than %d bytes", maxChunkLine)

// readLineMax is readLine for a line of at most max bytes, its LF
// included (max < 0: no bound); a longer one is errChunkLineTooLong, once
// max+1 bytes of it are read.
func (r *frontResponse) readLineMax(br *bufio.Reader, max int) (start, end int, err error) {
	start = len(r.buf)
	for {
		part, err := br.ReadSlice('\n')
		r.buf = append(r.buf, part...)
		if max >= 0 && len(r.buf)-start > max {
			r.buf = r.buf[:start]
			return 0, 0, errChunkLineTooLong
		}
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			return 0, 0, err
		}
	}
	end = len(r.buf) - 1
	if end > start && r.buf[end-1] == '\r' {
		end--
	}
	return start, end, nil
}

// read reads an answer's head (a 1xx one, or the final one) from br; head
// says the request was a HEAD, whose answer has no body.
func (r *frontResponse) read(br *bufio.Reader, head bool) error {
	*r = frontResponse{buf: r.buf[:0], spans: r.spans[:0], length: -1}
	s, e, err := r.readLine(br)
	if err != nil {
		return err
	}
	line := r.buf[s:e]
	switch {
	case bytes.HasPrefix(line, []byte("HTTP/1.1 ")):
	case bytes.HasPrefix(line, []byte("HTTP/1.0 ")):
		r.proto10 = true
	default:
		return malformed("status line %q", line)
	}
	rest := line[9:]
	if len(rest) < 3 || (len(rest) > 3 && rest[3] != ' ') {
		return malformed("status line %q", line)
	}
	for _, c := range rest[:3] {
		if c < '0' || c > '9' {
			return malformed("status line %q", line)
		}
	}
	r.code = int(rest[0]-'0')*100 + int(rest[1]-'0')*10 + int(rest[2]-'0')
	if r.code < 100 {
		return malformed("status %d", r.code)
	}
	r.reason = [2]int{s + 9 + min(4, len(rest)), e}
	dropped := false // the last field was read and left out
	for {
		s, e, err := r.readLine(br)
		if err != nil {
			return err
		}
		if s == e {
			break
		}
		if c := r.buf[s]; c == ' ' || c == '\t' {
			// obs-fold (RFC 9112 §5.2): the line continues the field
			// before, joined with a space, as net/http reads it.
			if len(r.spans) == 0 && !dropped {
				return malformed("a continuation line before any field")
			}
			cont := trimOWS(r.buf[s:e])
			if !validFieldValue(cont) {
				return malformed("a field value with a control character")
			}
			if dropped {
				continue
			}
			last := &r.spans[len(r.spans)-1]
			v := append(r.buf[last.vs:last.ve:last.ve], ' ')
			at := len(r.buf)
			r.buf = append(r.buf, v...)
			r.buf = append(r.buf, cont...)
			last.vs, last.ve = at, len(r.buf)
			continue
		}
		colon := bytes.IndexByte(r.buf[s:e], ':')
		if colon <= 0 {
			return malformed("header line %q", r.buf[s:e])
		}
		name := r.buf[s : s+colon]
		dropped = !isToken(name)
		if dropped && !spaceInName(name) {
			return malformed("header line %q", r.buf[s:e])
		}
		v := trimOWS(r.buf[s+colon+1 : e])
		if !validFieldValue(v) {
			return malformed("a field value with a control character")
		}
		if dropped {
			// A name with a space ("X-A : 1"): net/http reads the field
			// (golang.org/issue/34540) and its server does not write it;
			// it does not frame the answer either.
			continue
		}
		vs := e - len(trimLeftOWS(r.buf[s+colon+1:e]))
		r.spans = append(r.spans, respSpan{ns: s, ne: s + colon, vs: vs, ve: vs + len(v), kind: respFieldKind(r.buf[s : s+colon])})
	}
	return r.classify(head)
}

// spaceInName reports whether name, not a token, is one made of token
// bytes and spaces: net/http's reader takes such a field (its
// canonicalMIMEHeaderKey), and refuses one with any other byte.
func spaceInName(name []byte) bool {
	space := false
	for _, c := range name {
		switch {
		case c == ' ':
			space = true
		case !tokenByte[c]:
			return false
		}
	}
	return space
}

func trimLeftOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// classify reads the fields that frame and route the answer.
func (r *frontResponse) classify(head bool) error {
	keepAlive, tesIn10 := false, false
	tes := 0
	var firstLength []byte
	for _, sp := range r.spans {
		v := r.value(sp)
		switch sp.kind {
		case rfContentLength:
			if firstLength != nil {
				// Repeated: as net/http, the same value spelled the same
				// way, or the answer is refused (RFC 9110 §8.6).
				if !bytes.Equal(v, firstLength) {
					return malformed("Content-Length %q and %q", firstLength, v)
				}
				continue
			}
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || n < 0 || v[0] == '+' {
				return malformed("Content-Length %q", v)
			}
			firstLength, r.length = v, n
		case rfTransferEncoding:
			if r.proto10 {
				// HTTP/1.0 has no transfer codings: net/http frames the
				// answer by its Content-Length or the close, as if the
				// field were not there. RFC 9112 §6.1 calls the framing
				// faulty, and the connection is not kept after it.
				tesIn10 = true
				continue
			}
			tes++
			if tes > 1 || !bytes.EqualFold(v, []byte("chunked")) {
				return malformed("Transfer-Encoding %q: only chunked is read", v)
			}
			r.chunked = true
		case rfConnection:
			for rest := v; len(rest) > 0; {
				var tok []byte
				tok, rest = nextToken(rest)
				switch {
				case len(tok) == 0:
				case bytes.EqualFold(tok, []byte("close")):
					r.close = true
				case bytes.EqualFold(tok, []byte("keep-alive")):
					keepAlive = true
				default:
					r.connNames = true
				}
			}
		case rfDoNotRetry:
			for rest := v; len(rest) > 0; {
				var tok []byte
				tok, rest = nextToken(rest)
				if bytes.EqualFold(tok, []byte("true")) {
					r.doNotRetry = true
				}
			}
		case rfDate:
			r.hasDate = true
		case rfHint:
			r.hasHint = true
		case rfLocation, rfContentLocation, rfLink:
			r.rewrite = true
		case rfTrailer:
			r.trailer = true
		}
	}
	if r.chunked && r.trailer {
		if err := r.checkTrailerNames(); err != nil {
			return err
		}
	}
	if r.proto10 && (!keepAlive || tesIn10) {
		r.close = true
	}
	switch {
	case r.code < 200, head, r.code == http.StatusNoContent, r.code == http.StatusNotModified:
		r.body = bodyNone
	case r.chunked:
		r.body = bodyChunked
	case r.length >= 0:
		r.body = bodyLength
	default:
		r.body = bodyToClose
		r.close = true
	}
	return nil
}

// checkTrailerNames refuses a chunked answer whose Trailer field
// announces a field that frames the message (Content-Length,
// Transfer-Encoding, Trailer), as net/http refuses it: a trailer may not
// change how the body was read (RFC 9110 §6.5.1).
func (r *frontResponse) checkTrailerNames() error {
	for _, sp := range r.spans {
		if sp.kind != rfTrailer {
			continue
		}
		for rest := r.value(sp); len(rest) > 0; {
			var n []byte
			n, rest = nextToken(rest)
			if bytes.EqualFold(n, []byte("Content-Length")) || bytes.EqualFold(n, []byte("Transfer-Encoding")) ||
				bytes.EqualFold(n, []byte("Trailer")) {
				return malformed("Trailer %q: a trailer may not hold %s", r.value(sp), n)
			}
		}
	}
	return nil
}

// status is the answer's status as net/http gives it ("503 Service
// Unavailable").
func (r *frontResponse) status() string {
	return strconv.Itoa(r.code) + " " + string(r.buf[r.reason[0]:r.reason[1]])
}

// header returns the answer's fields as an http.Header (for the rules
// written for one: hints, trailers).
func (r *frontResponse) header() http.Header {
	h := make(http.Header, len(r.spans))
	for _, sp := range r.spans {
		k := http.CanonicalHeaderKey(string(r.name(sp)))
		h[k] = append(h[k], string(r.value(sp)))
	}
	return h
}

// listedInConnection reports whether name is one of the fields the
// answer's Connection names (hop-by-hop: RFC 9110 §7.6.1).
func (r *frontResponse) listedInConnection(name []byte) bool {
	if !r.connNames {
		return false
	}
	for _, sp := range r.spans {
		if sp.kind != rfConnection {
			continue
		}
		for rest := r.value(sp); len(rest) > 0; {
			var tok []byte
			tok, rest = nextToken(rest)
			if bytes.EqualFold(tok, name) {
				return true
			}
		}
	}
	return false
}

// hopByHopName reports whether name is one of the hopByHop fields.
func hopByHopName(name []byte) bool {
	for _, h := range hopByHop {
		if len(h) == len(name) && bytes.EqualFold(name, []byte(h)) {
			return true
		}
	}
	return false
}

// statusLines holds the status line the front end writes for each
// status an answer may have (three digits, from 100), with net/http's
// reason phrases: "HTTP/1.1 200 OK\r\n", "HTTP/1.1 999 status code
// 999\r\n". Read only.
var statusLines = func() (t [1000][]byte) {
	for code := 100; code < 1000; code++ {
		text := http.StatusText(code)
		if text == "" {
			text = "status code " + strconv.Itoa(code)
		}
		t[code] = []byte("HTTP/1.1 " + strconv.Itoa(code) + " " + text + "\r\n")
	}
	return t
}()
