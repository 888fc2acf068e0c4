package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// keyedPost is a POST with an Idempotency-Key and a body as httpretry
// sends one it kept for retries: of known length, readable again
// (GetBody).
func keyedPost(t *testing.T, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", "k1")
	return req
}

func TestUpstreamBodyDirect(t *testing.T) {
	u := newUpstreamTransport()
	const url = "http://127.0.0.1:1/"
	noGetBody := keyedPost(t, url, "data")
	noGetBody.GetBody = nil
	unknownLength := keyedPost(t, url, "data")
	unknownLength.ContentLength = -1
	unkeyed := keyedPost(t, url, "data")
	unkeyed.Header.Del("Idempotency-Key")
	for _, c := range []struct {
		name   string
		req    *http.Request
		direct bool
	}{
		{"keyed POST", keyedPost(t, url, "data"), true},
		{"keyed POST of maxDirectBody bytes", keyedPost(t, url, strings.Repeat("x", maxDirectBody)), true},
		{"keyed POST of a byte more", keyedPost(t, url, strings.Repeat("x", maxDirectBody+1)), false},
		{"keyed POST whose body cannot be read again", noGetBody, false},
		{"keyed POST of unknown length", unknownLength, false},
		{"POST without a key", unkeyed, false},
	} {
		if got := u.direct(c.req); got != c.direct {
			t.Errorf("%s: direct %v, want %v", c.name, got, c.direct)
		}
	}
}

func TestUpstreamBodySameBytesAsTransport(t *testing.T) {
	// A keyed POST on the direct path is the same bytes on the wire as
	// http.Transport writes: header, then the body by Content-Length.
	transport, direct := wireOfBoth(t, func(url string) *http.Request {
		req := keyedPost(t, url+"/charges", `{"amount":100}`)
		req.Header["Attempt-Count"] = []string{"1"}
		return req
	})
	if transport != direct {
		t.Errorf("the direct path wrote\n%q\nhttp.Transport wrote\n%q", direct, transport)
	}
	if !strings.HasSuffix(direct, "\r\n\r\n"+`{"amount":100}`) {
		t.Errorf("the direct path wrote %q, want the body after the header", direct)
	}
}

// closesAsNextComes serves the first request of each connection with
// answer, then closes the connection when the next request's header
// comes, without answering it: an upstream whose keep-alive timeout passes
// just as the proxy takes the connection again, a race that only the
// write of the request finds.
func closesAsNextComes(t *testing.T, answer func(c net.Conn, req *http.Request)) func(net.Conn, *bufio.Reader) {
	return func(c net.Conn, br *bufio.Reader) {
		req, ok := readRequest(t, br)
		if !ok {
			return
		}
		answer(c, req)
		readRequest(t, br) // then closed
	}
}

func TestUpstreamBodyResent(t *testing.T) {
	// The fault: the upstream closes the connection as the next keyed
	// POST comes, without answering it. The POST, written on the closed
	// connection, fails before any answer and is sent again on a new one
	// with its whole body; the upstream answers each body once, whole.
	got := make(chan string, 8)
	url, conns := rawUpstream(t, closesAsNextComes(t, func(c net.Conn, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		got <- string(b)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	}))
	u := newUpstreamTransport()
	defer u.CloseIdleConnections()
	for i := range 3 {
		body := strings.Repeat(strconv.Itoa(i), 5000)
		resp, err := u.RoundTrip(keyedPost(t, url, body))
		if err != nil {
			t.Fatalf("POST %d: %v", i+1, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if g := <-got; g != body {
			t.Errorf("POST %d: the upstream got %d bytes %.10q…, want %d bytes %.10q…", i+1, len(g), g, len(body), body)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("3 POSTs on connections closed after each answer: %d connections, want 3", n)
	}
	if len(got) != 0 {
		t.Errorf("the upstream got %d bodies more than were sent", len(got))
	}
}

func TestUpstreamBodyEarlyAnswer(t *testing.T) {
	// An upstream that answers before reading the body (a 413) and
	// closes: the client gets the answer, and the connection is not kept.
	url, conns := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(t, br); !ok {
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Content Too Large\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbig")
		io.Copy(io.Discard, br) // the body, unread by the handler, until the proxy closes
	})
	u := newUpstreamTransport()
	defer u.CloseIdleConnections()
	for i := range 2 {
		resp, err := u.RoundTrip(keyedPost(t, url, strings.Repeat("x", maxDirectBody)))
		if err != nil {
			t.Fatalf("POST %d: %v", i+1, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || string(b) != "big" {
			t.Errorf("POST %d: %d %q, want 413 big", i+1, resp.StatusCode, b)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("2 POSTs answered with Connection: close: %d connections, want 2", n)
	}
}

// closeRecorder is a request body that records its Close.
type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error { c.closed.Store(true); return nil }

func TestUpstreamBodyClosed(t *testing.T) {
	// RoundTrip closes the body on every path: sent, and not sent because
	// the upstream cannot be reached.
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if req, ok := readRequest(t, br); ok {
			io.Copy(io.Discard, req.Body)
			io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
		}
	})
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return "http://" + ln.Addr().String()
	}()
	u := newUpstreamTransport()
	defer u.CloseIdleConnections()
	for _, c := range []struct {
		name, url string
		fails     bool
	}{{"sent", url, false}, {"refused", refused, true}} {
		req := keyedPost(t, c.url, "data")
		body := &closeRecorder{Reader: strings.NewReader("data")}
		req.Body = body
		if !u.direct(req) {
			t.Fatalf("%s: the request does not take the direct path", c.name)
		}
		resp, err := u.RoundTrip(req)
		if (err != nil) != c.fails {
			t.Fatalf("%s: error %v, want failure %v", c.name, err, c.fails)
		}
		if resp != nil {
			resp.Body.Close()
		}
		if !body.closed.Load() {
			t.Errorf("%s: the request's body was not closed", c.name)
		}
	}
}

func TestUpstreamBodyNotReadAgain(t *testing.T) {
	// The resend of TestUpstreamBodyResent when the body cannot be read
	// again: the error says so and wraps GetBody's.
	url, _ := rawUpstream(t, closesAsNextComes(t, func(c net.Conn, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	}))
	u := newUpstreamTransport()
	defer u.CloseIdleConnections()
	gone := errors.New("the body is gone")
	for i := range 2 {
		req := keyedPost(t, url, "data")
		req.GetBody = func() (io.ReadCloser, error) { return nil, gone }
		resp, err := u.RoundTrip(req)
		if i == 0 {
			if err != nil {
				t.Fatalf("POST 1: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			continue
		}
		if !errors.Is(err, gone) || !strings.Contains(err.Error(), "could not be read again") {
			t.Errorf("POST 2 on the closed connection: error %v, want GetBody's, said", err)
		}
	}
}
