package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

// frontConn is one client connection on the front end, served by one
// goroutine (serve), and, while a request of it waits for the upstream,
// watched by another (watch) that hears the client go away.
type frontConn struct {
	f      *front
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	client []byte // the client's address, for X-Forwarded-For; nil if RemoteAddr has none
	ctx    connCtx
	wd     idleDeadline // Server.ClientTimeout on the writes of the answers
	dw     deadlineWriter

	mu     sync.Mutex    // guards idle and up
	idle   bool          // waiting for the next request: Close wakes it
	up     *upstreamConn // the connection of the attempt in progress, for watch to cut
	handed bool          // given to the net/http server: not closed here
	served bool          // a request was served: the next waits clientIdleTimeout for its first byte

	serving   bool          // a request is served (under mu)
	startTick int64         // front.tick when it began (under mu)
	watching  bool          // watch runs, or ran for this request (under mu)
	watchDone chan struct{} // watch has ended
	watchStop atomic.Bool   // the request is over: watch must end
	stale     bool          // the read deadline is not the idle one: set in the past to end watch, or the head's
	idleSetAt time.Time     // when the idle read deadline was last set

	raw []byte // the head of the request served
	req frontRequest
	x   frontExchange
	// The retrier of the route last served with an observer
	// (observedRetrier).
	obsRoute   *frontRoute
	obsRetrier *retry.Retrier
	// attemptFn is fc.attempt, made once: the retry loop's attempt
	// function costs no allocation per request.
	attemptFn func(context.Context) (int, error)
}

// watchTick is the period of the front end's watchdog, which starts
// watching the client's connection of a request for a close (watch) once
// the watchdog's counter has moved twice since the request began (10 to
// 20 ms into it): a request answered sooner (most) costs no goroutine and
// no timer for it, and a client that goes away is heard at most 20 ms
// into its request, when its attempt is cancelled; after an attempt's
// failure, at once (watchNow).
const watchTick = 10 * time.Millisecond

// frontBufferSize is the size of a client connection's read and write
// buffers. A request head longer than the read buffer goes to the
// net/http server, which takes heads up to 1 MiB.
const frontBufferSize = 4 << 10

func newFrontConn(f *front, nc net.Conn) *frontConn {
	fc := &frontConn{f: f, nc: nc, br: bufio.NewReaderSize(nc, frontBufferSize), watchDone: make(chan struct{}, 1)}
	fc.dw = deadlineWriter{fc: fc}
	fc.bw = bufio.NewWriterSize(&fc.dw, frontBufferSize)
	// The client's address as httputil.ReverseProxy takes it from the
	// request's RemoteAddr: an IPv6 address keeps its zone.
	if host, _, err := net.SplitHostPort(nc.RemoteAddr().String()); err == nil {
		fc.client = []byte(host)
	}
	if d := f.s.ClientTimeout; d > 0 {
		fc.wd = idleDeadline{conn: nc, write: true, idle: d}
	}
	fc.attemptFn = fc.attempt
	return fc
}

// deadlineWriter writes to the client's connection, moving its write
// deadline before each write (Server.ClientTimeout).
type deadlineWriter struct{ fc *frontConn }

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.fc.wd.extend()
	return w.fc.nc.Write(p)
}

// serve serves the requests of the connection until it closes, the front
// end closes, or a request goes to the net/http server.
func (fc *frontConn) serve() {
	defer fc.end()
	defer fc.recoverPanic()
	for {
		if !fc.awaitRequest() {
			return
		}
		n, ok := fc.readHead()
		if n < 0 {
			return
		}
		var pr *proxyRoute
		if ok {
			pr = fc.f.s.routes.Load().matchFront(&fc.req)
		}
		if pr == nil {
			fc.handOver()
			return
		}
		fc.br.Discard(n)
		fc.served = true
		if !fc.serveRequest(pr) {
			return
		}
	}
}

