package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/internal/leakcheck"
)

// connCounter counts the connections a test server accepted and closed.
type connCounter struct {
	opened, closed atomic.Int32
	changed        chan struct{} // a connection was closed
}

func newConnCounter() *connCounter { return &connCounter{changed: make(chan struct{}, 1)} }

func (c *connCounter) hook(_ net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		c.opened.Add(1)
	case http.StateClosed, http.StateHijacked:
		c.closed.Add(1)
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
}

// waitClosed waits until every connection the server accepted is closed.
func (c *connCounter) waitClosed(t *testing.T) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for c.closed.Load() != c.opened.Load() {
		select {
		case <-c.changed:
		case <-timeout:
			t.Fatalf("the upstream has %d connections open, want none", c.opened.Load()-c.closed.Load())
		}
	}
}

// upstreamServer starts a loopback server with h, counting its
// connections, and a transport to it; both are closed, and the test fails
// if a goroutine is left, when the test ends.
func upstreamServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *upstreamTransport, *connCounter) {
	t.Helper()
	before := leakcheck.Snapshot()
	cc := newConnCounter()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = cc.hook
	srv.Start()
	u := newUpstreamTransport()
	t.Cleanup(func() {
		u.CloseIdleConnections()
		cc.waitClosed(t)
		srv.Close()
		if leaked := leakcheck.Leaked(before, leakcheck.Settle); len(leaked) > 0 {
			t.Errorf("%d goroutine(s) left:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	})
	return srv, u, cc
}

// get sends a GET through u and returns the status and the body read
// whole.
func get(t *testing.T, u http.RoundTripper, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	resp, err := u.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

func TestUpstreamKeepAlive(t *testing.T) {
	srv, u, cc := upstreamServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			io.WriteString(w, "one ")
			w.(http.Flusher).Flush()
			io.WriteString(w, "two")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			io.WriteString(w, "ok "+r.URL.RawQuery)
		}
	})
	for i := range 10 {
		path := []string{"/x?n=%d", "/chunked", "/empty"}[i%3]
		if strings.Contains(path, "%d") {
			path = fmt.Sprintf(path, i)
		}
		code, body := get(t, u, srv.URL+path)
		want := map[string]string{"/chunked": "one two", "/empty": ""}[path]
		if strings.HasPrefix(path, "/x") {
			want = fmt.Sprintf("ok n=%d", i)
		}
		if body != want {
			t.Errorf("GET %s: got %d %q, want %q", path, code, body, want)
		}
	}
	head, _ := http.NewRequest("HEAD", srv.URL+"/x", nil)
	resp, err := u.RoundTrip(head)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := cc.opened.Load(); n != 1 {
		t.Errorf("11 requests in turn opened %d connections, want 1 kept alive", n)
	}
	if n := u.idleCount(); n != 1 {
		t.Errorf("%d idle connections, want 1", n)
	}
}

// rawUpstream serves each connection with serve on a loopback listener,
// and counts the connections.
func rawUpstream(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String(), &n
}

// readRequest reads one request's header from br, failing the test on
// anything but a clean end of the connection.
func readRequest(t *testing.T, br *bufio.Reader) (*http.Request, bool) {
	req, err := http.ReadRequest(br)
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			t.Errorf("upstream: reading a request: %v", err)
		}
		return nil, false
	}
	return req, true
}

func TestUpstreamSameBytesAsTransport(t *testing.T) {
	// The direct path writes what http.Transport writes for the same
	// request.
	for _, ua := range []string{"", "curl/8"} {
		transport, direct := wireOfBoth(t, func(url string) *http.Request {
			req, _ := http.NewRequest("GET", url+"/a/b?c=d", nil)
			req.Header["X-Forwarded-For"] = []string{"10.0.0.1"}
			req.Header["Via"] = []string{"1.1 yaoki"}
			req.Header["Attempt-Count"] = []string{"1"}
			req.Header.Set("User-Agent", ua) // "": none, as httputil.ReverseProxy asks
			return req
		})
		if transport != direct {
			t.Errorf("User-Agent %q: the direct path wrote\n%q\nhttp.Transport wrote\n%q", ua, direct, transport)
		}
	}
}

// wireOfBoth sends the request that newReq makes for an upstream's URL
// through http.Transport and through the direct path, to an upstream that
// keeps each request as it came on the wire, and returns the two.
func wireOfBoth(t *testing.T, newReq func(url string) *http.Request) (transport, direct string) {
	t.Helper()
	seen := make(chan string, 2)
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			msg, err := readMessage(br)
			if err != nil {
				return
			}
			seen <- msg
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	u := newUpstreamTransport()
	defer u.CloseIdleConnections()
	var wire [2]string
	for i, rt := range []http.RoundTripper{u.fallback, u} {
		req := newReq(url)
		if i == 1 && !u.direct(req) {
			t.Fatal("the request does not take the direct path")
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		wire[i] = <-seen
	}
	return wire[0], wire[1]
}

// readMessage reads one request from br as it came on the wire: its
// header and its body (by Content-Length).
func readMessage(br *bufio.Reader) (string, error) {
	var msg strings.Builder
	length := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		msg.WriteString(line)
		if name, value, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "Content-Length") {
			length, _ = strconv.Atoi(strings.TrimSpace(value))
		}
		if line == "\r\n" {
			break
		}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		return "", err
	}
	msg.Write(body)
	return msg.String(), nil
}

