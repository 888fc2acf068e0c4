package curl

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// connTrace is the transport under the retries that notes, for each
// attempt, what -w reports of it (net/http/httptrace): when its name was
// looked up, its connection made and its TLS handshake done (for a
// connection reused, when that connection was set up), when it had its
// connection, when the first byte of the answer came; the bytes of the
// request; and the addresses of the connection.
//
// Times are taken on the clock of the whole run: -w writes them from its
// start, so that with retries they count the attempts and waits before
// (curl starts a new transfer for each retry and measures from there).
// It is safe for concurrent use: hedged attempts run at once, and a dial
// may report after its attempt ended.
type connTrace struct {
	base http.RoundTripper

	mu    sync.Mutex
	of    map[*http.Response]*attemptTrace
	conns map[net.Conn]setup // how each connection was set up
	last  *attemptTrace      // the last attempt that ended
}

// setup is when a connection was looked up, connected and secured.
type setup struct {
	lookup, connect, tls time.Time
}

// attemptTrace is what connTrace noted of one attempt. Its fields are
// guarded by connTrace.mu.
type attemptTrace struct {
	dnsDone, connectStart time.Time
	setup                 setup
	gotConn, firstByte    time.Time
	newConn               bool
	local, remote         net.Addr
	headerBytes           int64        // the request line and headers written
	bodyBytes             int64        // the body written
	bodyRead              atomic.Int64 // the body read by the transport to be sent (over HTTP/2 WroteRequest may come after the answer)
	rec                   *recordConn  // the connection, when it records what it reads
	raw                   []byte       // the answer's header sections as they came (rawHeaders), or nil
}

func (c *connTrace) RoundTrip(req *http.Request) (*http.Response, error) {
	a := &attemptTrace{}
	stamp := func(t *time.Time) {
		now := time.Now()
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.IsZero() {
			*t = now
		}
	}
	requestLine := int64(len(req.Method) + 1 + len(req.URL.RequestURI()) + len(" HTTP/1.1\r\n"))
	trace := &httptrace.ClientTrace{
		DNSDone:      func(httptrace.DNSDoneInfo) { stamp(&a.dnsDone) },
		ConnectStart: func(string, string) { stamp(&a.connectStart) },
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				stamp(&a.setup.connect)
			}
		},
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err == nil {
				stamp(&a.setup.tls)
			}
		},
		GotConn: func(i httptrace.GotConnInfo) {
			now := time.Now()
			c.mu.Lock()
			defer c.mu.Unlock()
			a.gotConn, a.newConn = now, !i.Reused
			a.local, a.remote = i.Conn.LocalAddr(), i.Conn.RemoteAddr()
			if rc, ok := i.Conn.(*recordConn); ok {
				rc.arm()
				a.rec = rc
			}
			if c.conns == nil {
				c.conns = map[net.Conn]setup{}
			}
			if s, ok := c.conns[i.Conn]; ok && i.Reused {
				a.setup = s
				return
			}
			// A name given as an IP address is not looked up: its lookup
			// ends as the connection starts, as curl counts it.
			a.setup.lookup = a.dnsDone
			if a.setup.lookup.IsZero() {
				a.setup.lookup = a.connectStart
			}
			c.conns[i.Conn] = a.setup
		},
		WroteHeaderField: func(key string, values []string) {
			switch {
			case key == ":authority":
				key = "Host" // as HTTP/1.1 writes it
			case strings.HasPrefix(key, ":"):
				return // HTTP/2's other pseudo-headers: the request line, counted below
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, v := range values {
				a.headerBytes += int64(len(key) + len(": ") + len(v) + len("\r\n"))
			}
		},
		WroteHeaders: func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			a.headerBytes += requestLine + int64(len("\r\n"))
		},
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if i.Err == nil && req.ContentLength > 0 {
				a.bodyBytes = req.ContentLength
			}
		},
		GotFirstResponseByte: func() { stamp(&a.firstByte) },
	}
	sent := req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	if req.Body != nil && req.Body != http.NoBody {
		sent.Body = &countedBody{ReadCloser: req.Body, n: &a.bodyRead}
	}
	resp, err := c.base.RoundTrip(sent)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = a
	if a.rec != nil {
		if b := a.rec.take(); resp != nil {
			a.raw = rawHeaders(b, resp.StatusCode)
		}
	}
	if resp != nil {
		resp.Request = req
		if c.of == nil {
			c.of = map[*http.Response]*attemptTrace{}
		}
		c.of[resp] = a
	}
	return resp, err
}

