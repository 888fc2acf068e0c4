package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// recordingUpstream is a raw upstream that reports what it reads of each
// request (method, target, Host, the X field and the body) and answers
// each 200 "ok".
func recordingUpstream(t *testing.T) (url string, seen <-chan string) {
	t.Helper()
	got := make(chan string, 64)
	url, _ = rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				got <- fmt.Sprintf("%s %s cut: %v", req.Method, req.RequestURI, err)
				return
			}
			got <- fmt.Sprintf("%s %s host=%q x=%q body=%q", req.Method, req.RequestURI, req.Host, req.Header.Values("X"), body)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	return url, got
}

// netHTTPProxy serves the proxy of one route to upstream through net/http
// alone (yaoki proxy --net-http), for the front end to be compared with.
func netHTTPProxy(t *testing.T, upstream string) string {
	t.Helper()
	up, err := neturl.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	base := newUpstreamTransport()
	t.Cleanup(base.CloseIdleConnections)
	s := &Server{base: base, buffers: &bufferPool{}, stderr: io.Discard, NetHTTPOnly: true}
	rs, err := s.build(&Config{Routes: []*Route{{Name: "--upstream", Upstream: up}}})
	if err != nil {
		t.Fatal(err)
	}
	s.routes.Store(rs)
	t.Cleanup(rs.close)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// conversation writes msg on a new connection to addr and reads answers
// until the connection ends: each answer's status, or how the reading
// ended when it was not a clean end.
func conversation(t *testing.T, addr, msg string) []string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on the failure, not a wait
	io.WriteString(c, msg)
	br := bufio.NewReader(c)
	var got []string
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if err != io.EOF && err != io.ErrUnexpectedEOF && !strings.Contains(err.Error(), "connection reset") {
				got = append(got, "read: "+err.Error())
			}
			return got
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			got = append(got, fmt.Sprintf("%d, body cut: %v", resp.StatusCode, err))
			return got
		}
		got = append(got, fmt.Sprintf("%d %q", resp.StatusCode, body[:min(len(body), 2)]))
	}
}

func drain(seen <-chan string) []string {
	var got []string
	for len(seen) > 0 {
		got = append(got, <-seen)
	}
	return got
}