func TestUpstreamClosesIdleConnection(t *testing.T) {
	// The fault: the upstream answers with keep-alive, then closes the
	// connection while it is idle in the pool (as an upstream whose
	// keep-alive timeout passes does). The next GET finds it closed, when
	// the pool takes it or when the request is written on it, and goes on
	// a new connection.
	url, conns := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(t, br); !ok {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	u := newUpstreamTransport()
	defer u.CloseIdleConnections()
	for i := range 3 {
		if code, body := get(t, u, url+"/"); code != 200 || body != "ok" {
			t.Fatalf("GET %d: got %d %q, want 200 ok", i+1, code, body)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("3 GETs on connections closed after each answer: %d connections, want 3", n)
	}
}

func TestUpstreamUnsolicitedAnswer(t *testing.T) {
	// The fault: an upstream that answers a request, then sends a second
	// answer nobody asked for while the connection is idle in the pool (a
	// handler that writes after its answer, a body sent after a HEAD's).
	// Read as the answer to the next request, it would reach another
	// client, and every answer after it would be one late. The pool finds
	// the bytes when it takes the connection again, closes it, and sends
	// the request on a new one.
	extra, extraSent := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	url, conns := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(t, br); !ok {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nyours\n")
		if first.CompareAndSwap(false, true) {
			<-extra
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nnot yours!\n")
			close(extraSent)
			io.Copy(io.Discard, br) // until the proxy closes it (a reset: it left bytes unread)
			return
		}
		for {
			if _, ok := readRequest(t, br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nyours\n")
		}
	})
	u := newUpstreamTransport()
	defer u.CloseIdleConnections()
	if code, body := get(t, u, url+"/"); code != 200 || body != "yours\n" {
		t.Fatalf("GET 1: got %d %q, want 200 yours", code, body)
	}
	close(extra)
	<-extraSent // on loopback, in the proxy's socket once written
	for i := 2; i <= 3; i++ {
		if code, body := get(t, u, url+"/"); code != 200 || body != "yours\n" {
			t.Fatalf("GET %d: got %d %q, want 200 yours (its own answer, not the one sent unasked)", i, code, body)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("upstream connections: %d, want 2 (the one with the unsolicited answer closed, one new)", n)
	}
}

func TestUpstreamIdleClosedFoundBeforeSending(t *testing.T) {
	// An idle connection the upstream has closed is found when the pool
	// takes it, before the request is written: the request goes on a new
	// connection without the resend that a write on the closed one would
	// need (which a request that may not be sent again could not have).
	closed := make(chan struct{})
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(t, br); !ok {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		c.(*net.TCPConn).CloseWrite() // the FIN reaches the proxy's socket
		close(closed)
		io.Copy(io.Discard, br) // a request written here would be read, not answered
	})
	u := newUpstreamTransport()
	defer u.CloseIdleConnections()
	if code, body := get(t, u, url+"/"); code != 200 || body != "ok" {
		t.Fatalf("GET 1: got %d %q, want 200 ok", code, body)
	}
	<-closed
	c := u.get(hostPort(mustURL(t, url)))
	if c == nil {
		t.Fatal("the answered connection is not in the pool")
	}
	if c.quiet() {
		t.Error("quiet() = true for a connection whose upstream has sent its FIN, want false")
	}
	c.nc.Close()
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestUpstreamAnswerEndsConnection(t *testing.T) {
	// Answers after which the connection is not kept: it is closed by
	// both sides, not left in the pool, and the next GET opens another.
	for _, answer := range []string{
		"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbye",
		"HTTP/1.1 200 OK\r\n\r\nbye", // no length: the body ends with the connection
		"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nbye",
	} {
		url, conns := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
			if _, ok := readRequest(t, br); ok {
				io.WriteString(c, answer)
			}
		})
		u := newUpstreamTransport()
		for range 2 {
			if code, body := get(t, u, url); code != 200 || body != "bye" {
				t.Fatalf("%q: got %d %q, want 200 bye", answer, code, body)
			}
			if n := u.idleCount(); n != 0 {
				t.Errorf("%q: %d idle connections after the answer, want 0", answer, n)
			}
		}
		if n := conns.Load(); n != 2 {
			t.Errorf("%q: 2 GETs opened %d connections, want 2", answer, n)
		}
	}
}

func TestUpstreamTrailersAnd1xx(t *testing.T) {
	srv, u, _ := upstreamServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.Header().Set("Trailer", "X-Sum")
		io.WriteString(w, "body")
		w.Header().Set("X-Sum", "42")
	})
	var got []string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		got = append(got, fmt.Sprintf("%d %s", code, h.Get("Link")))
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", srv.URL, nil)
	resp, err := u.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "body" || resp.Trailer.Get("X-Sum") != "42" {
		t.Errorf("got body %q, trailer X-Sum %q, want body and 42", b, resp.Trailer.Get("X-Sum"))
	}
	if len(got) != 1 || got[0] != "103 </style.css>; rel=preload" {
		t.Errorf("1xx answers seen: %q, want the 103 with its Link", got)
	}
}

