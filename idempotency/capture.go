package idempotency

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/yaoki-go/yaoki/header"
)

// ErrHijack is the error of Hijack on the ResponseWriter of a request that
// holds its key. It matches http.ErrNotSupported.
var ErrHijack = fmt.Errorf("idempotency: the connection of a request with an Idempotency-Key cannot be hijacked: the middleware records the response for replay and cannot see one written to the connection; serve the route without the middleware, or send the request without a key: %w", http.ErrNotSupported)

// capture passes a handler's response through to the client and keeps a
// copy of it (status, header, up to max bytes of body) for the store.
type capture struct {
	w      http.ResponseWriter
	max    int
	outer  http.Header // the header as it was before the handler ran: outer layers' fields
	head   bool        // a HEAD request: the handler's Content-Length is kept
	status int         // 0 until the final header is written
	// nobody: the final status, or the method, allows no body (204, 304,
	// HEAD): net/http refuses or drops what the handler writes, so none
	// is kept or counted.
	nobody bool
	// headSize counts what the handler wrote for a HEAD request, which
	// net/http drops but announces as its Content-Length when it fits the
	// buffer and nothing was flushed (see headLength); flushed says
	// something was.
	headSize int64
	flushed  bool
	// sniff: the final header leaves the Content-Type to net/http, which
	// sniffs the first bytes it sends (see Flush).
	sniff  bool
	header http.Header // the header as sent with the final status
	// trailer holds the Trailer field's values when the final status was
	// written: net/http reads the declared trailers then, and a later
	// declaration sends nothing.
	trailer []string
	body    []byte
	size    int64 // bytes written by the handler
	// declared is the Content-Length the handler set with its final
	// status, -1 for none or one that does not count (see cut).
	declared int64
}

func (c *capture) Header() http.Header { return c.w.Header() }

func (c *capture) WriteHeader(code int) {
	if c.status != 0 {
		c.w.WriteHeader(code) // net/http reports the superfluous call
		return
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		c.w.WriteHeader(code) // informational: the final status comes later
		return
	}
	c.status = code
	c.nobody = c.head || code == http.StatusNoContent || code == http.StatusNotModified
	c.header = c.kept()
	c.trailer = slices.Clone(c.w.Header()["Trailer"])
	c.sniff = !c.nobody && sniffed(c.w.Header())
	c.declared = c.declaredLength(code)
	c.w.WriteHeader(code)
}

// declaredLength is DeclaredLength for the header as it is now, -1 for
// none.
func (c *capture) declaredLength(code int) int64 {
	if n, ok := DeclaredLength(c.w.Header(), c.head, code); ok {
		return n
	}
	return -1
}

// kept returns the fields of the header to store: keptHeader's, and for a
// HEAD request the Content-Length the handler set, which describes the
// body a GET would get and which no replay can compute.
func (c *capture) kept() http.Header {
	h := keptHeader(c.w.Header(), c.outer)
	if cl, ok := c.w.Header()["Content-Length"]; ok && c.head {
		if h == nil {
			h = make(http.Header, 1)
		}
		h["Content-Length"] = slices.Clone(cl)
	}
	return h
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	c.keep(p)
	return c.w.Write(p)
}

// WriteString lets io.WriteString avoid a copy, as net/http's writer does.
func (c *capture) WriteString(s string) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	c.keepString(s)
	if sw, ok := c.w.(interface{ WriteString(string) (int, error) }); ok {
		return sw.WriteString(s)
	}
	return c.w.Write([]byte(s))
}

func (c *capture) keep(p []byte) {
	if c.nobody {
		c.headSize += int64(len(p))
		return
	}
	c.size += int64(len(p))
	if c.size <= int64(c.max) {
		c.body = append(c.body, p...)
	} else {
		c.body = nil
	}
}

func (c *capture) keepString(s string) {
	if c.nobody {
		c.headSize += int64(len(s))
		return
	}
	c.size += int64(len(s))
	if c.size <= int64(c.max) {
		c.body = append(c.body, s...)
	} else {
		c.body = nil
	}
}

// Flush sends what was written so far, when the underlying writer can.
func (c *capture) Flush() {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if c.sniff {
		c.sniff = false
		c.sniffNow()
	}
	c.flushed = true
	_ = http.NewResponseController(c.w).Flush()
}

// sniffNow keeps the Content-Type that net/http gives the response whose
// header and first bytes a Flush is about to send, without one from the
// handler: what DetectContentType says of those bytes, or none for none
// (it sniffs nothing then). Without it the replay, whose whole body goes
// at once, would sniff more bytes and could send another type, or one
// where the first answer had none. After 512 bytes (what sniffing reads,
// and fewer than net/http buffers before it sends anything) the replay
// sniffs the same bytes, and nothing is kept.
func (c *capture) sniffNow() {
	if c.size >= sniffLen || c.size > int64(c.max) {
		return
	}
	var vs []string
	if c.size > 0 {
		vs = []string{http.DetectContentType(c.body)}
	} else {
		vs = []string{} // none: an empty field stops the replay's sniffing
	}
	if c.header == nil {
		c.header = make(http.Header, 1)
	}
	c.header["Content-Type"] = vs
}

// sniffLen is how many bytes http.DetectContentType reads.
const sniffLen = 512

