package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

// frontProxy is the proxy of one route served on loopback through the
// front end (Server.Listener), as yaoki proxy serves it, with a count of
// the connections the front end handed to net/http's server.
type frontProxy struct {
	s      *Server
	srv    *httptest.Server
	addr   string
	handed atomic.Int32
}

// newFrontProxy serves the proxy of the route rc to upstream; it closes
// when the test ends.
func newFrontProxy(t *testing.T, upstream string, rc Route) *frontProxy {
	t.Helper()
	return newFrontProxyOf(t, &Server{}, upstream, rc)
}

// newFrontProxyOf is newFrontProxy for the Server s, its exported fields
// set.
func newFrontProxyOf(t *testing.T, s *Server, upstream string, rc Route, timeouts ...frontTimeouts) *frontProxy {
	t.Helper()
	up, err := neturl.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rc.Name, rc.Upstream = "--upstream", up
	base := newUpstreamTransport()
	t.Cleanup(base.CloseIdleConnections)
	s.base, s.buffers, s.stderr = base, &bufferPool{}, io.Discard
	fp := &frontProxy{s: s}
	rs, err := fp.s.build(&Config{Routes: []*Route{&rc}})
	if err != nil {
		t.Fatal(err)
	}
	if rs.list[0].front == nil {
		t.Fatalf("the route to %s is not one the front end serves", upstream)
	}
	fp.s.routes.Store(rs)
	t.Cleanup(rs.close)
	fp.srv = httptest.NewUnstartedServer(fp.s)
	ft := frontTimeouts{idle: clientIdleTimeout, header: clientHeaderTimeout}
	if len(timeouts) > 0 {
		ft = timeouts[0]
	}
	fp.srv.Listener = &handoffCounter{Listener: fp.s.listen(fp.srv.Listener, ft), n: &fp.handed}
	fp.srv.Start()
	fp.addr = fp.srv.Listener.Addr().String()
	t.Cleanup(func() {
		// The client connections the test opened are closed (their
		// cleanups run first): every one the front end served ends.
		fp.srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a bound on the failure, not a wait
		defer cancel()
		if _, err := fp.s.front.Load().wait(ctx); err != nil {
			t.Errorf("the front end still served connections 10 s after the test: %v", err)
		}
	})
	return fp
}

// handoffCounter counts the connections the front end hands over.
type handoffCounter struct {
	net.Listener
	n *atomic.Int32
}

func (l *handoffCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// dial opens a client connection to the proxy, closed when the test
// ends, with a deadline that bounds a failure (never a wait a passing
// test takes).
func (fp *frontProxy) dial(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", fp.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// conns returns how many client connections the front end serves.
func (fp *frontProxy) conns() int {
	f := fp.s.front.Load()
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.conns)
}

// eventually polls cond until it holds, failing t with what after a
// bound that only a failure reaches.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what)
		}
		time.Sleep(time.Millisecond) // polling a real server's state, not a wait for an outcome
	}
}

// readFinal reads the final answer to a request of method from br, its
// body whole: err is the body's error (a cut), 1xx answers are returned
// in early.
func readFinal(br *bufio.Reader, method string) (resp *http.Response, body string, early []*http.Response, err error) {
	for {
		resp, err = http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			return nil, "", early, err
		}
		if resp.StatusCode >= 200 {
			break
		}
		early = append(early, resp)
	}
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), early, err
}

// answersByPath is a raw upstream that answers each request with the
// bytes answers holds for its path, and closes the connection after the
// answers whose path starts with /close.
func answersByPath(t *testing.T, answers map[string]string) string {
	t.Helper()
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			a, ok := answers[req.URL.Path]
			if !ok {
				t.Errorf("upstream: no answer for %s", req.URL.Path)
				return
			}
			io.WriteString(c, a)
			if strings.HasPrefix(req.URL.Path, "/close") {
				return
			}
		}
	})
	return url
}