func TestFrontSmuggleShapesHandedOver(t *testing.T) {
	// The fault: a request whose framing or head is ambiguous (the shapes
	// of request smuggling, and of a head one parser reads otherwise than
	// another), alone on a connection or after a plain GET the front end
	// serves. The front end must never serve one itself: it hands the
	// connection over, and what the client gets and the upstream sees is
	// what they get and see through net/http alone. Each conversation
	// ends with a GET that asks to close, so that a connection kept open
	// ends without a wait.
	const end = "GET /end HTTP/1.1\r\nHost: front\r\nConnection: close\r\n\r\n"
	shapes := map[string]string{
		"Content-Length and chunked": "GET /cl-te HTTP/1.1\r\nHost: front\r\nContent-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: front\r\n\r\n",
		"chunked GET":                "GET /te HTTP/1.1\r\nHost: front\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"GET with a body":            "GET /cl HTTP/1.1\r\nHost: front\r\nContent-Length: 5\r\n\r\nhello",
		"Transfer-Encoding, space":   "GET /te-space HTTP/1.1\r\nHost: front\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
		"Transfer-Encoding, tab":     "GET /te-tab HTTP/1.1\r\nHost: front\r\nTransfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n",
		"obs-fold":                   "GET /fold HTTP/1.1\r\nHost: front\r\nX: a\r\n b\r\n\r\n",
		"obs-fold on Host":           "GET /fold-host HTTP/1.1\r\nHost: front\r\n .evil\r\n\r\n",
		"bare LF":                    "GET /lf HTTP/1.1\nHost: front\n\n",
		"bare LF in a field":         "GET /lf-field HTTP/1.1\r\nHost: front\nX: y\r\n\r\n",
		"bare CR in a field":         "GET /cr HTTP/1.1\r\nHost: front\r\nX: a\rb\r\n\r\n",
		"NUL in a field":             "GET /nul HTTP/1.1\r\nHost: front\r\nX: a\x00b\r\n\r\n",
		"NUL in the target":          "GET /nul\x00x HTTP/1.1\r\nHost: front\r\n\r\n",
		"two Hosts":                  "GET /hosts HTTP/1.1\r\nHost: front\r\nHost: evil\r\n\r\n",
		"no Host":                    "GET /nohost HTTP/1.1\r\n\r\n",
		"Host with a space":          "GET /hostspace HTTP/1.1\r\nHost: fr ont\r\n\r\n",
		"Host with user info":        "GET /hostuser HTTP/1.1\r\nHost: a@front\r\n\r\n",
		"absolute form":              "GET http://evil/abs HTTP/1.1\r\nHost: front\r\n\r\n",
		"asterisk form":              "GET * HTTP/1.1\r\nHost: front\r\n\r\n",
		"space in the target":        "GET /a b HTTP/1.1\r\nHost: front\r\n\r\n",
		"tab in the target":          "GET /a\tb HTTP/1.1\r\nHost: front\r\n\r\n",
		"two spaces":                 "GET  /two HTTP/1.1\r\nHost: front\r\n\r\n",
		"space at the line's end":    "GET /sp HTTP/1.1 \r\nHost: front\r\n\r\n",
		"dot segment":                "GET /a/../b HTTP/1.1\r\nHost: front\r\n\r\n",
		"encoded dot segment":        "GET /a/%2e%2e/b HTTP/1.1\r\nHost: front\r\n\r\n",
		"backslash dot segment":      "GET /a\\..\\b HTTP/1.1\r\nHost: front\r\n\r\n",
		"leading empty line":         "\r\nGET /lead HTTP/1.1\r\nHost: front\r\n\r\n",
		"HTTP/1.0":                   "GET /ten HTTP/1.0\r\nHost: front\r\n\r\n",
		"lower-case method":          "get /lower HTTP/1.1\r\nHost: front\r\n\r\n",
		"name not a token":           "GET /name HTTP/1.1\r\nHost: front\r\nX(y): 1\r\n\r\n",
		"space before the colon":     "GET /colon HTTP/1.1\r\nHost: front\r\nX : 1\r\n\r\n",
		"Connection naming a field":  "GET /conn HTTP/1.1\r\nHost: front\r\nConnection: X\r\nX: secret\r\n\r\n",
		"Expect":                     "GET /expect HTTP/1.1\r\nHost: front\r\nExpect: 100-continue\r\n\r\n",
		"Upgrade":                    "GET /upgrade HTTP/1.1\r\nHost: front\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
		"a head past the buffer":     "GET /long HTTP/1.1\r\nHost: front\r\nX: " + strings.Repeat("a", 5000) + "\r\n\r\n",
	}
	url, seen := recordingUpstream(t)
	fp := newFrontProxy(t, url, Route{})
	netAddr := netHTTPProxy(t, url)
	for name, shape := range shapes {
		for _, prefix := range []string{"", "GET /first HTTP/1.1\r\nHost: front\r\n\r\n"} {
			msg := prefix + shape + end
			handed := fp.handed.Load()
			// The upstream has seen every request before its answer came.
			frontGot := conversation(t, fp.addr, msg)
			frontUp := drain(seen)
			netGot := conversation(t, netAddr, msg)
			netUp := drain(seen)
			after := ""
			if prefix != "" {
				after = ", after a plain GET"
			}
			if !slices.Equal(frontGot, netGot) || !slices.Equal(frontUp, netUp) {
				t.Errorf("%s%s: through the front end the client got %q, the upstream saw %q; through net/http alone %q and %q",
					name, after, frontGot, frontUp, netGot, netUp)
			}
			if n := fp.handed.Load() - handed; n != 1 {
				t.Errorf("%s%s: %d connections handed over, want 1", name, after, n)
			}
		}
	}
}
