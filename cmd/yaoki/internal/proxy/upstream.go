package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/yaoki-go/yaoki/header"
)

// upstreamTransport is the proxy's connection pool to its upstreams. A
// request to a plain-http upstream that may be sent again on a new
// connection (see replayable), without a body or with one that can be
// read again (GetBody) of at most maxDirectBody bytes, is exchanged on the
// caller's goroutine: written with (*http.Request).Write, its answer read with
// http.ReadResponse, over a keep-alive connection of its own pool.
// http.Transport runs every exchange between a writer and a reader
// goroutine of the connection and hands the request and the answer between
// them and the caller; on a busy sidecar those hand-offs, and the threads
// they wake, cost more than the proxying itself. Everything else goes
// through fallback, an http.Transport: https, longer bodies and bodies of
// unknown length (whose answer may come while the body is still being
// sent), other methods, Upgrade (WebSocket), Expect on a body sent once
// (a body that can be read again goes without it: withoutExpect), and
// requests that an environment proxy (HTTP_PROXY) takes.
//
// A connection is not watched while idle (that takes a goroutine); it is
// looked at when taken from the pool instead (quiet): one that the
// upstream closed, or on which bytes came that no request asked for, is
// closed there, as http.Transport closes an idle connection on which an
// unsolicited answer comes.
//
// It keeps http.Transport's rules where they show: the same bytes on the
// wire (the same writer; no compression asked for), 1xx
// answers passed to the request's httptrace.ClientTrace.Got1xxResponse
// (its other hooks are not called), response headers limited to 10 MiB, a
// connection kept only when its answer was read to the end and neither
// side said Connection: close, a request sent again once on a new
// connection when a reused one turns out to have been closed by the
// upstream before any answer came, and the request's context cancels the
// exchange at any step, the reading of the body included. An upstream may
// still close a connection as it is taken, which is found only when the
// request is written on it; that is why only requests that may be sent
// again take this path. Idle connections are closed after
// idleTimeout; at most maxIdle are kept per upstream host.
//
// It is safe for concurrent use.
type upstreamTransport struct {
	fallback    *http.Transport
	dial        func(ctx context.Context, network, addr string) (net.Conn, error) // the direct path's dialer (fallback has its own)
	maxIdle     int                                                               // idle connections kept per host
	idleTimeout time.Duration                                                     // an idle connection older than this is closed

	mu   sync.Mutex
	idle map[string][]*upstreamConn // by host:port, the most recently used last
}

// maxDirectBody is the longest body the direct path sends: one that the
// kernel's buffers at the two ends take whole, so that writing it does not
// wait for the upstream to read it, and an upstream that answers before
// reading (a 413, a 401) is heard once the write is done.
const maxDirectBody = 64 << 10

// maxResponseHeaderBytes is http.Transport's default limit on the size of
// an answer's header: 10 MiB.
const maxResponseHeaderBytes = 10 << 20

// newUpstreamTransport is the connection pool to the upstreams: the
// defaults of http.DefaultTransport (dial timeout and keep-alive, idle
// timeout, the environment's proxy), with room for as many idle
// connections per upstream as a busy proxy keeps open, and no transparent
// compression (the client's Accept-Encoding and the upstream's encoding
// pass through unchanged).
func newUpstreamTransport() *upstreamTransport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0
	t.MaxIdleConnsPerHost = 512
	t.DisableCompression = true
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &upstreamTransport{
		fallback:    t,
		dial:        d.DialContext,
		maxIdle:     t.MaxIdleConnsPerHost,
		idleTimeout: t.IdleConnTimeout,
		idle:        map[string][]*upstreamConn{},
	}
}

// direct reports whether req is exchanged on the caller's goroutine.
func (u *upstreamTransport) direct(req *http.Request) bool {
	if req.URL.Scheme != "http" || req.URL.Host == "" || !replayable(req) {
		return false
	}
	if withBody(req) && (req.GetBody == nil || req.ContentLength <= 0 || req.ContentLength > maxDirectBody) {
		return false
	}
	if _, ok := req.Header["Upgrade"]; ok {
		return false
	}
	if _, ok := req.Header["Expect"]; ok {
		return false
	}
	if u.fallback.Proxy != nil {
		if p, err := u.fallback.Proxy(req); err != nil || p != nil {
			return false
		}
	}
	return true
}

// RoundTrip implements http.RoundTripper, without a read timeout.
func (u *upstreamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return u.roundTrip(req, 0)
}

