package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// pattern is n bytes that tell where in a body they are.
func pattern(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%08d,", i)
	}
	return b.Bytes()[:n]
}

func TestFrontRelaysLongBodies(t *testing.T) {
	// Bodies longer than the front end's buffers (4 KiB), in each
	// framing, reach the client byte for byte: the reads past the
	// buffer, the chunks of every size, the odd ends.
	const n = 1<<20 + 7
	body := pattern(n)
	var chunked bytes.Buffer
	for rest, size := body, 1; len(rest) > 0; size = size*3 + 1 {
		size = min(size, len(rest), 70000)
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", size, rest[:size])
		rest = rest[size:]
	}
	chunked.WriteString("0\r\n\r\n")
	url := answersByPath(t, map[string]string{
		"/length":   fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", n, body),
		"/chunked":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked.String(),
		"/close11":  "HTTP/1.1 200 OK\r\n\r\n" + string(body),
		"/headbody": "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
	})
	fp := newFrontProxy(t, url, Route{})
	conn, br := fp.dial(t)
	for _, path := range []string{"/length", "/chunked", "/close11", "/length"} {
		io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: front\r\n\r\n")
		resp, got, _, err := readFinal(br, "GET")
		if err != nil || resp.StatusCode != 200 || got != string(body) {
			t.Fatalf("GET %s: %v, %d bytes, %v; want 200 and the upstream's %d bytes", path, resp, len(got), err, n)
		}
	}
	// A HEAD whose upstream sends a body all the same: the client gets
	// the head, and the body is not taken for the next answer.
	io.WriteString(conn, "HEAD /headbody HTTP/1.1\r\nHost: front\r\n\r\nGET /length HTTP/1.1\r\nHost: front\r\n\r\n")
	if resp, got, _, err := readFinal(br, "HEAD"); err != nil || resp.StatusCode != 200 || got != "" || resp.ContentLength != 5 {
		t.Fatalf("HEAD: %v %q, %v; want 200, Content-Length 5, no body", resp, got, err)
	}
	if resp, got, _, err := readFinal(br, "GET"); err != nil || resp.StatusCode != 200 || got != string(body) {
		t.Fatalf("GET after the HEAD: %v, %d bytes, %v; want 200 and the upstream's %d bytes", resp, len(got), err, n)
	}
}

func TestFrontSlowClientGivenUp(t *testing.T) {
	// The fault: a client that stops reading its answer (stuck, or
	// gone without a close). Past Server.ClientTimeout without a write
	// taken, the front end gives it up: the client's connection closes,
	// and so does the upstream's, whose endless stream would otherwise
	// be held open.
	upClosed := make(chan struct{}, 1)
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(t, br); !ok {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
		chunk := fmt.Sprintf("%x\r\n%s\r\n", 32<<10, strings.Repeat("x", 32<<10))
		c.SetWriteDeadline(time.Now().Add(10 * time.Second)) // a bound on the failure, not a wait
		for {
			if _, err := io.WriteString(c, chunk); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					return // the proxy never gave up
				}
				upClosed <- struct{}{}
				return
			}
		}
	})
	fp := newFrontProxyOf(t, &Server{ClientTimeout: 50 * time.Millisecond}, url, Route{})
	conn, br := fp.dial(t)
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10) // the socket's buffers fill sooner
	}
	io.WriteString(conn, "GET /stream HTTP/1.1\r\nHost: front\r\n\r\n")
	if _, err := br.Peek(1); err != nil {
		t.Fatalf("no answer: %v", err)
	}
	// The client reads no more.
	select {
	case <-upClosed:
	case <-afterBound():
		t.Fatal("the upstream's stream to a client that stopped reading was not closed")
	}
	eventually(t, "the front end still serves the stuck client's connection", func() bool { return fp.conns() == 0 })
}

func TestFrontPipelinedWhileWatched(t *testing.T) {
	// A request pipelined while the first is in flight, after the front
	// end has started watching the connection (watchAfter): the watch
	// ends on its bytes, and it is served after the first, in order.
	got := make(chan string, 4)
	release := make(chan struct{})
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			got <- req.URL.Path
			if req.URL.Path == "/slow" {
				select {
				case <-release:
				case <-afterBound():
				}
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+fmt.Sprint(len(req.URL.Path))+"\r\n\r\n"+req.URL.Path)
		}
	})
	fp := newFrontProxy(t, url, Route{})
	conn, br := fp.dial(t)
	io.WriteString(conn, "GET /slow HTTP/1.1\r\nHost: front\r\n\r\n")
	<-got
	eventually(t, "the front end does not watch the connection of a request in flight", func() bool { return !noFrontWatch() })
	io.WriteString(conn, "GET /next HTTP/1.1\r\nHost: front\r\n\r\n")
	eventually(t, "the watch did not end on the pipelined request", noFrontWatch)
	close(release)
	for _, want := range []string{"/slow", "/next"} {
		resp, body, _, err := readFinal(br, "GET")
		if err != nil || resp.StatusCode != 200 || body != want {
			t.Fatalf("got %v %q, %v; want 200 %s", resp, body, err, want)
		}
	}
	if p := <-got; p != "/next" {
		t.Errorf("the upstream got %s, want /next", p)
	}
}

// noFrontWatch reports whether no goroutine watches a front-end client
// connection.
func noFrontWatch() bool {
	buf := make([]byte, 1<<20)
	return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*frontConn).watch")
}

func TestFrontEndlessChunkLinesRefused(t *testing.T) {
	// The fault: an upstream (broken, or hostile) that sends a chunk-size
	// line, the line after a chunk, or a trailer that never ends. The
	// front end must not keep what it reads of it without bound (it
	// would run out of memory): as net/http, it refuses a chunk line past
	// 4 KiB and a trailer past 4 KiB, cutting the answer and closing the
	// upstream's connection, which the upstream sees long before it has
	// sent its 64 MiB.
	const total = 64 << 20
	for _, c := range []struct{ name, start, fill string }{
		{"chunk-size line", "", "a"},
		{"chunk extension", "5;", "a"},
		{"after a chunk", "5\r\nhello", "x"},
		{"trailer line", "0\r\nX-Long: ", "a"},
		{"trailer lines", "0\r\n", "X: a\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sent := make(chan int, 1)
			url, _ := rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
				if _, ok := readRequest(t, br); !ok {
					return
				}
				io.WriteString(conn, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"+c.start)
				fill := strings.Repeat(c.fill, (32<<10)/len(c.fill))
				conn.SetWriteDeadline(time.Now().Add(10 * time.Second)) // a bound on the failure, not a wait
				n := 0
				for n < total {
					m, err := io.WriteString(conn, fill)
					n += m
					if err != nil {
						break
					}
				}
				sent <- n
			})
			fp := newFrontProxy(t, url, Route{})
			conn, br := fp.dial(t)
			io.WriteString(conn, "GET /endless HTTP/1.1\r\nHost: front\r\n\r\n")
			if resp, body, _, err := readFinal(br, "GET"); err == nil {
				t.Errorf("the client got %v with %d bytes, want a cut", resp.Status, len(body))
			}
			if n := <-sent; n >= total {
				t.Errorf("the upstream sent all its %d bytes: the front end read them all", n)
			}
		})
	}
}