func TestUpstreamCancelMidBody(t *testing.T) {
	// The client goes away while the body streams: the read fails at
	// once with the context's error, and the upstream's request ends.
	upstreamDone := make(chan struct{})
	srv, u, cc := upstreamServer(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(upstreamDone)
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := u.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first" {
		t.Fatalf("first part: %q, %v", buf, err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Errorf("reading after the cancel: %v, want context.Canceled", err)
	}
	resp.Body.Close()
	select {
	case <-upstreamDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream's request did not end after the cancel")
	}
	cc.waitClosed(t)
}

func TestUpstreamCancelBeforeAnswer(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan struct{})
	srv, u, cc := upstreamServer(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("another attempt won")
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	go func() {
		<-arrived
		cancel(cause)
	}()
	resp, err := u.RoundTrip(req)
	if resp != nil || !errors.Is(err, cause) {
		t.Errorf("RoundTrip cancelled while waiting for the answer: %v, %v; want the context's cause", resp, err)
	}
	cc.waitClosed(t)
}

func TestUpstreamEarlyClose(t *testing.T) {
	// A body closed before its end: the connection is closed, not kept
	// with the rest of the answer in it.
	srv, u, cc := upstreamServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 100000))
	})
	req, _ := http.NewRequest("GET", srv.URL, nil)
	resp, err := u.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 10))
	resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 1)); !errors.Is(err, http.ErrBodyReadAfterClose) {
		t.Errorf("Read after Close: %v, want http.ErrBodyReadAfterClose", err)
	}
	if code, body := get(t, u, srv.URL); code != 200 || len(body) != 100000 {
		t.Errorf("next GET: %d, %d bytes; want 200 and 100000", code, len(body))
	}
	if n := cc.opened.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the first closed with its body)", n)
	}
}

func TestUpstreamFallback(t *testing.T) {
	// What the direct path does not take goes through http.Transport:
	// a body, a method that is not sent again on its own.
	srv, u, _ := upstreamServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s", r.Method, b)
	})
	for _, c := range []struct {
		method, body string
		direct       bool
	}{{"GET", "", true}, {"POST", "data", false}, {"DELETE", "", false}, {"PUT", "x", false}} {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req, _ := http.NewRequest(c.method, srv.URL, body)
		if got := u.direct(req); got != c.direct {
			t.Errorf("%s with body %q: direct %v, want %v", c.method, c.body, got, c.direct)
		}
		resp, err := u.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := c.method + " " + c.body; string(b) != want {
			t.Errorf("got %q, want %q", b, want)
		}
	}
	keyed, _ := http.NewRequest("DELETE", srv.URL, nil)
	keyed.Header.Set("Idempotency-Key", "k1")
	if !u.direct(keyed) {
		t.Error("a DELETE with an Idempotency-Key does not take the direct path")
	}
}

func TestUpstreamIdleTimeout(t *testing.T) {
	srv, u, cc := upstreamServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	get(t, u, srv.URL)
	addr := strings.TrimPrefix(srv.URL, "http://")
	u.mu.Lock()
	u.prune(addr, time.Now().Add(u.idleTimeout/2))
	u.mu.Unlock()
	if n := u.idleCount(); n != 1 {
		t.Fatalf("%d idle connections after half the idle timeout, want 1", n)
	}
	u.mu.Lock()
	u.prune(addr, time.Now().Add(u.idleTimeout+time.Second))
	u.mu.Unlock()
	if n := u.idleCount(); n != 0 {
		t.Errorf("%d idle connections after the idle timeout, want 0", n)
	}
	cc.waitClosed(t)
}

// idleCount returns the number of idle connections in u's pool.
func (u *upstreamTransport) idleCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, list := range u.idle {
		n += len(list)
	}
	return n
}

func TestHostPort(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:9000/x": "127.0.0.1:9000",
		"http://api.test/x":       "api.test:80",
		"http://[::1]:81/":        "[::1]:81",
		"http://[::1]/":           "[::1]:80",
	} {
		u, _ := url.Parse(raw)
		if got := hostPort(u); got != want {
			t.Errorf("hostPort(%s) = %q, want %q", raw, got, want)
		}
	}
}

func TestUpstreamRefused(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	u := newUpstreamTransport()
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	if _, err := u.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("GET to a closed port: %v, want connection refused", err)
	}
}