// roundTrip sends req; with idle > 0, an attempt whose upstream sends no
// byte of the answer's header for idle fails with an
// *upstreamHeaderTimeoutError, and a read of the answer's body that waits
// longer than idle for the upstream's next bytes fails with an
// *upstreamIdleError; either closes the connection (see readTimeout).
func (u *upstreamTransport) roundTrip(req *http.Request, idle time.Duration) (*http.Response, error) {
	if withBody(req) && req.GetBody != nil {
		req = withoutExpect(req)
	}
	if !u.direct(req) {
		return u.viaFallback(req, idle)
	}
	addr := hostPort(req.URL)
	ctx := req.Context()
	for fresh := false; ; fresh = true {
		var c *upstreamConn
		if !fresh {
			c = u.get(addr)
			for c != nil && !c.quiet() {
				// Closed by the upstream, or holding bytes nobody asked
				// for, which the next answer must not start with.
				c.nc.Close()
				c = u.get(addr)
			}
		} else if withBody(req) {
			// The first send read the body: send it again from the start.
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("proxy: the upstream had closed an idle connection, and the body could not be read again to send it on a new one: %w", err)
			}
			again := *req
			again.Body = body
			req = &again
		}
		if c == nil {
			nc, err := u.dial(ctx, "tcp", addr)
			if err != nil {
				closeBody(req)
				if ctx.Err() != nil {
					return nil, context.Cause(ctx)
				}
				return nil, err
			}
			c = newUpstreamConn(u, addr, nc)
		}
		resp, err := c.exchange(ctx, req, idle) // closes req.Body
		if err == nil {
			return resp, nil
		}
		if _, stale := err.(*staleConnError); !stale {
			return nil, err
		}
		// The upstream had closed the idle connection before the request
		// reached it: send it on a new one, as http.Transport does.
	}
}

// withoutExpect returns req without its Expect: 100-continue, when it has
// one. req's body can be read again (GetBody): httpretry kept it whole for
// the retries, so the proxy read it all from the client (who got its 100
// Continue then) before this attempt. Asking the upstream whether to send
// it would only wait for a 100 that an upstream that reads bodies as they
// come never sends (http.Transport's ExpectContinueTimeout, 1 s, on every
// attempt); an upstream that refuses the body answers so when it has it.
// A body sent once as it comes keeps the Expect: the upstream's 100 is the
// client's go-ahead.
func withoutExpect(req *http.Request) *http.Request {
	v, ok := req.Header["Expect"]
	if !ok || len(v) != 1 || !strings.EqualFold(textproto.TrimString(v[0]), "100-continue") {
		return req
	}
	r := *req
	r.Header = req.Header.Clone()
	delete(r.Header, "Expect")
	return &r
}

// withBody reports whether req has a body to send.
func withBody(req *http.Request) bool { return req.Body != nil && req.Body != http.NoBody }

// closeBody closes the body of a request that will not be sent, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if withBody(req) {
		req.Body.Close()
	}
}

// hostPort returns the address to dial for an http URL: its host as it
// is when it has a port.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// replayable is http.Transport's rule for sending a request again on a
// new connection after it was written on a reused one that failed before
// any answer came: its method is GET, HEAD, OPTIONS or TRACE, or it
// carries an Idempotency-Key (a body must also be readable again, which
// direct checks).
func replayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, k := req.Header[header.IdempotencyKey]
	_, x := req.Header[header.XIdempotencyKey]
	return k || x
}

// get returns an idle connection to addr, or nil.
func (u *upstreamTransport) get(addr string) *upstreamConn {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.prune(addr, time.Now())
	list := u.idle[addr]
	if len(list) == 0 {
		return nil
	}
	c := list[len(list)-1]
	list[len(list)-1] = nil
	u.idle[addr] = list[:len(list)-1]
	return c
}

// put keeps c for the next request to its host, or closes it when the
// host has maxIdle idle connections already.
func (u *upstreamTransport) put(c *upstreamConn) {
	now := time.Now()
	c.idleAt, c.reused = now, true
	u.mu.Lock()
	u.prune(c.addr, now)
	list := u.idle[c.addr]
	keep := len(list) < u.maxIdle
	if keep {
		u.idle[c.addr] = append(list, c)
	}
	u.mu.Unlock()
	if !keep {
		c.nc.Close()
	}
}

