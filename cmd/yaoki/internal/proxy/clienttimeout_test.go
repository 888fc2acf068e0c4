package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The faults of a client that stalls, on virtual time: the proxy and its
// upstream are real net/http servers, reached over net.Pipe connections
// (whose deadlines run on the bubble's clock), and the client writes and
// reads the bytes of HTTP/1.1 itself.

// pipeListener is a net.Listener whose connections are net.Pipe ends.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial connects to the listener.
func (l *pipeListener) dial() (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// pipeProxy serves upstream behind a proxy whose ClientTimeout is
// timeout, both over pipes, and returns a dialer to the proxy. Everything
// is closed when the test ends.
func pipeProxy(t *testing.T, timeout time.Duration, upstream http.Handler) (dial func() net.Conn) {
	t.Helper()
	return pipeRoute(t, timeout, Route{}, io.Discard, upstream)
}

// pipeRoute is pipeProxy for the route rc (its name and upstream set),
// the proxy's log written to stderr. The proxy's pool dials the upstream
// over pipes, on its own path and its fallback http.Transport's.
func pipeRoute(t *testing.T, timeout time.Duration, rc Route, stderr io.Writer, upstream http.Handler) (dial func() net.Conn) {
	t.Helper()
	return pipeServer(t, &Server{ClientTimeout: timeout, stderr: stderr}, rc, upstream)
}

// pipeServer is pipeRoute for the Server s, its exported fields and
// stderr set.
func pipeServer(t *testing.T, s *Server, rc Route, upstream http.Handler) (dial func() net.Conn) {
	t.Helper()
	upL, frontL := newPipeListener(), newPipeListener()
	up := &http.Server{Handler: upstream}
	go up.Serve(upL)
	base := newUpstreamTransport()
	base.dial = func(context.Context, string, string) (net.Conn, error) { return upL.dial() }
	base.fallback.DialContext = base.dial
	s.base, s.buffers = base, &bufferPool{}
	rc.Name, rc.Upstream = "--upstream", &url.URL{Scheme: "http", Host: "upstream.test"}
	rs, err := s.build(&Config{Routes: []*Route{&rc}})
	if err != nil {
		t.Fatal(err)
	}
	s.routes.Store(rs)
	front := &http.Server{Handler: s}
	var ln net.Listener = frontL
	if !s.NetHTTPOnly {
		ln = s.Listener(frontL)
	}
	go front.Serve(ln)
	t.Cleanup(func() {
		front.Close()
		up.Close()
		base.CloseIdleConnections()
		rs.close()
	})
	return func() net.Conn {
		c, err := frontL.dial()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
}

// streamed is an upstream that answers GET /big with n chunks of 1 KiB,
// flushed one by one, and says on ended when its handler returns: at the
// end of the answer, or when its write failed because the proxy closed
// the connection. The answer has a Content-Length: one without it makes
// httputil.ReverseProxy flush through a goroutine that waits on a
// sync.Mutex, which synctest does not count as blocked.
func streamed(n int, ended chan<- error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(n*1024))
		chunk := strings.Repeat("x", 1023) + "\n"
		var err error
		for i := 0; i < n && err == nil; i++ {
			if _, err = io.WriteString(w, chunk); err == nil {
				err = http.NewResponseController(w).Flush()
			}
		}
		if err == nil {
			err = r.Context().Err()
		}
		ended <- err
	})
}

func TestProxyClientTimeoutStalledReader(t *testing.T) {
	// The fault: a client that stops taking the answer (a phone gone
	// into a tunnel; a reader stuck on something else). The proxy's
	// write blocked for ever, holding the upstream's connection and its
	// handler; now the client is given up after ClientTimeout, and the
	// upstream's attempt ends with it.
	synctest.Test(t, func(t *testing.T) {
		ended := make(chan error, 1)
		dial := pipeProxy(t, 10*time.Second, streamed(1024, ended))
		c := dial()
		start := time.Now()
		io.WriteString(c, "GET /big HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
		br := bufio.NewReaderSize(c, 16)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("got %v, %v; want the answer's head", resp, err)
		}
		// The client reads nothing more.
		if err := <-ended; err == nil {
			t.Fatal("the upstream sent the whole answer to a client that took none of it")
		}
		if el := time.Since(start); el < 10*time.Second*7/8 || el > 10*time.Second {
			t.Errorf("the stalled client was given up after %v, want 8.75 s to 10 s (ClientTimeout 10 s)", el)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err == nil {
			t.Error("the answer ended cleanly; want the connection closed mid-answer")
		}
	})
}

func TestProxyClientTimeoutStalledBody(t *testing.T) {
	// The fault: a client that stops sending its request's body
	// (slowloris). The proxy waited for ever; now it closes the
	// connection after ClientTimeout, and the upstream never hears of a
	// body it was not sent whole.
	synctest.Test(t, func(t *testing.T) {
		var upstreamSaw sync.Map
		dial := pipeProxy(t, 10*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			upstreamSaw.Store(r.URL.Path, true)
		}))
		c := dial()
		start := time.Now()
		io.WriteString(c, "PUT /doc HTTP/1.1\r\nHost: proxy.test\r\nContent-Length: 1000\r\n\r\n0123456789")
		got, _ := io.ReadAll(c) // until the proxy closes the connection
		if el := time.Since(start); el < 10*time.Second*7/8 || el > 10*time.Second {
			t.Errorf("the stalled client was given up after %v, want 8.75 s to 10 s (ClientTimeout 10 s)", el)
		}
		if _, ok := upstreamSaw.Load("/doc"); ok {
			t.Error("the upstream got the request of a body cut short")
		}
		if strings.HasPrefix(string(got), "HTTP/1.1 2") {
			t.Errorf("the client got %q, want no success", got)
		}
	})
}