// sniffed reports whether net/http sniffs the Content-Type of a response
// with header h: none set, and neither a Content-Encoding nor a
// Transfer-Encoding.
func sniffed(h http.Header) bool {
	if _, ok := h["Content-Type"]; ok {
		return false
	}
	_, te := h["Transfer-Encoding"]
	return !te && h.Get("Content-Encoding") == ""
}

// Hijack refuses with ErrHijack: a response written to the raw connection
// would be neither seen nor stored, and the request executed without a
// record to replay. It takes precedence over Unwrap for
// http.ResponseController.
func (c *capture) Hijack() (net.Conn, *bufio.ReadWriter, error) { return nil, nil, ErrHijack }

// Unwrap gives http.ResponseController access to the underlying writer.
func (c *capture) Unwrap() http.ResponseWriter { return c.w }

// response returns what the handler sent: the final status (200 if the
// handler wrote nothing), the header as it was then, and the trailers as
// they are now, under http.TrailerPrefix.
func (c *capture) response() Response {
	if c.status == 0 {
		c.status = http.StatusOK
		c.header = c.kept()
		c.trailer = c.w.Header()["Trailer"]
		c.declared = c.declaredLength(c.status)
	}
	if c.head {
		c.headLength()
	}
	r := Response{Status: c.status, Header: withTrailers(c.header, c.trailer, c.w.Header()), Size: c.size}
	switch {
	case c.declared >= 0 && c.size != c.declared:
		r.Cut = true
	case c.size > int64(c.max):
		r.Omitted = true
	default:
		r.Body = c.body
	}
	return r
}

// headLength keeps, for a HEAD request whose handler set no
// Content-Length, the one net/http announced: the length of what the
// handler wrote, when it was all in net/http's buffer (headBuffer bytes)
// as the handler returned, nothing having been flushed, and no trailer or
// Transfer-Encoding stood in the way; the replay sends the record's.
func (c *capture) headLength() {
	if _, ok := c.header["Content-Length"]; ok || c.flushed || c.headSize == 0 || c.headSize > headBuffer ||
		len(c.trailer) > 0 || c.header["Transfer-Encoding"] != nil || c.w.Header()["Transfer-Encoding"] != nil {
		return
	}
	if c.header == nil {
		c.header = make(http.Header, 1)
	}
	c.header["Content-Length"] = []string{strconv.FormatInt(c.headSize, 10)}
}

// headBuffer is the size of net/http's response buffer
// (bufferBeforeChunkingSize): a body that fits it when the handler returns
// gets a Content-Length.
const headBuffer = 2048

// withTrailers returns kept with the trailers of h added under
// http.TrailerPrefix: the fields declared in declared (the Trailer field
// when the status was written) and those set under the prefix, as net/http
// sends them when the handler returns. Trailers named like a field that is
// never kept (Set-Cookie) are left out. Without trailers it returns kept
// itself.
func withTrailers(kept http.Header, declared []string, h http.Header) http.Header {
	var out http.Header
	add := func(name string, vs []string) {
		if len(vs) == 0 || skipField(name) {
			return
		}
		if out == nil {
			out = make(http.Header, len(kept)+1)
			for k, vs := range kept {
				out[k] = vs
			}
		}
		out[http.TrailerPrefix+name] = slices.Clone(vs)
	}
	for _, v := range declared {
		for name := range strings.SplitSeq(v, ",") {
			name = http.CanonicalHeaderKey(strings.TrimSpace(name))
			if name != "" {
				add(name, h[name])
			}
		}
	}
	for k, vs := range h {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			add(http.CanonicalHeaderKey(name), vs)
		}
	}
	if out == nil {
		return kept
	}
	return out
}

// snapshot copies h: the fields that layers outside the middleware set
// before the handler ran (a request id, CORS), which belong to each request
// and are not stored. Nil when h is empty, as it mostly is.
func snapshot(h http.Header) http.Header {
	if len(h) == 0 {
		return nil
	}
	return h.Clone()
}

// keptHeader copies the fields of h worth replaying: those the handler set
// (absent from outer, or changed since), except the hop-by-hop ones, those
// the server computes for each response (Date, Content-Length), trailer
// declarations, and Set-Cookie (a session given to the first request must
// never go to whoever sends its key again).
func keptHeader(h, outer http.Header) http.Header {
	n, nv := 0, 0
	for k, vs := range h {
		if keep(k, vs, outer) {
			n++
			nv += len(vs)
		}
	}
	if n == 0 {
		return nil
	}
	out := make(http.Header, n)
	values := make([]string, 0, nv) // one backing array for every field
	for k, vs := range h {
		if keep(k, vs, outer) {
			values = append(values, vs...)
			out[k] = values[len(values)-len(vs) : len(values) : len(values)]
		}
	}
	return out
}

func keep(k string, vs []string, outer http.Header) bool {
	if skipField(k) {
		return false
	}
	if ovs, ok := outer[k]; ok && slices.Equal(vs, ovs) {
		return false // an outer layer's, untouched by the handler
	}
	return true
}

// skipField reports whether the field named k is never kept. k is compared
// in canonical form: net/http sends a field under the name it has in the
// header map, so "set-cookie" is a Set-Cookie field like any other.
func skipField(k string) bool {
	if len(k) > len(http.TrailerPrefix) && k[:len(http.TrailerPrefix)] == http.TrailerPrefix {
		return true
	}
	switch http.CanonicalHeaderKey(k) {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Te", "Trailer", "Upgrade",
		"Date", "Content-Length", "Set-Cookie", header.IdempotentReplayed:
		return true
	}
	return false
}