// recoverPanic ends a connection whose serving panicked as net/http's
// server ends one whose handler panics: the connection closes (end) with
// no answer, stderr has the panic and its stack (but for
// http.ErrAbortHandler), and the process and the other connections go
// on. The upstream connection of the exchange is closed: what it holds
// is not known.
func (fc *frontConn) recoverPanic() {
	v := recover()
	if v == nil {
		return
	}
	fc.mu.Lock()
	up := fc.up
	fc.up = nil
	fc.mu.Unlock()
	if up != nil {
		up.nc.Close()
	}
	if c := fc.x.up; c != nil && c != up {
		c.nc.Close()
	}
	fc.x.up = nil
	if v == http.ErrAbortHandler || fc.f.s.stderr == nil {
		return
	}
	buf := make([]byte, 64<<10)
	buf = buf[:runtime.Stack(buf, false)]
	fmt.Fprintf(fc.f.s.stderr, "yaoki proxy: panic serving %v: %v\n%s", fc.nc.RemoteAddr(), v, buf)
}

// end closes the connection, unless it was handed over, and forgets it.
func (fc *frontConn) end() {
	fc.mu.Lock()
	handed := fc.handed
	fc.mu.Unlock()
	if !handed {
		fc.nc.Close()
	}
	f := fc.f
	f.mu.Lock()
	delete(f.conns, fc)
	f.mu.Unlock()
	f.wg.Done()
}

// handOver gives the connection, and what was read of it, to the net/http
// server.
func (fc *frontConn) handOver() {
	fc.mu.Lock()
	fc.handed = true
	fc.mu.Unlock()
	if fc.stale {
		fc.nc.SetReadDeadline(time.Time{})
	}
	// The net/http server sets its own deadlines; the front end's are
	// cleared.
	fc.nc.SetDeadline(time.Time{})
	fc.f.give(fc.nc, fc.br)
}

// awaitRequest waits for the first byte of the next request, for at most
// clientIdleTimeout; false when the connection is to be closed (the
// client closed it or stayed idle, or the front end is closing). A new
// connection's first request has clientHeaderTimeout from the
// connection's start for its whole head, as net/http's server gives it
// (readHead keeps that deadline): a client that connects and sends
// nothing holds its connection no longer.
func (fc *frontConn) awaitRequest() bool {
	fc.mu.Lock()
	if fc.f.closing.Load() {
		fc.mu.Unlock()
		return false
	}
	fc.idle = true
	if !fc.served {
		// A new connection's first request has its whole head within
		// clientHeaderTimeout from the start, as net/http's server
		// gives it (readHead keeps that deadline).
		fc.nc.SetReadDeadline(time.Now().Add(fc.f.to.header))
		fc.stale = true
	} else if fc.br.Buffered() == 0 || fc.stale {
		// The wait for the next request is bounded by clientIdleTimeout,
		// counted from the end of the last answer within an eighth of
		// it: the deadline is moved only when it was set longer ago (a
		// busy connection costs no timer operation per request).
		if now := time.Now(); fc.stale || now.Sub(fc.idleSetAt) >= fc.f.to.idle/8 {
			fc.nc.SetReadDeadline(now.Add(fc.f.to.idle))
			fc.idleSetAt = now
			fc.stale = false
		}
	}
	fc.mu.Unlock()
	_, err := fc.br.Peek(1)
	fc.mu.Lock()
	fc.idle = false
	fc.mu.Unlock()
	return err == nil
}

// wake ends the wait of an idle connection for its next request: the
// front end is closing.
func (fc *frontConn) wake() {
	fc.mu.Lock()
	if fc.idle {
		fc.nc.SetReadDeadline(aLongTimeAgo)
	}
	fc.mu.Unlock()
}

// readHead reads the request's head into fc.raw and parses it into
// fc.req; n is its length (still in br), or -1 when the connection is to
// be closed (it closed or timed out mid-head), and ok says whether the
// front end serves it. A head that is not complete in the read buffer,
// or has a line not ended by CRLF, is not the front end's.
func (fc *frontConn) readHead() (n int, ok bool) {
	deadline := !fc.served // set by awaitRequest
	for {
		buf, _ := fc.br.Peek(fc.br.Buffered())
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			n = i + 4
			if hasBareLF(buf[:n]) {
				return n, false
			}
			fc.raw = append(fc.raw[:0], buf[:n]...)
			return n, parseFrontRequest(fc.raw, &fc.req)
		}
		if len(buf) >= fc.br.Size() || hasBareLF(buf) {
			return 0, false
		}
		if !deadline {
			fc.nc.SetReadDeadline(time.Now().Add(fc.f.to.header))
			deadline, fc.stale = true, true
		}
		if _, err := fc.br.Peek(len(buf) + 1); err != nil {
			return -1, false
		}
	}
}

