package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	neturl "net/url"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

func TestProxyContentTypeRelayed(t *testing.T) {
	// An upstream answer without Content-Type reaches the client without
	// one (net/http's server would add one guessed from the body, as
	// "text/html; charset=utf-8" here); one with Content-Type keeps it.
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			typ := ""
			if req.URL.Path == "/json" {
				typ = "Content-Type: application/json\r\n"
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\n"+typ+"Content-Length: 15\r\n\r\n<html>hi</html>")
		}
	})
	front := proxyFront(t, url)
	for path, want := range map[string][]string{"/none": nil, "/json": {"application/json"}} {
		resp, err := front.Client().Get(front.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := resp.Header["Content-Type"]; !slices.Equal(got, want) || string(body) != "<html>hi</html>" {
			t.Errorf("GET %s: Content-Type %q, body %q; want %q and the upstream's body", path, got, body, want)
		}
	}
}

func TestProxy1xxRelayed(t *testing.T) {
	// A 1xx answer (a 103 Early Hints) is relayed as it comes, with the
	// rules of the final answer: its hop-by-hop fields (RFC 9110 §7.6.1),
	// and those its Connection names, stay with the upstream; and the
	// final answer after it, without Content-Type, reaches the client
	// without one (§7.7), as TestProxyContentTypeRelayed shows without a
	// 1xx.
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(t, br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n"+
				"Connection: X-Hop\r\nX-Hop: internal\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\nUpgrade: h2c\r\n\r\n"+
				"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n<html>hi</html>")
		}
	})
	front := proxyFront(t, url)
	var hints []textproto.MIMEHeader
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		if code == http.StatusEarlyHints {
			hints = append(hints, h)
		}
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", front.URL+"/", nil)
	resp, err := front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(hints) != 1 {
		t.Fatalf("the client got %d 103 answers, want 1", len(hints))
	}
	if got := hints[0].Get("Link"); got != "</style.css>; rel=preload" {
		t.Errorf("103: Link %q, want the upstream's", got)
	}
	for _, name := range []string{"Connection", "X-Hop", "Keep-Alive", "Proxy-Connection", "Upgrade"} {
		if v, ok := hints[0][name]; ok {
			t.Errorf("103: %s: %q relayed, want it dropped (hop-by-hop)", name, v)
		}
	}
	if got, ok := resp.Header["Content-Type"]; ok || string(body) != "<html>hi</html>" {
		t.Errorf("200 after the 103: Content-Type %q, body %q; want no Content-Type and the upstream's body", got, body)
	}
}

func TestProxyRetryAfterStalledBody(t *testing.T) {
	// The fault: the upstream answers 502 with a Content-Length it does
	// not send, and holds the connection open (an overloaded upstream
	// whose error page stalls). The answer is thrown away for a retry;
	// reading the rest of its body, to keep the connection, must not hold
	// the retry back for as long as the upstream stalls: the client gets
	// the second attempt's 200.
	stalled := make(chan struct{})
	defer close(stalled)
	var n atomic.Int32
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(t, br); !ok {
				return
			}
			if n.Add(1) == 1 {
				io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 100\r\n\r\nbusy")
				<-stalled
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	front := proxyFront(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a bound on the failure, not a wait
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", front.URL+"/", nil)
	resp, err := front.Client().Do(req)
	if err != nil {
		t.Fatalf("GET: %v after %d attempt(s); want the second attempt's 200", err, n.Load())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" || n.Load() != 2 {
		t.Errorf("got %d %q after %d attempts, want 200 ok after 2", resp.StatusCode, body, n.Load())
	}
}

// proxyFront serves the proxy of one --upstream route to upstream on a
// loopback net/http server, as yaoki proxy does; both close when the test
// ends.
func proxyFront(t *testing.T, upstream string) *httptest.Server {
	t.Helper()
	return routeFront(t, upstream, Route{})
}

// routeFront is proxyFront for the route rc, its name and upstream set.
func routeFront(t *testing.T, upstream string, rc Route) *httptest.Server {
	t.Helper()
	up, err := neturl.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rc.Name, rc.Upstream = "--upstream", up
	base := newUpstreamTransport()
	t.Cleanup(base.CloseIdleConnections) // after the routes close (cleanups run last first)
	s := &Server{base: base, buffers: &bufferPool{}}
	rs, err := s.build(&Config{Routes: []*Route{&rc}})
	if err != nil {
		t.Fatal(err)
	}
	s.routes.Store(rs)
	t.Cleanup(rs.close)
	front := httptest.NewUnstartedServer(s)
	front.Listener = s.Listener(front.Listener)
	front.Start()
	t.Cleanup(func() {
		front.Client().CloseIdleConnections()
		front.Close()
		waitFront(t, s)
	})
	return front
}

// waitFront waits for the connections of s's front end to end (httptest's
// Close waits for those of net/http's server only), so that no upstream
// connection goes back to the pool after the test closed it.
func waitFront(t *testing.T, s *Server) {
	t.Helper()
	f := s.front.Load()
	if f == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a bound on a failure, not a wait
	defer cancel()
	if _, err := f.wait(ctx); err != nil {
		t.Errorf("the front end's connections did not end: %v", err)
	}
}

func TestProxyUpstreamPath(t *testing.T) {
	// The request's path is added to the upstream's, escapes kept, and
	// its query passed on.
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(req.RequestURI))+"\r\n\r\n"+req.RequestURI)
		}
	})
	front := proxyFront(t, url+"/v2")
	for _, c := range []struct{ path, want string }{
		{"/x?a=1&b=%20", "/v2/x?a=1&b=%20"},
		{"/", "/v2/"},
		{"/a%2Fb/c", "/v2/a%2Fb/c"},
	} {
		resp, err := front.Client().Get(front.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != c.want {
			t.Errorf("GET %s: the upstream saw %s, want %s", c.path, got, c.want)
		}
	}
}

func TestProxy1xxNotToHTTP10(t *testing.T) {
	// The fault: an HTTP/1.0 client (nginx proxying with its default
	// proxy_http_version 1.0, ab, an old library) asks through the proxy,
	// and the upstream sends 103 Early Hints and 100 Continue before its
	// 200. HTTP/1.0 has no 1xx answers: a server must not send one to an
	// HTTP/1.0 client (RFC 9110 §15.2), which reads the first status line
	// it gets as the answer. The client gets the 200 first.
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(t, br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"+
				"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	front := proxyFront(t, url)
	resp, body := rawExchange(t, front.URL, "GET /x HTTP/1.0\r\nHost: front\r\n\r\n")
	if resp.StatusCode != 200 || body != "ok" {
		t.Errorf("the HTTP/1.0 client read %s %q first, want the 200 ok", resp.Status, body)
	}
}