// prune closes the connections to addr that have been idle longer than
// idleTimeout; the oldest are first in the list. u.mu is held.
func (u *upstreamTransport) prune(addr string, now time.Time) {
	list := u.idle[addr]
	n := 0
	for n < len(list) && u.idleTimeout > 0 && now.Sub(list[n].idleAt) > u.idleTimeout {
		list[n].nc.Close()
		n++
	}
	if n > 0 {
		rest := copy(list, list[n:])
		clear(list[rest:])
		u.idle[addr] = list[:rest]
	}
}

// CloseIdleConnections closes the idle connections, those of fallback
// too.
func (u *upstreamTransport) CloseIdleConnections() {
	u.mu.Lock()
	idle := u.idle
	u.idle = map[string][]*upstreamConn{}
	u.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.nc.Close()
		}
	}
	u.fallback.CloseIdleConnections()
}

// upstreamConn is one keep-alive connection to an upstream, used by one
// exchange at a time.
type upstreamConn struct {
	u      *upstreamTransport
	addr   string
	nc     net.Conn
	r      countingReader // nc, counted and limited
	w      errWriter      // nc, its first error kept
	br     *bufio.Reader
	bw     *bufio.Writer
	req    *http.Request // the request whose answer's body is being read (for upstreamIdleError)
	reused bool          // it served an exchange before
	idleAt time.Time     // when it was put in the pool
	fd     int           // nc's socket, for quiet; -1 where it does not look
	peek   [1]byte       // what quiet peeks into
	cut    func()        // ends the I/O in progress on nc: what an exchange's context does when it ends
}

func newUpstreamConn(u *upstreamTransport, addr string, nc net.Conn) *upstreamConn {
	c := &upstreamConn{u: u, addr: addr, nc: nc, fd: socket(nc)}
	c.cut = func() { // made once: an exchange does not allocate it
		c.r.cut.Store(true) // before: see countingReader.Read
		c.nc.SetDeadline(time.Unix(1, 0))
	}
	c.r = countingReader{nc: nc, left: -1}
	c.br = bufio.NewReader(&c.r)
	c.w = errWriter{nc: nc}
	c.bw = bufio.NewWriter(&c.w)
	return c
}

// countingReader reads nc, counting the bytes, and refusing to read more
// than left bytes when left ≥ 0 (the limit on an answer's header). While
// idle > 0 (an answer, header and body, of a route with a read timeout), each read
// first moves nc's read deadline to idle from now, as idleDeadline moves a
// client's: only when it was last moved more than idle/8 ago, so that a
// read that waits for the upstream's next bytes fails after between 7/8 of
// idle and idle. It is read by one goroutine at a time.
type countingReader struct {
	nc    net.Conn
	n     int64
	left  int64
	idle  time.Duration
	moved time.Time   // when the read deadline was last moved; zero: it is not set
	cut   atomic.Bool // the exchange's context ended: the deadline in the past stays
}

// errHeaderTooLong is the error of an answer whose header passes
// maxResponseHeaderBytes.
var errHeaderTooLong = errors.New("proxy: upstream response headers (its 1xx answers' and its answer's together) exceeded 10 MiB; aborted")

func (r *countingReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, errHeaderTooLong
	}
	if r.left > 0 && int64(len(p)) > r.left {
		p = p[:r.left]
	}
	if r.idle > 0 {
		if now := time.Now(); r.moved.IsZero() || now.Sub(r.moved) >= r.idle/8 {
			r.moved = now
			r.nc.SetReadDeadline(now.Add(r.idle))
			if r.cut.Load() {
				// The exchange's cut (its context ended) set the deadline
				// in the past before this moved it: set it there again.
				// (cut sets the flag first, so one of the two sees the
				// other.)
				r.nc.SetReadDeadline(time.Unix(1, 0))
			}
		}
	}
	n, err := r.nc.Read(p)
	r.n += int64(n)
	if r.left > 0 {
		r.left -= int64(n)
	}
	return n, err
}

// errWriter writes to nc and keeps the first error. (It has no ReadFrom,
// so that a body copied through the bufio.Writer above it is written
// here too.)
type errWriter struct {
	nc  net.Conn
	err error
}