// hasBareLF reports whether b has a LF that no CR comes before.
func hasBareLF(b []byte) bool {
	for i := bytes.IndexByte(b, '\n'); i >= 0; {
		if i == 0 || b[i-1] != '\r' {
			return true
		}
		j := bytes.IndexByte(b[i+1:], '\n')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// serveRequest serves fc.req through the route pr; false when the
// connection is to be closed after it.
func (fc *frontConn) serveRequest(pr *proxyRoute) bool {
	s := fc.f.s
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	f := fc.f
	fc.mu.Lock()
	fc.serving, fc.startTick = true, f.tick.Load()
	fc.mu.Unlock()
	if f.dozing.Load() {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
	keep := fc.exchangeAndRelay(pr)
	fc.mu.Lock()
	fc.serving = false
	watched := fc.watching
	fc.mu.Unlock()
	if watched {
		// watch runs (or ran): end it, and wait for it to leave the
		// reader.
		fc.watchStop.Store(true)
		fc.nc.SetReadDeadline(aLongTimeAgo)
		<-fc.watchDone
		fc.watchStop.Store(false)
		fc.stale = true
		fc.mu.Lock()
		fc.watching = false
		fc.mu.Unlock()
	}
	return keep && !fc.req.close && fc.ctx.Err() == nil
}

// watchNow starts watch at once, if it has not started for this request.
func (fc *frontConn) watchNow() {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.startWatch()
}

// startWatch starts watch unless it runs or ran for this request; fc.mu
// is held.
func (fc *frontConn) startWatch() {
	if fc.serving && !fc.watching {
		fc.watching = true
		go fc.watch()
	}
}

// watch waits, on a goroutine of its own, for the client's connection to
// close while its request is served, and then cancels the request: its
// context ends and the upstream connection of the attempt in progress is
// cut. The client's next bytes (a pipelined request) stay in the reader.
// It ends when the request is over (serveRequest sets watchStop and
// wakes the read).
func (fc *frontConn) watch() {
	defer func() { fc.watchDone <- struct{}{} }()
	for {
		_, err := fc.br.Peek(1)
		switch {
		case err == nil:
			return // the client sent more: it is there
		case isDeadline(err):
			if fc.watchStop.Load() {
				return
			}
			// The deadline of the head's wait: the request takes longer.
			fc.nc.SetReadDeadline(time.Now().Add(fc.f.to.idle))
			if fc.watchStop.Load() {
				return
			}
		default:
			fc.clientGone()
			return
		}
	}
}

// clientGone cancels the request in progress: the client closed its
// connection.
func (fc *frontConn) clientGone() {
	fc.ctx.cancel()
	fc.mu.Lock()
	if fc.up != nil {
		fc.up.cut()
	}
	fc.mu.Unlock()
}

// setUp records the upstream connection of the attempt in progress (nil:
// none), which clientGone cuts.
func (fc *frontConn) setUp(c *upstreamConn) {
	fc.mu.Lock()
	fc.up = c
	fc.mu.Unlock()
}

// dateCache holds the Date value of the current second, for answers whose
// upstream sent none (RFC 9110 §6.6.1: a proxy adds one). Safe for
// concurrent use.
type dateCache struct {
	v atomic.Pointer[dateValue]
}

type dateValue struct {
	sec int64
	b   []byte
}

func (d *dateCache) get(now time.Time) []byte {
	sec := now.Unix()
	if v := d.v.Load(); v != nil && v.sec == sec {
		return v.b
	}
	v := &dateValue{sec: sec, b: now.UTC().AppendFormat(nil, "Mon, 02 Jan 2006 15:04:05 GMT")}
	d.v.Store(v)
	return v.b
}