func (c *connTrace) CloseIdleConnections() {
	if ci, ok := c.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// carried sets what -w says of the attempts that brought resp (and the
// redirects before it) in a run that started at start: the phases of
// resp's attempt, the bytes sent and received along the redirects (the
// body sent by resp's request only, as curl counts it), the connections
// made, and the addresses of the connection that carried
// resp. Without an answer (resp nil), the phases are the last attempt's.
func (c *connTrace) carried(resp *http.Response, ti *transferInfo, start time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.last
	if resp != nil {
		a = c.of[resp]
	}
	if a == nil {
		return
	}
	since := func(t time.Time) time.Duration {
		if t.IsZero() {
			return 0
		}
		return t.Sub(start)
	}
	lookup := a.setup.lookup
	if lookup.IsZero() { // no connection: the lookup that was tried, if any
		lookup = a.dnsDone
		if lookup.IsZero() {
			lookup = a.connectStart
		}
	}
	ti.phases.namelookup = since(lookup)
	ti.phases.connect = since(a.setup.connect)
	ti.phases.appconnect = since(a.setup.tls)
	ti.phases.pretransfer = since(a.gotConn)
	ti.phases.starttransfer = since(a.firstByte)
	ti.local, ti.remote = endpointOf(a.local), endpointOf(a.remote)
	if resp != nil {
		ti.sizeUpload = a.sentBody() // as curl: the final request's only
	}
	for r := resp; r != nil; r = r.Request.Response {
		if t := c.of[r]; t != nil {
			ti.sizeRequest += t.headerBytes + t.sentBody()
			if t.newConn {
				ti.connects++
			}
		}
		if t := c.of[r]; t != nil && t.raw != nil {
			ti.sizeHeader += int64(len(t.raw))
		} else {
			ti.sizeHeader += headerSize(r)
		}
	}
}

// raw returns resp's header sections as they came, or nil when its
// attempt did not record them (see recordConn). A nil c has none.
func (c *connTrace) raw(resp *http.Response) []byte {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.of[resp]; a != nil {
		return a.raw
	}
	return nil
}

// headerSize is the size of resp's status line and headers as the server
// sent them, if it wrote each as "Name: value" (net/http keeps neither
// their order nor their spacing): what curl counts as %{size_header} when
// the raw header was not recorded (over HTTP/2, the status line as curl
// writes it, "HTTP/2 200 ").
func headerSize(resp *http.Response) int64 {
	n := len(resp.Proto) + len(" ") + len(resp.Status) + len("\r\n") + len("\r\n")
	if resp.ProtoMajor == 2 {
		n = len("HTTP/2 200 \r\n") + len("\r\n")
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	for _, te := range resp.TransferEncoding { // taken out of Header by net/http
		n += len("Transfer-Encoding: ") + len(te) + len("\r\n")
	}
	return int64(n)
}

// sentBody is the bytes of the attempt's body sent: all of them once the
// transport said it wrote the request, else those it read to send (a
// server that read the whole body before it answered got them all,
// though over HTTP/2 WroteRequest may come after the answer).
func (a *attemptTrace) sentBody() int64 {
	return max(a.bodyBytes, a.bodyRead.Load())
}

// countedBody counts the bytes the transport reads of a request's body.
type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
