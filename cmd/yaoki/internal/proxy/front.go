package proxy

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// front is yaoki proxy's own HTTP/1.1 front end. It serves the requests
// that make up nearly all of a sidecar's traffic itself, byte by byte on
// the client's connection: an HTTP/1.1 GET or HEAD without a body, whose
// head is plain (see parseFrontRequest), to a route that sends it to a
// plain-http upstream without hedging. Every other connection goes to
// net/http's server, which serves it through httputil.ReverseProxy and
// httpretry.Transport: the listener front returns is the one that server
// accepts from, and it gets a connection, the bytes already read
// included, the moment one of its requests is not one of those. Both
// paths apply the same rules (docs/proxy.md); the front end exists
// because net/http's server and reverse proxy cost three times the CPU of
// the proxying itself, per request.
//
// The requests it takes are retried by the same decision core
// (retry.Loop, through retry.DoValueWith), with the route transport's guards
// (its per-host budget, breaker and throttle, shared with the requests
// net/http serves, and with the fleet through Redis), its statuses,
// Retry-After and RateLimit hints through httpretry.Hint, and the
// classification of httpretry.Classify.
//
// It is safe for concurrent use; Close stops it, and wait waits for its
// connections to end.
type front struct {
	s       *Server
	ln      net.Listener
	handoff chan net.Conn // to the net/http server's Accept
	done    chan struct{} // closed by Close
	failed  chan struct{} // closed when ln's Accept fails for good
	failErr error         // why, set before failed is closed

	to frontTimeouts // the bounds of the client connections' waits

	closeOnce sync.Once
	closing   atomic.Bool
	mu        sync.Mutex
	conns     map[*frontConn]struct{}
	wg        sync.WaitGroup // the connections being served

	// The watchdog (watchdog): tick counts its periods; it dozes (waits
	// on kick) while no request is served.
	tick   atomic.Int64
	dozing atomic.Bool
	kick   chan struct{}
}

// Timeouts of a client's connection between and within request heads,
// the front end's and the net/http server's (command.go).
const (
	// clientIdleTimeout is how long a connection may wait for its next
	// request (http.Server.IdleTimeout).
	clientIdleTimeout = 2 * time.Minute
	// clientHeaderTimeout is how long a request's head may take to
	// arrive (http.Server.ReadHeaderTimeout).
	clientHeaderTimeout = 10 * time.Second
)

// Listener starts serving s on ln with the proxy's own HTTP/1.1 front
// end, and returns the listener to hand to the http.Server that serves s
// for everything else (http.Server.Serve): it accepts the connections the
// front end hands over. Closing it (http.Server.Shutdown and Close do)
// stops the front end from accepting; Shutdown then waits for its
// connections as for the server's. Call it once per Server.
func (s *Server) Listener(ln net.Listener) net.Listener {
	return s.listen(ln, frontTimeouts{idle: clientIdleTimeout, header: clientHeaderTimeout})
}

// frontTimeouts are the bounds of a client connection's waits on the
// front end: clientIdleTimeout and clientHeaderTimeout, which tests
// shorten.
type frontTimeouts struct{ idle, header time.Duration }

// listen is Listener with the timeouts to.
func (s *Server) listen(ln net.Listener, to frontTimeouts) net.Listener {
	f := &front{s: s, ln: ln, handoff: make(chan net.Conn), done: make(chan struct{}), failed: make(chan struct{}),
		conns: map[*frontConn]struct{}{}, kick: make(chan struct{}, 1), to: to}
	s.front.Store(f)
	go f.accept()
	go f.watchdog()
	return f
}

// watchdog starts watching the client of each request that has seen two
// of its ticks (10 to 20 ms; frontConn.watch), every watchTick while
// requests are served; while none is, it waits for one (kick) without a
// timer. It ends with Close.
func (f *front) watchdog() {
	t := time.NewTimer(watchTick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-f.done:
			return
		}
		tick := f.tick.Add(1)
		if f.scan(tick) {
			t.Reset(watchTick)
			continue
		}
		// Nothing served: doze until a request begins. The scan after
		// dozing is set finds a request that began before it was.
		f.dozing.Store(true)
		if f.scan(tick) {
			f.dozing.Store(false)
			t.Reset(watchTick)
			continue
		}
		select {
		case <-f.kick:
		case <-f.done:
			return
		}
		f.dozing.Store(false)
		t.Reset(watchTick)
	}
}

// scan starts the watches due at tick, and reports whether any request
// is served.
func (f *front) scan(tick int64) (serving bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for fc := range f.conns {
		fc.mu.Lock()
		if fc.serving {
			serving = true
			if tick-fc.startTick >= 2 {
				fc.startWatch()
			}
		}
		fc.mu.Unlock()
	}
	return serving
}