func (w *errWriter) Write(p []byte) (int, error) {
	n, err := w.nc.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// staleConnError is an exchange on a reused connection that failed before
// any byte of an answer came: the upstream had closed the connection
// while it was idle.
type staleConnError struct{ err error }

func (e *staleConnError) Error() string {
	return "proxy: upstream closed an idle connection: " + e.err.Error()
}
func (e *staleConnError) Unwrap() error { return e.err }

// exchange sends req (its header, then its body if any, which it closes)
// on c and reads the answer's header. The connection goes back to the pool
// when the answer's body has been read to its end, and is closed when the
// exchange fails, the body is closed before its end, or ctx ends first.
func (c *upstreamConn) exchange(ctx context.Context, req *http.Request, idle time.Duration) (*http.Response, error) {
	if !c.r.moved.IsZero() {
		// The previous answer's body moved the read deadline: this
		// answer's header gets a deadline of its own, set by its first
		// read (idle > 0), or none.
		if idle == 0 {
			c.nc.SetReadDeadline(time.Time{})
		}
		c.r.moved = time.Time{}
	}
	// The wait for the answer's header is bounded as the reads of its body
	// are (nginx's proxy_read_timeout): the upstream's next bytes, 1xx
	// answers included, within idle.
	c.r.idle = idle
	stop := alwaysStopped
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.cut)
	}
	before := c.r.n
	fail := func(err error) (*http.Response, error) {
		if c.w.err != nil {
			// What the connection refused, which Request.Write reports
			// as an error reading the body when it came while the body
			// was copied.
			err = c.w.err
		}
		stop()
		c.nc.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if idle > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, &upstreamHeaderTimeoutError{method: req.Method, url: req.URL, idle: idle}
		}
		if c.reused && c.r.n == before && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
			return nil, &staleConnError{err: err}
		}
		return nil, err
	}
	if err := req.Write(c.bw); err != nil {
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(err)
	}
	resp, err := c.readResponse(req)
	if err != nil {
		return fail(err)
	}
	keep := !resp.Close && !req.Close
	if resp.Body == http.NoBody {
		c.done(stop, keep)
		return resp, nil
	}
	c.req = req
	resp.Body = &upstreamBody{rc: resp.Body, c: c, ctx: ctx, stop: stop, keep: keep}
	return resp, nil
}

func alwaysStopped() bool { return true }

// readResponse reads the answer to req, passing 1xx answers to the
// request's trace, at most max1xx of them, and all the headers read
// (the 1xx answers' and the answer's) within maxResponseHeaderBytes.
func (c *upstreamConn) readResponse(req *http.Request) (*http.Response, error) {
	trace := httptrace.ContextClientTrace(req.Context())
	c.r.left = maxResponseHeaderBytes
	defer func() { c.r.left = -1 }()
	for n1xx := 1; ; n1xx++ {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		code := resp.StatusCode
		if code == http.StatusSwitchingProtocols {
			// Not asked for: Upgrade requests go through fallback.
			return nil, errors.New("proxy: upstream switched protocols without being asked to")
		}
		if code < 100 || code > 199 {
			return resp, nil
		}
		if n1xx > max1xx {
			return nil, &tooMany1xxError{method: req.Method, url: req.URL}
		}
		if trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(code, textproto.MIMEHeader(resp.Header)); err != nil {
				return nil, err
			}
		}
	}
}

// done ends an exchange whose answer was read whole (keep) or not: the
// connection goes back to the pool if it may, and is closed otherwise.
func (c *upstreamConn) done(stop func() bool, keep bool) {
	if stop() && keep && c.br.Buffered() == 0 {
		c.u.put(c)
		return
	}
	c.nc.Close()
}

// upstreamBody is an answer's body: it puts the connection back in the
// pool when read to its end, and closes it when closed before (as
// http.Transport does). Close may be called while a Read waits: it closes
// the connection, which ends the Read.
type upstreamBody struct {
	rc     io.Reader
	c      *upstreamConn
	ctx    context.Context
	stop   func() bool
	keep   bool
	ended  atomic.Bool // the exchange is over: the connection is back in the pool or closed
	closed atomic.Bool
	err    error // what Read returns once ended
}

func (b *upstreamBody) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if err == nil {
		return n, nil
	}
	if err != io.EOF && b.ctx.Err() != nil {
		err = context.Cause(b.ctx)
	} else if idle := b.c.r.idle; idle > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		err = &upstreamIdleError{method: b.c.req.Method, url: b.c.req.URL, idle: idle, err: err}
	}
	if b.closed.Load() {
		err = http.ErrBodyReadAfterClose
	}
	b.err = err
	if b.ended.CompareAndSwap(false, true) {
		b.c.done(b.stop, err == io.EOF && b.keep)
	}
	return n, err
}

func (b *upstreamBody) Close() error {
	b.closed.Store(true)
	if b.ended.CompareAndSwap(false, true) {
		b.c.done(b.stop, false) // not read to its end: the rest is not worth reading
	}
	return nil
}