func TestProxyClientTimeoutSlowButSteady(t *testing.T) {
	// A client on a slow link is not a stalled one: a body sent in parts
	// over a minute, with pauses shorter than ClientTimeout, reaches the
	// upstream whole; an upstream that takes longer than ClientTimeout to
	// answer is waited for (that wait is the policy's); and a long answer
	// taken slowly (each of the proxy's writes, at most 32 KiB, within
	// ClientTimeout) reaches the client whole.
	synctest.Test(t, func(t *testing.T) {
		const timeout = 10 * time.Second
		bodies := make(chan string, 1)
		dial := pipeProxy(t, timeout, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			bodies <- string(b)
			time.Sleep(3 * timeout) // virtual: the bubble's clock
			// With a Content-Length (see streamed): without one,
			// httputil.ReverseProxy flushes from a timer's goroutine that
			// can wait on its writer's sync.Mutex, held while the write to
			// the slow client blocks; synctest does not count that wait
			// as blocked, so the bubble's clock stops and the test hangs
			// (seen twice in full runs under load).
			w.Header().Set("Content-Length", fmt.Sprint(1<<20))
			io.WriteString(w, strings.Repeat("y", 1<<20))
		}))
		c := dial()
		start := time.Now()
		io.WriteString(c, "PUT /doc HTTP/1.1\r\nHost: proxy.test\r\nContent-Length: 1000\r\n\r\n")
		for i := 0; i < 10; i++ {
			io.WriteString(c, strings.Repeat(fmt.Sprint(i), 100))
			time.Sleep(timeout / 2) // virtual: the bubble's clock
		}
		br := bufio.NewReaderSize(c, 16)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("got %v, %v; want 200", resp, err)
		}
		n := 0
		buf := make([]byte, 1024)
		for {
			m, err := io.ReadFull(resp.Body, buf)
			n += m
			if err != nil {
				break
			}
			time.Sleep(timeout / 64) // virtual: the bubble's clock; 32 KiB in half of ClientTimeout
		}
		if n != 1<<20 {
			t.Errorf("the client got %d bytes of the answer, want %d", n, 1<<20)
		}
		if b := <-bodies; len(b) != 1000 || !strings.HasPrefix(b, "000") || !strings.HasSuffix(b, "999") {
			t.Errorf("the upstream got a body of %d bytes, want the 1000 sent", len(b))
		}
		if el := time.Since(start); el < 20*timeout {
			t.Errorf("the exchange took %v, want over %v: the test did not pace the client", el, 20*timeout)
		}
	})
}

func TestProxyClientTimeoutZeroWaitsForEver(t *testing.T) {
	// ClientTimeout 0: a client may stall as long as it likes.
	synctest.Test(t, func(t *testing.T) {
		ended := make(chan error, 1)
		dial := pipeProxy(t, 0, streamed(64, ended))
		c := dial()
		io.WriteString(c, "GET /big HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
		br := bufio.NewReaderSize(c, 16)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour) // virtual: the bubble's clock
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || n != 64<<10 {
			t.Errorf("after an hour's stall the client got %d bytes (%v), want %d", n, err, 64<<10)
		}
		if err := <-ended; err != nil {
			t.Errorf("the upstream's answer ended with %v", err)
		}
	})
}

func TestProxyClientTimeoutNotOnUpgrade(t *testing.T) {
	// An upgraded connection (a WebSocket) may be idle for longer than
	// ClientTimeout: no deadline is left on it.
	synctest.Test(t, func(t *testing.T) {
		dial := pipeProxy(t, 10*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "Upgrade")
			w.Header().Set("Upgrade", "echo")
			w.WriteHeader(http.StatusSwitchingProtocols)
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			for {
				b, err := brw.ReadByte()
				if err != nil {
					return
				}
				brw.WriteByte(b)
				brw.Flush()
			}
		}))
		c := dial()
		io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: proxy.test\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("got %v, %v; want 101", resp, err)
		}
		time.Sleep(time.Minute) // virtual: the bubble's clock
		if _, err := c.Write([]byte("a")); err != nil {
			t.Fatalf("writing to the tunnel after a minute's quiet: %v", err)
		}
		if b, err := br.ReadByte(); err != nil || b != 'a' {
			t.Fatalf("the echo after a minute's quiet: %q, %v", b, err)
		}
	})
}