// accept accepts the connections of ln and serves each on a goroutine of
// its own, until Close or a lasting failure of ln.
func (f *front) accept() {
	var delay time.Duration
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			if f.closing.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporaryAccept(err) {
				// Out of file descriptors and the like: wait and try
				// again, as net/http's server does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-f.done:
					t.Stop()
					return
				}
				continue
			}
			f.failErr = err
			close(f.failed)
			return
		}
		delay = 0
		fc := newFrontConn(f, nc)
		f.mu.Lock()
		if f.closing.Load() {
			f.mu.Unlock()
			nc.Close()
			return
		}
		f.conns[fc] = struct{}{}
		f.wg.Add(1)
		f.mu.Unlock()
		go fc.serve()
	}
}

// isTemporaryAccept reports whether an Accept error is one that passes
// (EMFILE, ENFILE, ECONNABORTED, ...).
func isTemporaryAccept(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// Accept returns the next connection the front end hands over.
func (f *front) Accept() (net.Conn, error) {
	select {
	case c := <-f.handoff:
		return c, nil
	case <-f.done:
		return nil, net.ErrClosed
	case <-f.failed:
		return nil, f.failErr
	}
}

// Close stops accepting (closing ln), and closes the connections that
// wait for a request; those serving one close after its answer.
func (f *front) Close() error {
	var err error
	f.closeOnce.Do(func() {
		f.mu.Lock()
		f.closing.Store(true)
		close(f.done)
		for fc := range f.conns {
			fc.wake()
		}
		f.mu.Unlock()
		err = f.ln.Close()
	})
	return err
}

// Addr is ln's address.
func (f *front) Addr() net.Addr { return f.ln.Addr() }

// wait waits until every connection the front end serves has ended, or
// ctx ends; then it closes those left, waits for them to end, and
// returns ctx's error with the calls that were in flight as ctx ended
// (Server.inFlight: net/http's and the front end's), before any was cut.
func (f *front) wait(ctx context.Context) (inFlight int64, err error) {
	ended := make(chan struct{})
	go func() {
		f.wg.Wait()
		close(ended)
	}()
	select {
	case <-ended:
		return 0, nil
	case <-ctx.Done():
	}
	inFlight = f.s.inFlight.Load()
	f.mu.Lock()
	for fc := range f.conns {
		fc.nc.Close()
	}
	f.mu.Unlock()
	<-ended
	return inFlight, ctx.Err()
}

// give hands nc, with what br holds of it, to the net/http server; it
// closes nc when the front end is closed.
func (f *front) give(nc net.Conn, br *bufio.Reader) {
	var c net.Conn = nc
	if br.Buffered() > 0 {
		c = &handedConn{Conn: nc, br: br}
	}
	select {
	case f.handoff <- c:
	case <-f.done:
		nc.Close()
	case <-f.failed:
		nc.Close()
	}
}

// handedConn is a connection handed to the net/http server with bytes
// the front end had read of it: they are read first.
type handedConn struct {
	net.Conn
	br *bufio.Reader // drained, then nc
}

func (c *handedConn) Read(p []byte) (int, error) {
	if c.br != nil {
		if c.br.Buffered() > 0 {
			return c.br.Read(p)
		}
		c.br = nil
	}
	return c.Conn.Read(p)
}

// CloseWrite passes to the TCP connection: net/http's server ends its
// side first when it closes a connection whose request body it did not
// read (its closeWriteAndWait), so that the client reads the answer and a
// clean end before the close resets the connection.
func (c *handedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// SetLinger passes to the TCP connection, for resetConn.
func (c *handedConn) SetLinger(sec int) error {
	if l, ok := c.Conn.(interface{ SetLinger(int) error }); ok {
		return l.SetLinger(sec)
	}
	return nil
}

// connCtx is the context of a client connection's requests on the front
// end: cancelled when the client goes away (frontConn.watch), after which
// the connection serves nothing more. It has no deadline and no values,
// and its Done channel is made only when asked for: a request costs no
// allocation for it.
type connCtx struct {
	mu        sync.Mutex
	done      chan struct{}
	cancelled atomic.Bool
}

func (c *connCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *connCtx) Value(any) any               { return nil }

func (c *connCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.cancelled.Load() {
			close(c.done)
		}
	}
	return c.done
}

func (c *connCtx) Err() error {
	if c.cancelled.Load() {
		return context.Canceled
	}
	return nil
}

func (c *connCtx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancelled.Swap(true) {
		return
	}
	if c.done != nil {
		close(c.done)
	}
}

// errClientGone is what a request ends with when its client closed the
// connection while it was served.
var errClientGone = errors.New("proxy: the client closed its connection")

// aLongTimeAgo is a deadline in the past: it ends any read or write
// waiting on a connection.
var aLongTimeAgo = time.Unix(1, 0)

// isDeadline reports whether err is a read or write that passed its
// deadline.
func isDeadline(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