func TestFrontRelaysEachFraming(t *testing.T) {
	// Each framing of an upstream's answer reaches the client framed as
	// net/http's server would frame it (an answer of unknown length
	// chunked), and the client's connection is left at the next answer's
	// start: a second request on it is answered right. The front end
	// serves every request here; none is handed over.
	url := answersByPath(t, map[string]string{
		"/length":        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"/chunked":       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n3\r\nhel\r\n2;ext=1\r\nlo\r\n0\r\nX-Sum: 42\r\n\r\n",
		"/close10":       "HTTP/1.0 200 OK\r\n\r\nhello",
		"/close11":       "HTTP/1.1 200 OK\r\n\r\nhello",
		"/head":          "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
		"/204":           "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
		"/304":           "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 5\r\n\r\n",
		"/103":           "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"/999":           "HTTP/1.1 999 Odd\r\nContent-Length: 5\r\n\r\nhello",
		"/close10te":     "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"/close10telen":  "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"/closetrailer":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n5\r\nhello\r\n0\r\nContent-Length: 9\r\n\r\n",
		"/closeboth":     "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"/closetwolens":  "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
		"/closebadchunk": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
	})
	fp := newFrontProxy(t, url, Route{Policy: retry.Policy{MaxAttempts: 1}})
	for _, c := range []struct {
		method, path string
		status       int
		body         string
		chunked      bool
		length       int64 // the client's ContentLength, when not chunked
		trailer      string
		early        int
		cut          bool // the body ends in an error (a malformed chunk relayed as a cut)
	}{
		{"GET", "/length", 200, "hello", false, 5, "", 0, false},
		{"GET", "/chunked", 200, "hello", true, -1, "42", 0, false},
		{"GET", "/close10", 200, "hello", true, -1, "", 0, false},
		{"GET", "/close11", 200, "hello", true, -1, "", 0, false},
		{"HEAD", "/head", 200, "", false, 5, "", 0, false},
		{"GET", "/204", 204, "", false, 0, "", 0, false},
		{"GET", "/304", 304, "", false, 0, "", 0, false},
		{"GET", "/103", 200, "hello", false, 5, "", 1, false},
		{"GET", "/999", 999, "hello", false, 5, "", 0, false},
		// An HTTP/1.0 answer has no transfer coding: net/http reads its
		// body as it came, to the close or by its Content-Length.
		{"GET", "/close10te", 200, "5\r\nhello\r\n0\r\n\r\n", true, -1, "", 0, false},
		{"GET", "/close10telen", 200, "5\r\n", false, 3, "", 0, false},
		// What net/http refuses to read is the upstream's fault: 502.
		{"GET", "/closetrailer", 502, "", false, 0, "", 0, false},
		{"GET", "/closetwolens", 502, "", false, 0, "", 0, false},
		// Content-Length and chunked: chunked wins (RFC 9112 §6.3).
		{"GET", "/closeboth", 200, "hello", true, -1, "", 0, false},
		{"GET", "/closebadchunk", 200, "", true, -1, "", 0, true},
	} {
		conn, br := fp.dial(t)
		io.WriteString(conn, c.method+" "+c.path+" HTTP/1.1\r\nHost: front\r\n\r\n")
		resp, body, early, err := readFinal(br, c.method)
		if c.cut {
			// Cut before its first byte, or after its head: either way
			// never a whole answer.
			if err == nil {
				t.Errorf("%s %s: %d %q; want a cut", c.method, c.path, resp.StatusCode, body)
			}
			continue
		}
		if resp == nil {
			t.Errorf("%s %s: %v", c.method, c.path, err)
			continue
		}
		if c.status == 502 {
			if resp.StatusCode != 502 {
				t.Errorf("%s %s: %d %q, want 502 (net/http does not read the answer)", c.method, c.path, resp.StatusCode, body)
			}
			continue
		}
		chunked := len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
		if err != nil || resp.StatusCode != c.status || body != c.body || chunked != c.chunked || !chunked && resp.ContentLength != c.length ||
			resp.Trailer.Get("X-Sum") != c.trailer || len(early) != c.early {
			t.Errorf("%s %s: %d %q (err %v), chunked %v, length %d, trailer %q, %d 1xx; want %d %q, chunked %v, length %d, trailer %q, %d 1xx",
				c.method, c.path, resp.StatusCode, body, err, chunked, resp.ContentLength, resp.Trailer.Get("X-Sum"), len(early),
				c.status, c.body, c.chunked, c.length, c.trailer, c.early)
			continue
		}
		for _, e := range early {
			if v, ok := e.Header["Content-Length"]; ok {
				t.Errorf("%s %s: a %d with Content-Length %q, want none (net/http's server writes none on a 1xx)", c.method, c.path, e.StatusCode, v)
			}
		}
		// The connection is at the next answer's start.
		io.WriteString(conn, "GET /length HTTP/1.1\r\nHost: front\r\n\r\n")
		if resp, body, _, err := readFinal(br, "GET"); err != nil || resp.StatusCode != 200 || body != "hello" {
			t.Errorf("after %s %s: the next request on the connection got %v %q, %v; want 200 hello", c.method, c.path, resp, body, err)
		}
	}
	if n := fp.handed.Load(); n != 0 {
		t.Errorf("%d connections handed to net/http, want 0: the front end serves these", n)
	}
}

func TestFrontCutAnswerSeenCut(t *testing.T) {
	// The fault: the upstream's connection ends in the middle of an
	// answer's body, closed or reset, in each framing. The client must
	// see a cut (a body short of its Content-Length, a chunked body
	// without its last chunk), never an answer that looks whole. The
	// upstream cuts once the client has the first part: the proxy's read
	// of the rest waits then.
	relayed := make(chan struct{})
	defer close(relayed)
	heads := map[string]string{
		"/length":  "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello",
		"/chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
		"/inchunk": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n10\r\nhel",
		"/close10": "HTTP/1.0 200 OK\r\n\r\nhello",
		"/close11": "HTTP/1.1 200 OK\r\n\r\nhello",
	}
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		req, ok := readRequest(t, br)
		if !ok {
			return
		}
		io.WriteString(c, heads[req.URL.Path])
		select {
		case <-relayed:
		case <-time.After(10 * time.Second): // a bound on the failure, not a wait
		}
		if req.URL.Query().Get("reset") != "" {
			c.(*net.TCPConn).SetLinger(0)
		}
		c.Close()
	})
	fp := newFrontProxy(t, url, Route{Policy: retry.Policy{MaxAttempts: 1}})
	for _, path := range []string{"/length", "/chunked", "/inchunk", "/close10", "/close11"} {
		for _, how := range []string{"close", "reset"} {
			if how == "close" && strings.HasPrefix(path, "/close") {
				continue // a close is where such a body ends
			}
			conn, br := fp.dial(t)
			io.WriteString(conn, "GET "+path+"?"+how+"=1 HTTP/1.1\r\nHost: front\r\n\r\n")
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s, %s: %v", path, how, err)
			}
			part := make([]byte, 5)
			if _, err := io.ReadFull(resp.Body, part); err != nil || string(part) != "hello" {
				t.Fatalf("%s, %s: the client got %q, %v; want the first part's hello", path, how, part, err)
			}
			relayed <- struct{}{}
			rest, err := io.ReadAll(resp.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("%s, %s: the cut answer ended with %q, %v; want a cut (unexpected EOF or a reset)", path, how, rest, err)
			}
		}
	}
}

// afterBound is a channel that fires after a bound that only a failure
// reaches.
func afterBound() <-chan time.Time { return time.After(10 * time.Second) }
