package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

func TestFrontStalePooledConn(t *testing.T) {
	// The fault: the upstream closes a keep-alive connection the proxy
	// keeps in its pool: while it is idle (the upstream's idle timeout),
	// or as the next request reaches it (the two cross on the wire), by
	// a close or a reset. The request is sent again on a new connection,
	// as http.Transport does, without counting an attempt: the upstream
	// sees Attempt-Count: 1 on it, and the client gets its answer. A new
	// connection that fails the same way is an attempt that failed: the
	// retry says Attempt-Count: 2.
	for _, c := range []struct {
		name string
		// first is what the upstream does on its first connection after
		// answering the first request: "close" it at once, or read the
		// next request and "drop" it (close) or "reset" it.
		first string
		// want is what the upstream sees: the connection (from 1) and
		// Attempt-Count of each request.
		want []string
	}{
		{"closed while idle", "close", []string{"conn 1 attempt 1", "conn 2 attempt 1"}},
		{"closed as the request came", "drop", []string{"conn 1 attempt 1", "conn 1 attempt 1", "conn 2 attempt 1"}},
		{"reset as the request came", "reset", []string{"conn 1 attempt 1", "conn 1 attempt 1", "conn 2 attempt 1"}},
		{"a new connection dropped", "fresh", []string{"conn 1 attempt 1", "conn 2 attempt 1", "conn 3 attempt 2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var conns atomic.Int32
			seen := make(chan string, 8)
			firstDone := make(chan struct{})
			url, _ := rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
				n := conns.Add(1)
				for i := 0; ; i++ {
					req, ok := readRequest(t, br)
					if !ok {
						return
					}
					seen <- fmt.Sprintf("conn %d attempt %s", n, req.Header.Get("Attempt-Count"))
					switch {
					case n == 1 && i == 1 && c.first == "reset":
						conn.(*net.TCPConn).SetLinger(0)
						return
					case n == 1 && i == 1, n == 2 && c.first == "fresh":
						return // closed without an answer
					}
					io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
					if n == 1 && (c.first == "close" || c.first == "fresh") {
						close(firstDone)
						return // closed while the proxy keeps it idle
					}
				}
			})
			fp := newFrontProxy(t, url, Route{})
			conn, br := fp.dial(t)
			for i := range 2 {
				io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: front\r\n\r\n")
				resp, body, _, err := readFinal(br, "GET")
				if err != nil || resp.StatusCode != 200 || body != "ok" {
					t.Fatalf("request %d: %v %q, %v; want 200 ok", i+1, resp, body, err)
				}
				if i == 0 && (c.first == "close" || c.first == "fresh") {
					<-firstDone
				}
			}
			var got []string
			for len(seen) > 0 {
				got = append(got, <-seen)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("the upstream saw %q, want %q", got, c.want)
			}
		})
	}
}

func TestFrontUpstreamConnPooledBeforeAnswerEnds(t *testing.T) {
	// An upstream connection whose answer was read whole is back in the
	// pool by the time the client has the answer's last byte: the
	// client's next request, on any connection, finds it there, and a
	// CloseIdleConnections after the answer (Shutdown, a test's cleanup)
	// closes it. Before, it went back after the last write to the client,
	// and a close of the idle connections at that moment missed it, which
	// left it open for good.
	url := answersByPath(t, map[string]string{
		"/length": "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"/head":   "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
		"/chunk":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	})
	fp := newFrontProxy(t, url, Route{})
	u := fp.s.base.(*upstreamTransport)
	addr := strings.TrimPrefix(url, "http://")
	conn, br := fp.dial(t)
	for i := range 3000 {
		method, path := "GET", []string{"/length", "/head", "/chunk"}[i%3]
		if path == "/head" {
			method = "HEAD"
		}
		io.WriteString(conn, method+" "+path+" HTTP/1.1\r\nHost: front\r\n\r\n")
		if resp, _, _, err := readFinal(br, method); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s %s: %v, %v", method, path, resp, err)
		}
		u.mu.Lock()
		idle := len(u.idle[addr])
		u.mu.Unlock()
		if idle != 1 {
			t.Fatalf("request %d (%s %s): %d idle upstream connections once the client had the answer, want 1", i+1, method, path, idle)
		}
	}
}
